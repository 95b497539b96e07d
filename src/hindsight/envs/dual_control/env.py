"""The telecom dual-control domain behind the ``TextEnvironment`` interface.

Configuration: ``environment.env: dual_control``, one game ``telecom``; ``params`` may set
``slip_probability`` (default 0.3: the share of tasks whose user flips the wrong switch
once). ``reset(seed, split)`` builds task ``seed`` of fold ``split`` (``tasks``; a seed of
another fold is refused, so no test task leaks into training); the first observation is the
customer's opening line, the task text states the goal and the customer's wish.

Every step offers the same actions (``session.ACTIONS``, 22 of them); an action not among
them is a no-op step with ``action_valid=False`` (``ListedActionStep``). The episode
terminates on ``tell_user fixed`` (won iff ``session.final_check`` passes, otherwise lost)
or ``transfer_to_human`` (lost), and is truncated at ``spec.max_steps``. ``score`` is the
share of the task's starting blockers that are cleared (1.0 once won). The gold sequence is
``solver.solve``'s. Everything runs in this process in microseconds; ``restart`` and
``close`` only drop the episode.
"""

from __future__ import annotations

from typing import Any, Sequence

from hindsight.envs.adapter import EnvironmentAdapter, ListedActionStep, seed_window
from hindsight.envs.base import EnvironmentConfigError, EnvironmentSpec
from hindsight.envs.dual_control.domain import blockers
from hindsight.envs.dual_control.session import ACTIONS, TelecomSession
from hindsight.envs.dual_control.solver import solve
from hindsight.envs.dual_control.tasks import DEFAULT_SLIP_PROBABILITY, make_task, split_seeds
from hindsight.envs.reward import RewardConfig
from hindsight.envs.tracker import make_info

ENV_NAME = "dual_control"
GAMES: tuple[str, ...] = ("telecom",)
PARAMS: tuple[str, ...] = ("slip_probability",)
INVALID_ACTION_OBSERVATION = "That is not one of the available actions."


def _slip_probability(params: dict[str, Any]) -> float:
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        raise EnvironmentConfigError(
            f"Unknown parameter(s) {unknown} for dual_control game 'telecom' (environment.games[].params); "
            f"its parameters are: {', '.join(PARAMS)}."
        )
    value = params.get("slip_probability", DEFAULT_SLIP_PROBABILITY)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise EnvironmentConfigError(
            f"environment.games[].params.slip_probability must be a number in [0, 1], got {value!r}."
        )
    return float(value)


class DualControlEnvironment(ListedActionStep, EnvironmentAdapter):
    """The telecom domain (see the module docstring).

    Args:
        spec: ``env="dual_control"``, ``game="telecom"``, optional ``slip_probability``.
        reward: Step reward settings.
    """

    display_name = "dual-control telecom"
    invalid_action_observation = INVALID_ACTION_OBSERVATION

    def __init__(self, spec: EnvironmentSpec, reward: RewardConfig | None = None) -> None:
        if spec.game not in GAMES:
            raise EnvironmentConfigError(
                f"Unknown dual_control game {spec.game!r} (environment.games[].game); supported: {', '.join(GAMES)}."
            )
        self.slip_probability = _slip_probability(dict(spec.params))
        self.session: TelecomSession | None = None
        super().__init__(spec, reward)

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        """``count`` task seeds of fold ``split`` from position ``offset``."""
        return seed_window(split_seeds(split), count, offset, "dual_control 'telecom'", f"{split} seeds")

    def fold_size(self, split: str) -> int:
        """How many task seeds fold ``split`` holds."""
        return len(split_seeds(split))

    def reset(self, seed: int, split: str = "train") -> tuple[str, dict[str, Any]]:
        """Start task ``seed`` of fold ``split``; return (observation, info)."""
        if int(seed) not in split_seeds(split):
            raise EnvironmentConfigError(f"Seed {seed} is not a {split} seed of dual_control (use seeds({split!r}, ...)).")
        self._episode.stop()
        task = make_task(split, int(seed), self.slip_probability)
        self.session = TelecomSession(task)
        self._initial_blockers = len(blockers(task.world))
        opening = f"Customer: My mobile data has stopped working on my {task.world.phone.model.name}. Can you help?"
        return self._start_episode(opening, gold=solve(task, opening))

    def _listed_actions(self) -> Sequence[str]:
        return ACTIONS

    def _send(self, action: str) -> str:
        return self.session.act(action)

    def _outcome(self) -> tuple[bool, bool]:
        session = self.session
        return session.won, session.finished and not session.won

    def _info(self, action_valid: bool) -> dict[str, Any]:
        session = self.session
        remaining = len(blockers(session.world))
        score = 1.0 if session.won else max(0.0, 1.0 - remaining / max(self._initial_blockers, 1))
        return make_info(
            task=session.task.text,
            task_type=self.spec.game,
            valid_actions=list(ACTIONS),
            anchor_observation=self._anchor,
            won=session.won,
            action_valid=action_valid,
            score=score,
            inventory="",
            lost=session.finished and not session.won,
            moves=self._episode.steps,
            faults=list(session.task.faults),
        )

    def restart(self) -> None:
        """Nothing runs outside this process: forget the episode."""
        self._episode.stop()

    def close(self) -> None:
        """Forget the episode."""
        self.restart()
