"""ScienceWorld (PyPI ``scienceworld``) behind the ``TextEnvironment`` interface.

Tasks. ``spec.game`` is one of the 30 ScienceWorld tasks, by name ("boil",
"find-animal", ...) or id ("1-1"). ``spec.params`` takes one key, ``simplification``
(default ``"easy"``): a comma-separated string or a list of ScienceWorld simplifications
(``easy`` or any of ``SIMPLIFICATIONS``). Seeds are *variation indices*: ``seeds(split,
...)`` hands out the task's own train / dev / test variations, and ``reset`` refuses a
variation of another split.

Score and success. ScienceWorld scores progress from 0 to 100; ``info["score"]`` is that
divided by 100 (a failed task, which ScienceWorld scores below 0, reports 0 with
``info["lost"]=True``). The task is won when the score reaches 100, and lost when the score
drops below 0 or the simulator declares the episode over without full score.

Invalid actions are sent: ScienceWorld's parser accepts many phrasings beyond its list of
valid action-object combinations (which has hundreds of entries), so this adapter lets the
simulator judge. Its answer "No known action matches that input." marks the step
``action_valid=False``; the state did not change, so the anchor observation stays. When an
action names an ambiguous object, ScienceWorld asks "Ambiguous request: Please enter the
number for the action you intended" and waits for a number: that step is valid, and its
valid actions are the offered numbers ("0", "1", ...). The gold sequences answer such
questions with "0" themselves, so the adapter never answers on the agent's behalf.

Cost. One ScienceWorld JVM takes up to a GB when started by the package's own class, one
per instance. This adapter shares one JVM per process between all ScienceWorld
environments (``java_backend``); load and step times are in docs/measurements.md.

Faults. As for TextWorldExpress: a killed JVM raises ``EnvironmentCrashedError`` on the next
call, a call past ``spec.step_timeout_s`` gets the JVM killed and raises
``EnvironmentTimeoutError``, and ``restart()`` connects to a fresh JVM (about 2-3 s with the
task loaded again, ``benchmarks/reliability_envs.py``). A step makes several simulator calls
(step, score, completion, valid actions, inventory); the timeout bounds each one. The
first load of a task can take over a second on a busy machine: keep the timeout generous.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from scienceworld.constants import ID2TASK, JAR_PATH
from scienceworld.utils import infer_task

from hindsight.envs.adapter import JavaObjectAdapter, seed_window
from hindsight.envs.base import SPLITS, EnvironmentConfigError, EnvironmentSpec, StepResult, check_split
from hindsight.envs.tracker import make_info
from hindsight.envs.java_backend import JavaBackend, shared_backend
from hindsight.envs.reward import RewardConfig

logger = logging.getLogger(__name__)

ENV_NAME = "scienceworld"
JAVA_CLASS = "scienceworld.runtime.pythonapi.PythonInterface"
TASK_NAMES: tuple[str, ...] = tuple(ID2TASK.values())
SIMPLIFICATIONS = (
    "easy",
    "teleportAction",
    "selfWateringFlowerPots",
    "openContainers",
    "openDoors",
    "noElectricalAction",
)
ADAPTER_PARAMETERS = ("simplification",)
INVALID_ACTION_PREFIX = "no known action matches that input"
AMBIGUOUS_PREFIX = "ambiguous request"
_AMBIGUOUS_OPTION = re.compile(r"(?m)^\s*(\d+):")


def resolve_task_name(game: str) -> str:
    """The canonical ScienceWorld task name for a name or id, or ``EnvironmentConfigError``."""
    name = infer_task(str(game))
    if name not in TASK_NAMES:
        raise EnvironmentConfigError(
            f"Unknown ScienceWorld task {game!r}; the 30 tasks are: {', '.join(TASK_NAMES)}."
        )
    return name


def resolve_simplification(task: str, params: dict[str, Any]) -> str:
    """Validate ``params`` (only ``simplification``) and return ScienceWorld's "a,b" string."""
    unknown = [key for key in params if key not in ADAPTER_PARAMETERS]
    if unknown:
        raise EnvironmentConfigError(
            f"Unknown parameter(s) {unknown} for ScienceWorld task {task!r}; "
            f"accepted: {', '.join(ADAPTER_PARAMETERS)}."
        )
    value = params.get("simplification", "easy")
    names = value.split(",") if isinstance(value, str) else list(value)
    names = [str(name).strip() for name in names if str(name).strip()]
    bad = [name for name in names if name not in SIMPLIFICATIONS]
    if bad:
        raise EnvironmentConfigError(
            f"Unknown ScienceWorld simplification(s) {bad} for task {task!r}; "
            f"accepted: {', '.join(SIMPLIFICATIONS)}."
        )
    electrical = "power-component" in task or "conductivity" in task
    if electrical and "noElectricalAction" in names:
        raise EnvironmentConfigError(
            f"ScienceWorld task {task!r} needs electrical actions; remove 'noElectricalAction' "
            "from its simplification."
        )
    return ",".join(names)


