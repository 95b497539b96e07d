"""Whether each played action was optimal, where the environment says (``training.rl.action_labels``).

With the setting on (the default), the loop labels each update's played steps before the
method computes its signals: every episode's task is reset on an environment of its game and
asked ``action_labels`` (``envs.action_labels``: exact on TextWorldExpress coin, from its map;
elsewhere the gold solver's next action on the steps that still follow the gold sequence, a
proxy). Column ``LABEL_COLUMN`` of the batch's training table (``RolloutBatch.table``; the
played table the run keeps is left as the rollout wrote it) then holds 1.0 (optimal), 0.0 (not
optimal) or NaN (unlabelled). A method reads it for its own mechanism figures (SEED: its
gate on optimal against suboptimal actions, ``methods.seed``); the loop logs how often the
policy played an optimal action (``labels/...``), for every method alike.

One environment per game and update, closed before the next rollout (a MiniWoB++ window
held across the run would count against the rollouts' browser limit); a game whose
environment labels nothing (no gold sequence) is asked once and then skipped, and so is one
whose environment fails while labelling (a warning names it: the labels are a diagnostic, and
the run goes on without them). Batches played inside a world model are not labelled.
"""

from __future__ import annotations

import logging
import math
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import pandas as pd

from hindsight.envs.action_labels import label_episode
from hindsight.rollout.tasks import TaskRef
from hindsight.training.batch import RolloutBatch

logger = logging.getLogger(__name__)

LABEL_COLUMN = "action_optimal"
"""The step rows' label: 1.0 optimal, 0.0 not, NaN unlabelled."""
_STEP_KEY = ["episode_id", "step"]


class ActionLabeller:
    """Labels played step tables, one environment per game (``env_factory`` None: labels nothing)."""

    def __init__(self, env_factory: Callable | None) -> None:
        self.env_factory = env_factory
        self.envs: dict[str, Any] = {}
        self.unlabelled_games: set[str] = set()

    def labels(self, played: pd.DataFrame, tasks: Sequence[TaskRef]) -> pd.Series:
        """``LABEL_COLUMN`` of every row of ``played``, aligned with its index."""
        values = pd.Series(math.nan, index=played.index, dtype=float)
        by_group = {task.group_id: task for task in tasks}
        for _, rows in played.groupby("episode_id", sort=False):
            task = by_group.get(rows["group_id"].iloc[0])
            game = repr(task.spec) if task is not None else None
            if task is None or game in self.unlabelled_games:
                continue
            rows = rows.sort_values("step")
            actions = [str(action) for action in rows["action"]]
            try:
                if game not in self.envs:
                    self.envs[game] = self.env_factory(task.spec)
                found = label_episode(self.envs[game], task.seed, task.split, actions)
            except Exception as error:  # a diagnostic: the run goes on, unlabelled on this game
                logger.warning("Action labels: %s failed (%s: %s); its played actions stay unlabelled for the rest of the run",
                               task.spec.game, type(error).__name__, error)
                found = None
            if found is None:
                self.unlabelled_games.add(game)
                continue
            for position, (index, action) in enumerate(zip(rows.index, actions)):
                optimal = found.is_optimal(position, action)
                if optimal is not None:
                    values[index] = float(optimal)
        return values

    def annotate(self, batch: RolloutBatch, tasks: Sequence[TaskRef]) -> None:
        """``LABEL_COLUMN`` on ``batch.table`` (every played step labelled, matched to the
        table's rows by episode and step), and ``labels/...`` over every played step and the
        seconds it took (``time/labels_s``, also inside the rollout phase's) in
        ``batch.metrics``; nothing when off or simulated."""
        if self.env_factory is None or batch.simulated or batch.played.empty:
            return
        played, started = batch.played, time.perf_counter()
        try:
            labels = self.labels(played, tasks)
        finally:
            self.close()
        batch.metrics["time/labels_s"] = time.perf_counter() - started
        keyed = pd.Series(labels.to_numpy(), index=pd.MultiIndex.from_frame(played[_STEP_KEY]))
        keyed = keyed[~keyed.index.duplicated()]
        table_keys = pd.MultiIndex.from_frame(batch.table[_STEP_KEY])
        batch.table = batch.table.assign(**{LABEL_COLUMN: keyed.reindex(table_keys).to_numpy()})
        labelled = labels.dropna()
        batch.metrics["labels/labelled_step_share"] = len(labelled) / len(played)
        if len(labelled):
            batch.metrics["labels/optimal_share"] = float(labelled.mean())

    def close(self) -> None:
        for env in self.envs.values():
            env.close()
        self.envs.clear()


@contextmanager
def action_labeller(env_factory: Callable, enabled: bool) -> Iterator[ActionLabeller]:
    """The run's labeller (one that labels nothing when not ``enabled``), its environments
    closed however the run ends."""
    labeller = ActionLabeller(env_factory if enabled else None)
    try:
        yield labeller
    finally:
        labeller.close()
