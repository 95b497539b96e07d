"""Expert trajectories as the environment: EMPO's semi-online rollout (docs/fidelity.md, EMPO).

``ExpertReplayEnvironment`` is a ``TextEnvironment`` whose "simulator" is a set of recorded
expert trajectories (any source of the ingested ``expert_trajectories`` / ``trajectories``
table: TextWorldExpress gold episodes, or agent-SFT conversation files with no environment
installed). Task instance ``seed`` of fold ``split`` is the ``seed``-th trajectory of that
fold (``ReplaySet``). At step t the policy sees the expert's state s*_t (the recorded
observation) with ITS OWN history, and answers an action:

- **match** (the action equals a*_t after ``normalize_action``): the next observation is
  s*_{t+1}; the row's ``source`` is "rollout" (the policy's own action in the history);
- **mismatch, patches left** (fewer than ``patch_threshold`` patches so far): the Patch
  Module replaces the policy's action in the history by the expert's action, preceded by
  the expert's thought where the trajectory has one and ``include_thought`` is set, and
  the episode goes on at s*_{t+1}; the row's ``source`` is "patched";
- **mismatch, no patch left**: the episode ends there (``terminated``, not won).

The episode is ``won`` when it reaches the end of the trajectory with every step matched.
``action_valid`` means "matched the expert" (a patched step was not accepted), so the
rollout statistics' invalid-action rate is the mismatch rate. The step reward is EMPO's
``0.1 * format_ok + 0.9 * action_score`` (``algorithms.empo_step_rewards``; format_ok:
``algorithms.empo_format_ok`` on the whole response: a response with a thought must be
``Thought: <non-empty>`` then one ``Action: <action>`` line, one without a thought must
parse to a non-empty action; ``algorithms.empo_action_score``: 1 exact, 0.5 same verb,
0.1 another verb, 0 unparsable). ``score`` is the progress so far (matched steps /
length).

How the rollout engine learns what goes into the history: ``step`` returns
``info["history_action"]`` (the text the episode's history records for this step) and
``info["source"]`` (the row's ``source``); ``rollout.live_episode.Episode.play`` uses them
when present, and sends the raw response along through ``step_with_response`` (the
format term reads it); real environments have neither hook.

GUI trajectories (MiniWoB gold episodes, ingested GUI trajectory files: every observation a
page's text view, every expert action one of the GUI grammar's, ``ExpertTrajectory.gui``) are
matched as UI-S1's released reward code matches GUI actions
(``envs.miniwob.action_match``): a click, by ref or by coordinates, matches when it lands
on the expert's target element (its box enlarged 1.2 times, or within 0.04 of its point),
typed text when one text contains the other (case aside) in the expert's field, a key when
it is the same key; 0.5 for the right action type on another target.

Text action matching (``hindsight.algorithms.rewards``): free-text actions of external sets
differ in wording, so both sides are normalised first: lower case, punctuation removed,
articles ("a", "an", "the") dropped, "on"/"into"/"onto"/"inside" read as "in", whitespace
collapsed; the action type is the first word (the verb).

What the decoder may say: where the trajectory recorded the state's valid actions (the
environments' expert episodes), those; where it did not (conversation sets carry none),
the candidates are the expert's action plus the other actions observed in the same task
type's trajectories (the trajectory's own first, then the others, up to
``max_candidates``), sorted. Constrained decoding over that list keeps a small policy's
output well formed and makes a mismatch a choice between plausible actions of the same
vocabulary, where free generation by a tiny from-scratch policy would rarely produce an
in-vocabulary action at all; with ``rollout.sampling.constrained: false`` (an LLM) the policy
generates freely and the list is only shown in the prompt.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Sequence

import pandas as pd

from hindsight.algorithms.rewards import empo_action_score, empo_format_ok, normalize_action
from hindsight.envs.base import EnvironmentConfigError, EnvironmentSpec, StepResult, TextEnvironment, check_split
from hindsight.envs.miniwob.action_match import gui_action_score, is_page_view, page_elements, read_action

REPLAY_ENV = "expert_replay"
"""``EnvironmentSpec.env`` (and the table's ``env``) of replayed episodes."""
FORMAT_WEIGHT, ACTION_WEIGHT = 0.1, 0.9
"""EMPO step reward weights (docs/fidelity.md, EMPO)."""
REQUIRED_COLUMNS = ("episode_id", "task", "task_type", "split", "step", "observation", "valid_actions", "action", "response", "won")


@dataclass(frozen=True)
class ExpertTrajectory:
    """One recorded expert episode, step by step."""

    episode_id: str
    task: str
    task_type: str
    split: str
    observations: tuple[str, ...]
    actions: tuple[str, ...]
    thoughts: tuple[str, ...]
    """The text before the ``Action:`` line of each response ("" where none)."""
    valid_actions: tuple[tuple[str, ...], ...]
    """What the decoder may choose from at each step (see the module docstring)."""
    gui: bool = False
    """A GUI trajectory (``is_gui_trajectory``): actions matched by ``envs.miniwob.action_match``."""

    def __len__(self) -> int:
        return len(self.actions)

    def action_score(self, step: int, action: str | None) -> float:
        """EMPO's action score of ``action`` against the expert's at ``step``: the GUI match
        on the expert's page for a GUI trajectory, else the text match."""
        if self.gui:
            return gui_action_score(action, self.actions[step], page_elements(self.observations[step]))
        return empo_action_score(action, self.actions[step])


def is_gui_trajectory(observations: Sequence[str], actions: Sequence[str]) -> bool:
    """Whether every observation is a GUI page view and every action one of the GUI actions."""
    return all(
        is_page_view(observation) and read_action(action, page_elements(observation))[0] is not None
        for observation, action in zip(observations, actions)
    )


def _thought(response: str, action: str) -> str:
    """The reasoning before the action in an expert response ("" when the response is the action)."""
    text = str(response or "")
    marker = text.lower().rfind("action:")
    before = text[:marker] if marker >= 0 else ""
    return " ".join(before.split()) if before.strip() and normalize_action(before) != normalize_action(action) else ""


def _as_list(value: Any) -> list[str]:
    return [str(v) for v in value] if value is not None and not isinstance(value, str) else []


def expert_trajectories(table: pd.DataFrame, *, successful_only: bool = True, max_candidates: int = 12) -> list[ExpertTrajectory]:
    """The expert trajectories of a trajectory table, ordered by episode id.

    Args:
        table: Trajectory rows (``REQUIRED_COLUMNS`` at least; other columns ignored).
        successful_only: Keep only episodes with a won step (demonstrations that failed
            are not expert behaviour).
        max_candidates: Decoder candidates of a step without recorded valid actions.

    Returns:
        One ``ExpertTrajectory`` per episode.

    Raises:
        EnvironmentConfigError: A required column is missing, or no trajectory is left.
    """
    missing = [name for name in REQUIRED_COLUMNS if name not in table.columns]
    if missing:
        raise EnvironmentConfigError(f"expert replay: the trajectory table lacks column(s) {missing}")
    ordered = table.sort_values(["episode_id", "step"], kind="stable")
    episodes = [(episode_id, rows) for episode_id, rows in ordered.groupby("episode_id", sort=True)]
    if successful_only:
        episodes = [(episode_id, rows) for episode_id, rows in episodes if rows["won"].astype(bool).any()]
    if not episodes:
        raise EnvironmentConfigError(
            f"expert replay: no {'successful ' if successful_only else ''}expert trajectory among the "
            f"{table['episode_id'].nunique()} episode(s) of the table"
        )
    observed: dict[str, list[str]] = {}  # task type -> its actions, first appearance order
    for _, rows in episodes:
        seen = observed.setdefault(str(rows["task_type"].iloc[0]), [])
        seen.extend(a for a in rows["action"].astype(str) if a not in seen)
    trajectories = []
    for episode_id, rows in episodes:
        actions = [str(a) for a in rows["action"]]
        own = list(dict.fromkeys(actions))
        others = [a for a in observed[str(rows["task_type"].iloc[0])] if a not in own]
        fallback = (own + others)[: max(max_candidates, 1)]
        valid = []
        for action, recorded in zip(actions, rows["valid_actions"]):
            choices = _as_list(recorded) or fallback
            valid.append(tuple(sorted(set(choices) | {action})))
        first = rows.iloc[0]
        trajectories.append(
            ExpertTrajectory(
                episode_id=str(episode_id), task=str(first["task"]), task_type=str(first["task_type"]),
                split=str(first["split"]), observations=tuple(str(o) for o in rows["observation"]),
                actions=tuple(actions),
                gui=is_gui_trajectory([str(o) for o in rows["observation"]], actions),
                thoughts=tuple(_thought(r, a) for r, a in zip(rows["response"].astype(str), actions)),
                valid_actions=tuple(valid),
            )
        )
    return trajectories


@dataclass
class ReplaySet:
    """Expert trajectories by fold: task instance ``seed`` of ``split`` is ``by_split[split][seed]``."""

    by_split: dict[str, list[ExpertTrajectory]] = field(default_factory=dict)

    @classmethod
    def split_off(cls, trajectories: Sequence[ExpertTrajectory], heldout_fraction: float, seed: int) -> "ReplaySet":
        """Train-fold trajectories, a ``heldout_fraction`` of them (shuffled with ``seed``,
        at least one when there are two or more) moved to the "test" fold for semi-online
        evaluation; trajectories recorded in the dev/test folds stay held out."""
        train = [t for t in trajectories if t.split == "train"]
        heldout = [t for t in trajectories if t.split != "train"]
        order = list(range(len(train)))
        random.Random(seed).shuffle(order)
        count = min(max(round(heldout_fraction * len(train)), int(heldout_fraction > 0 and len(train) > 1)), len(train) - 1)
        moved = set(order[: max(count, 0)])
        return cls(
            {
                "train": [t for i, t in enumerate(train) if i not in moved],
                "test": heldout + [t for i, t in enumerate(train) if i in moved],
            }
        )

    def spec(self, max_steps: int | None = None) -> EnvironmentSpec:
        """The spec of tasks replayed from this set (``max_steps``: longest trajectory + 1)."""
        longest = max((len(t) for ts in self.by_split.values() for t in ts), default=1)
        return EnvironmentSpec(env=REPLAY_ENV, game="expert", max_steps=max_steps or longest + 1, step_timeout_s=None)

    def trajectory(self, split: str, seed: int) -> ExpertTrajectory:
        """The ``seed``-th trajectory of ``split``."""
        check_split(split)
        fold = self.by_split.get(split, [])
        if not 0 <= seed < len(fold):
            raise EnvironmentConfigError(f"expert replay: fold {split!r} has {len(fold)} trajectories; no task {seed}")
        return fold[seed]


class ExpertReplayEnvironment(TextEnvironment):
    """One expert trajectory at a time as the environment (see the module docstring)."""

    def __init__(self, replay: ReplaySet, spec: EnvironmentSpec, *, patch_threshold: int = 2, include_thought: bool = True) -> None:
        if patch_threshold < 0:
            raise EnvironmentConfigError(f"expert replay: patch_threshold must be >= 0, got {patch_threshold}")
        self.replay, self.spec = replay, spec
        self.patch_threshold, self.include_thought = patch_threshold, include_thought
        self._trajectory: ExpertTrajectory | None = None
        self._step = self._patches = self._matched = 0

    def _info(self, **extra: Any) -> dict[str, Any]:
        trajectory = self._trajectory
        at = min(self._step, len(trajectory) - 1)
        info = {
            "task": trajectory.task,
            "task_type": trajectory.task_type,
            "valid_actions": list(trajectory.valid_actions[at]) if self._step < len(trajectory) else [],
            "anchor_observation": trajectory.observations[at],
            "won": False,
            "action_valid": True,
            "score": self._matched / len(trajectory),
            "inventory": "",
            "expert_episode_id": trajectory.episode_id,
            "patches": self._patches,
        }
        info.update(extra)
        return info

    def reset(self, seed: int, split: str = "train") -> tuple[str, dict[str, Any]]:
        self._trajectory = self.replay.trajectory(split, int(seed))
        self._step = self._patches = self._matched = 0
        return self._trajectory.observations[0], self._info()

    def step(self, action: str) -> StepResult:
        return self.step_with_response(action, action)

    def step_with_response(self, action: str, response: str) -> StepResult:
        """``step`` with the raw response the action was parsed from (its format, thought
        included, earns the format term)."""
        trajectory = self._trajectory
        if trajectory is None or self._step >= len(trajectory):
            raise EnvironmentConfigError("expert replay: step() before reset() or after the trajectory ended")
        expert = trajectory.actions[self._step]
        score = trajectory.action_score(self._step, action)
        reward = FORMAT_WEIGHT * float(empo_format_ok(response, action)) + ACTION_WEIGHT * score
        matched = score == 1.0
        if matched:
            self._matched += 1
            history_action, source = action, "rollout"
        elif self._patches < self.patch_threshold:
            self._patches += 1
            thought = trajectory.thoughts[self._step] if self.include_thought else ""
            history_action, source = (f"{thought} Action: {expert}" if thought else expert), "patched"
        else:
            # past the threshold: the trajectory ends at this state
            info = self._info(action_valid=False, history_action=action, source="rollout")
            self._step = len(trajectory)
            return trajectory.observations[-1], reward, True, False, info
        self._step += 1
        finished = self._step >= len(trajectory)
        won = finished and self._matched == len(trajectory)
        observation = trajectory.observations[-1] if finished else trajectory.observations[self._step]
        info = self._info(won=won, action_valid=matched, history_action=history_action, source=source)
        return observation, reward, finished, False, info

    def gold_actions(self) -> list[str]:
        return list(self._trajectory.actions) if self._trajectory else []

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        check_split(split)
        available = len(self.replay.by_split.get(split, []))
        return list(range(offset, min(offset + count, available)))

    def fold_size(self, split: str) -> int:
        check_split(split)
        return len(self.replay.by_split.get(split, []))

    def restart(self) -> None:
        self._trajectory = None

    def close(self) -> None:
        self._trajectory = None


def replay_env_factory(replay: ReplaySet, *, patch_threshold: int = 2, include_thought: bool = True):
    """``spec -> ExpertReplayEnvironment`` over ``replay`` (the rollout engine's ``env_factory``)."""

    def build(spec: EnvironmentSpec) -> ExpertReplayEnvironment:
        return ExpertReplayEnvironment(replay, spec, patch_threshold=patch_threshold, include_thought=include_thought)

    return build
