"""The telecom domain behind the ``TextEnvironment`` interface.

Configuration: ``environment.env: dual_control``, one game ``telecom``; ``params`` may set
``slip_probability`` (default 0.5: the share of hard-persona tasks whose user flips the
wrong switch once). ``reset(seed, split)`` builds task ``seed`` of fold ``split``
(``tasks``; a seed of another fold is refused, so no test task leaks into training); the
first observation is the customer's opening line; the task text is the support policy
(``policy.POLICY``), in the agent's prompt at every step.

Actions are tool calls with typed arguments (``tools``). The valid-action list
(``info["valid_actions"]``) is finite and grows only with the identification arguments
the user has given; a listed action is played; a call off the list that fits the schema
is played too (a guessed phone number: the tool answers "no customer"); text that does
not fit the schema is a no-op step with ``action_valid=False`` whose observation names the
error ("Invalid tool call: refuel_data argument gb must be ..."). The episode terminates
when the conversation ends (the user ended it after checking, or gave up; or a transfer):
won iff ``session.final_check`` passes, otherwise lost; it is truncated at
``spec.max_steps``. ``score`` is the share of the task's starting findings cleared (1.0
once won). ``info`` adds the task's ``intent``, ``persona`` and ``faults``.

``seeds("train", count, offset)`` with ``0 < offset < DISTINCT_WINDOW`` (5,000) skips a
task identical (``TelecomTask.signature``) to one at a train position below ``offset``:
the held-out "seen" window (train seeds from ``seen_seed_offset``, above every training
seed) never scores a task the agent trained on. Everything runs in this process in microseconds.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from hindsight.envs.actions import match_valid_action
from hindsight.envs.adapter import EnvironmentAdapter, seed_window
from hindsight.envs.base import EnvironmentConfigError, EnvironmentSpec, StepResult
from hindsight.envs.dual_control.session import TelecomSession
from hindsight.envs.dual_control.solver import solve
from hindsight.envs.dual_control.tasks import DEFAULT_SLIP_PROBABILITY, make_task, split_seeds
from hindsight.envs.dual_control.tools import ToolCallError, listed_actions, parse_call
from hindsight.envs.reward import RewardConfig
from hindsight.envs.tracker import make_info

ENV_NAME = "dual_control"
GAMES: tuple[str, ...] = ("telecom",)
PARAMS: tuple[str, ...] = ("slip_probability",)


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


DISTINCT_WINDOW = 5_000
"""Train positions below which ``seeds`` skips repeated tasks (every held-out "seen" offset
in use is far below it; a window starting above it, e.g. a Gymnasium reset's position, is
plain)."""


@lru_cache(maxsize=4)
def _train_signatures(slip_probability: float) -> tuple:
    return tuple(make_task("train", seed, slip_probability).signature() for seed in split_seeds("train")[:DISTINCT_WINDOW])


def distinct_seeds(split: str, count: int, offset: int, slip_probability: float) -> list[int]:
    """``count`` seeds of fold ``split`` from position ``offset``; on the train fold with
    ``0 < offset < DISTINCT_WINDOW``, skipping tasks identical to one below ``offset`` (and
    to one already taken)."""
    seeds = split_seeds(split)
    if split != "train" or not 0 < offset < DISTINCT_WINDOW:
        return seed_window(seeds, count, offset, "dual_control 'telecom'", f"{split} seeds")
    taken, chosen = set(_train_signatures(slip_probability)[:offset]), []
    for seed in seeds[offset:]:
        if len(chosen) == count:
            break
        signature = make_task(split, seed, slip_probability).signature()
        if signature not in taken:
            taken.add(signature)
            chosen.append(seed)
    if len(chosen) < count:
        raise EnvironmentConfigError(
            f"dual_control 'telecom' has only {len(chosen)} train tasks from offset {offset} unlike every task below it; "
            f"asked for {count}."
        )
    return chosen


class DualControlEnvironment(EnvironmentAdapter):
    """The telecom domain (see the module docstring).

    Args:
        spec: ``env="dual_control"``, ``game="telecom"``, optional ``slip_probability``.
        reward: Step reward settings.
    """

    display_name = "dual-control telecom"

    def __init__(self, spec: EnvironmentSpec, reward: RewardConfig | None = None) -> None:
        if spec.game not in GAMES:
            raise EnvironmentConfigError(
                f"Unknown dual_control game {spec.game!r} (environment.games[].game); supported: {', '.join(GAMES)}."
            )
        self.slip_probability = _slip_probability(dict(spec.params))
        self.session: TelecomSession | None = None
        super().__init__(spec, reward)

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        """``count`` task seeds of fold ``split`` from position ``offset`` (see the module docstring)."""
        return distinct_seeds(split, count, offset, self.slip_probability)

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
        return self._start_episode(self.session.opening(), gold=solve(task))

    def step(self, action: str) -> StepResult:
        """Play ``action``: a listed action, or any call that fits the schema; otherwise a
        no-op step whose observation names what is wrong with the call."""
        self._episode.check_can_step()
        session = self.session
        canonical = match_valid_action(action, listed_actions(session.seen))
        try:
            call = parse_call(canonical if canonical is not None else action)
        except ToolCallError as error:
            reward, terminated, truncated = self._episode.record(False, False, action_valid=False)
            return str(error), reward, terminated, truncated, self._info(action_valid=False)
        observation = session.act(call)
        self._anchor = observation
        reward, terminated, truncated = self._episode.record(session.won, session.finished and not session.won, action_valid=True)
        return observation, reward, terminated, truncated, self._info(action_valid=True)

    def _info(self, action_valid: bool) -> dict[str, Any]:
        session = self.session
        task = session.task
        score = 1.0 if session.won else max(0.0, 1.0 - session.remaining() / max(session.initial_problems, 1))
        return make_info(
            task=task.text,
            task_type=self.spec.game,
            valid_actions=listed_actions(session.seen),
            anchor_observation=self._anchor,
            won=session.won,
            action_valid=action_valid,
            score=score,
            inventory="",
            lost=session.finished and not session.won,
            moves=self._episode.steps,
            faults=list(task.faults),
            intent=task.intent,
            persona=task.persona,
        )

    def restart(self) -> None:
        """Nothing runs outside this process: forget the episode."""
        self._episode.stop()

    def close(self) -> None:
        """Forget the episode."""
        self.restart()