def is_invalid_action_reply(observation: str) -> bool:
    """Whether ScienceWorld's reply says it did not understand the action."""
    return observation.strip().lower().startswith(INVALID_ACTION_PREFIX)


def ambiguous_options(observation: str) -> list[str] | None:
    """The numbers offered by an "Ambiguous request" reply, or None for any other reply."""
    if not observation.strip().lower().startswith(AMBIGUOUS_PREFIX):
        return None
    return _AMBIGUOUS_OPTION.findall(observation)


class ScienceWorldEnvironment(JavaObjectAdapter):
    """One ScienceWorld task (see the module docstring).

    Args:
        spec: ``env="scienceworld"``, the task name, ``{"simplification": ...}``, ``max_steps``.
        reward: Step reward settings.
        backend: The JVM to run on (default: the process-wide shared one).
    """

    display_name = "ScienceWorld"
    java_class = JAVA_CLASS

    def __init__(
        self, spec: EnvironmentSpec, reward: RewardConfig | None = None, backend: JavaBackend | None = None
    ) -> None:
        self.task_name = resolve_task_name(spec.game)
        self.simplification = resolve_simplification(self.task_name, dict(spec.params))
        self._variations: dict[str, list[int]] = {}
        super().__init__(spec, reward, backend or shared_backend(JAR_PATH, self.display_name))

    def _on_connect(self) -> None:
        self._max_variations = int(self._call("getTaskMaxVariations", self.task_name))

    def _load(self, variation: int, gold: bool) -> None:
        self._call("load", self.task_name, int(variation), self.simplification, gold)
        if not self._variations:
            for split in SPLITS:
                getter = "getVariations" + split.capitalize()
                self._variations[split] = self._call_list(getter, int)

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        """``count`` variation indices of split ``split`` from position ``offset``."""
        check_split(split)
        if not self._variations:
            self._load(0, gold=False)
        return seed_window(
            self._variations[split], count, offset, f"ScienceWorld task {self.task_name!r}", f"{split} variations"
        )

    def fold_size(self, split: str) -> int:
        """How many variations split ``split`` of the task holds."""
        check_split(split)
        if not self._variations:
            self._load(0, gold=False)
        return len(self._variations[split])

    def reset(self, seed: int, split: str = "train") -> tuple[str, dict[str, Any]]:
        """Load variation ``seed`` (of split ``split``); return (observation, info)."""
        check_split(split)
        if not 0 <= int(seed) < self._max_variations:
            raise EnvironmentConfigError(
                f"ScienceWorld task {self.task_name!r} has variations 0-{self._max_variations - 1}; got {seed}."
            )
        self._episode.stop()
        if self._variations:
            self._check_split(int(seed), split)
        self._load(int(seed), gold=True)
        self._check_split(int(seed), split)
        observation = str(self._call("step", "look around")).strip()
        self._task = str(self._call("getTaskDescription")).strip()
        self._options: list[str] | None = None
        self._won = False
        return self._start_episode(observation)

    def _check_split(self, variation: int, split: str) -> None:
        if variation not in self._variations[split]:
            raise EnvironmentConfigError(
                f"Variation {variation} of ScienceWorld task {self.task_name!r} is not in its "
                f"{split} split (use seeds({split!r}, ...))."
            )

    def step(self, action: str) -> StepResult:
        """Send ``action``; ScienceWorld's own reply decides whether it was valid."""
        self._episode.check_can_step()
        observation = str(self._call("step", str(action))).strip()
        action_valid = not is_invalid_action_reply(observation)
        if action_valid:
            self._anchor = observation
            self._options = ambiguous_options(observation)
        was_won = self._won
        info = self._info(action_valid)
        reward, terminated, truncated = self._episode.record(
            info["won"] and not was_won, info["lost"], action_valid
        )
        info["moves"] = self._episode.steps
        return observation, reward, terminated, truncated, info

    def _info(self, action_valid: bool) -> dict[str, Any]:
        """Ask the simulator for score, completion, valid actions and inventory."""
        raw_score = float(self._call("getScore"))
        completed = bool(self._call("getCompleted"))
        self._won = round(100 * raw_score) >= 100
        lost = raw_score < 0 or (completed and not self._won)
        if self._options is not None:
            valid_actions = list(self._options)
        else:
            valid_actions = sorted(set(self._call_list("getValidActionObjectCombinations")))
        return make_info(
            task=self._task,
            task_type=self.task_name,
            valid_actions=valid_actions,
            anchor_observation=self._anchor,
            won=self._won,
            action_valid=action_valid,
            score=max(0.0, min(1.0, raw_score)),
            inventory=str(self._call("freeActionInventory")).strip(),
            lost=lost,
            moves=self._episode.steps,
        )

    def _expert_actions(self) -> list[str]:
        return self._call_list("getGoldActionSequence")
