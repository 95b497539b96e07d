"""A ``TextEnvironment`` whose transitions come from a learned world model (WM-R1).

``reset(seed, split)`` starts from a real task's first observation as recorded in the
trajectory table (``RecordedTasks``: expert episodes of the train fold); ``step(action)``
asks the world model for the next observation (greedy, one line; the text format of
``hindsight.world_model.transitions``). Nothing else of the real environment is used.

Three decisions, and why:

- **The outcome is judged by a rule on the world model's own answer**: the episode is won
  when the model answers ``SOLVED_MARKER`` (it was trained to, on the last step of every won
  episode) and ends lost when it answers ``FAILED_MARKER`` (the last step of an episode the
  real environment ended without a win before its step limit). No separate success head:
  the table never holds the observation after an episode's last step, so the one thing a
  judge can learn from is "this action ended a won (or a lost) episode", which is exactly
  what the markers encode; one model, one held-out score (the markers' exact match on
  held-out terminal steps, ``world_model_evaluation``).
- **Valid actions come from the recorded real states of the same task**: the valid actions
  of the state reached by the same action sequence when one was recorded, else those of the
  recorded state whose observation is closest to the predicted one (difflib ratio). The
  policy then decodes constrained to them, as on the real environment; every action it
  plays is one the real game offered in a similar state. Generating the action list with
  the world model would let a small model invent actions the game never accepts.
- **Rewards are the real environment's rule** (``envs.reward.step_reward``): the success
  reward on the solved step, every action valid (constrained decoding).

Imaginary turns (WM-R1's official thinking, the default of ``training.rl.methods.wmr1.thinking``):
``make_env(spec, imaginary_turns=n)`` with n > 0 also offers ``imagine: <a>`` for every valid
action ``a`` (``IMAGINE_PREFIX``) while the episode has made fewer than n of them (n =
``n_wm_max``, a cap per EPISODE). Choosing one asks the world model what ``a`` does and the
state ADVANCES along that imagined branch, as in the official code, where the imaginary turn
steps the same world-model environment: the prediction becomes the observation (shown as a new
message, ``IMAGINARY_LAYOUT``), ``(observation, a)`` enters the history the world model reads,
and the valid actions are those of the state reached. An imaginary turn never ends the
episode: the prediction is an observation, and only a committed action is judged (the
official worker marks an episode done only on a committed action, and judges it after the
last one), so no episode is won with 0 committed actions. A predicted ``SOLVED_MARKER`` or
``FAILED_MARKER`` is shown (``[imagined] [task solved]``) and the state stays where it was
(our reading: a marker is a terminal answer, no page to step on from; the official world
model draws a screen). The step info says ``imaginary: True``, so the episode
does not count the turn in its step limit (``rollout.live_episode``); ``R_len`` does not count
it and ``R_wm`` does (``methods.wmr1``). Past the cap the options are gone, and a request all
the same (free generation) is refused: an invalid action, no world-model call.

Imagined turns (the older, separate-turn reading, ``thinking: imagined_turns``):
``make_env(spec, imagined_turns=k)`` with k > 0 offers ``imagine: <a>`` at most k times before
each committed action. Choosing one asks the world model what ``a`` would do, without playing
it: the state stays, the prediction is shown under the current observation, and the turn is a
step of its own (reward 0) that counts in the step limit. Past the bound the options are gone
and a request is refused, as above. The two are exclusive.

``WorldModelSimulator`` holds the world model, the recorded tasks and the settings, builds
one environment per spec for the rollout engine and counts the world-model calls; its
``predict_transition`` also serves the in-response calls (``rollout.imagination``) in any
environment.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from hindsight.data.outcomes import episode_outcomes
from hindsight.data.schema import make_group_id
from hindsight.envs.base import EnvironmentConfigError, EnvironmentSpec, StepResult, TextEnvironment, check_split
from hindsight.envs.reward import step_reward
from hindsight.params import not_a_key
from hindsight.policy import Policy
from hindsight.policy.generation import generate_text
from hindsight.world_model.transitions import FAILED_MARKER, SOLVED_MARKER, is_failed, is_solved, transition_prompt


IMAGINE_PREFIX = "imagine: "
"""The action of an imagined turn: ``imagine: <action>`` asks what ``<action>`` would do."""
IMAGINARY_LAYOUT = "[imagined] {}"
"""How an imaginary turn's prediction is shown to the policy (its new observation)."""


def _outcome_marker(predicted: str) -> str | None:
    """``SOLVED_MARKER`` or ``FAILED_MARKER`` when the prediction is that outcome, else None."""
    if is_solved(predicted):
        return SOLVED_MARKER
    return FAILED_MARKER if is_failed(predicted) else None


def imagined_action(action: str) -> str | None:
    """The action an imagined turn asks about; None for a committed action."""
    return action[len(IMAGINE_PREFIX):] if action.startswith(IMAGINE_PREFIX) else None


@dataclass
class _State:
    actions: tuple[str, ...]
    observation: str
    valid_actions: list[str]


class RecordedTasks:
    """What the trajectory table says about each task (``group_id``): its first observation
    and task text, every recorded state with its valid actions, and its won episodes."""

    def __init__(self, table: pd.DataFrame) -> None:
        if table.empty:
            raise ValueError("world-model environment: no recorded trajectories to start tasks from")
        self.table = table.sort_values(["episode_id", "step"]).reset_index(drop=True)
        self.states: dict[str, list[_State]] = {}
        self.exact: dict[tuple[str, tuple[str, ...]], list[str]] = {}
        self.starts: dict[str, dict[str, Any]] = {}
        for episode_id, episode in self.table.groupby("episode_id", sort=False):
            group = str(episode["group_id"].iloc[0])
            actions: tuple[str, ...] = ()
            for row in episode.itertuples(index=False):
                valid = [str(a) for a in row.valid_actions]
                self.states.setdefault(group, []).append(_State(actions, str(row.observation), valid))
                self.exact.setdefault((group, actions), valid)
                if not actions and group not in self.starts:
                    self.starts[group] = {
                        "observation": str(row.observation), "task": str(row.task), "task_type": str(row.task_type),
                        "valid_actions": valid, "split": str(row.split), "seed": int(row.seed),
                    }
                actions = actions + (str(row.action),)
        outcomes = episode_outcomes(self.table, keys=["group_id"])
        won = outcomes[outcomes["success"]]
        self.won_episodes: dict[str, list[str]] = won.groupby("group_id")["episode_id"].apply(list).to_dict()

    def start(self, group_id: str) -> dict[str, Any]:
        """The recorded start of a task; a clear error when there is none."""
        if group_id not in self.starts:
            raise EnvironmentConfigError(
                f"world-model environment: no recorded episode of task {group_id!r} to start from; "
                f"the trajectories hold {len(self.starts)} tasks (train WM-R1 on tasks with expert episodes: "
                "training.tasks_per_game <= ingestion.expert_episodes.train)"
            )
        return self.starts[group_id]

    def valid_actions(self, group_id: str, actions: tuple[str, ...], observation: str) -> list[str]:
        """The valid actions after ``actions`` (exact recorded prefix, else the closest recorded observation)."""
        if (group_id, actions) in self.exact:
            return list(self.exact[group_id, actions])
        candidates = self.states.get(group_id) or []
        if not candidates:
            return []
        best = max(candidates, key=lambda state: difflib.SequenceMatcher(None, state.observation, observation).ratio())
        return list(best.valid_actions)

    def episode_rows(self, episode_id: str) -> pd.DataFrame:
        """The recorded rows of one episode, in step order."""
        return self.table[self.table["episode_id"] == episode_id]

    def seeds(self, spec: EnvironmentSpec, split: str) -> list[int]:
        """Seeds of the recorded tasks of this spec's game and fold, ascending."""
        prefix = make_group_id(spec.env, spec.game, split, 0).rsplit("/", 1)[0] + "/"
        return sorted(start["seed"] for group, start in self.starts.items() if group.startswith(prefix))


@dataclass
class WorldModelSettings:
    """How the world model is queried: the text format it was trained on (the world-model
    stage trains and evaluates with these same settings, ``config.WorldModelConfig.query``)."""

    history: int = 2
    """Earlier (observation, action) pairs shown in a world-model prompt."""
    max_observation_chars: int = 600
    """Longest observation shown in a prompt or learnt as a response (longer ones are cut):
    the world model's format (``PromptConfig.max_observation_chars`` cuts the policy's prompts)."""
    max_new_tokens: int = 128
    """Longest generated observation, in tokens (evaluation and the world-model environment)."""
    max_length: int = not_a_key(default=1024)
    """Prompt + prediction token budget (the world-model stage: its SFT's ``max_length``; no
    key of ``world_model.query``)."""

    def __post_init__(self) -> None:
        if self.history < 0:
            raise ValueError(f"world_model.query.history must be >= 0, got {self.history}")


@dataclass
class WorldModelSimulator:
    """The world model, the recorded tasks and the settings: an environment factory for the
    rollout engine, counting world-model calls across its environments."""

    world_model: Policy
    """A ``policy.model.Policy`` trained by the world_model pipeline."""
    tasks: RecordedTasks
    settings: WorldModelSettings = field(default_factory=WorldModelSettings)
    calls: int = 0
    """World-model generations so far (every environment step is one)."""

    def make_env(self, spec: EnvironmentSpec, imagined_turns: int = 0, imaginary_turns: int = 0) -> "WorldModelEnvironment":
        """An environment for ``spec`` (the rollout engine's ``env_factory``), offering at most
        ``imagined_turns`` imagined turns before each committed action, or at most
        ``imaginary_turns`` imaginary turns per episode (module docstring; 0: none)."""
        return WorldModelEnvironment(spec, self, imagined_turns, imaginary_turns)

    def predict_transition(self, task: str, history: list[tuple[str, str]], observation: str, action: str) -> str:
        """The world model's next observation after ``action`` from ``observation``, with the
        earlier (observation, action) pairs of ``history`` (the newest ``settings.history``)."""
        past = history[-self.settings.history:] if self.settings.history else []
        prompt = transition_prompt(task, past, observation, action, max_chars=self.settings.max_observation_chars)
        return self.predict(prompt)

    def predict(self, prompt: str) -> str:
        """One greedy world-model answer."""
        self.calls += 1
        return generate_text(
            self.world_model, [prompt], max_new_tokens=self.settings.max_new_tokens,
            stop_at_newline=True, max_length=self.settings.max_length,
        )[0].strip()


class WorldModelEnvironment(TextEnvironment):
    """One task at a time, stepped by the world model (see the module docstring)."""

    def __init__(self, spec: EnvironmentSpec, simulator: WorldModelSimulator, imagined_turns: int = 0, imaginary_turns: int = 0) -> None:
        if imagined_turns < 0 or imaginary_turns < 0:
            raise ValueError(f"world-model environment: imagined_turns and imaginary_turns must be >= 0, got {imagined_turns}, {imaginary_turns}")
        if imagined_turns and imaginary_turns:
            raise ValueError("world-model environment: imagined_turns and imaginary_turns are exclusive (set one to 0)")
        self.spec = spec
        self.simulator = simulator
        self.imagined_turns = imagined_turns
        self.imagined_since_action = 0
        """Imagined turns since the last committed action (at most ``imagined_turns``)."""
        self.imaginary_turns = imaginary_turns
        self.imaginary_used = 0
        """Imaginary turns of this episode so far (at most ``imaginary_turns``)."""
        self.group_id = ""
        self.task = ""
        self.task_type = spec.game
        self.observation = ""
        self.history: list[tuple[str, str]] = []
        self.valid: list[str] = []

    def _may_imagine(self) -> bool:
        """Whether an imagined or imaginary turn is still allowed."""
        if self.imaginary_turns:
            return self.imaginary_used < self.imaginary_turns
        return self.imagined_since_action < self.imagined_turns

    def offered_actions(self) -> list[str]:
        """The valid actions, and the imagined turns on them while the bound allows one."""
        if not self.valid or not self._may_imagine():
            return list(self.valid)
        return self.valid + [IMAGINE_PREFIX + action for action in self.valid]

    def _info(self, won: bool, action_valid: bool) -> dict[str, Any]:
        return {
            "task": self.task, "task_type": self.task_type, "valid_actions": self.offered_actions(),
            "anchor_observation": self.observation, "won": won, "action_valid": action_valid,
            "score": 1.0 if won else 0.0, "inventory": "", "world_model_calls": self.simulator.calls,
        }

    def reset(self, seed: int, split: str = "train") -> tuple[str, dict[str, Any]]:
        check_split(split)
        self.group_id = make_group_id(self.spec.env, self.spec.game, split, seed)
        start = self.simulator.tasks.start(self.group_id)
        self.task, self.task_type, self.observation = start["task"], start["task_type"], start["observation"]
        self.valid, self.history = list(start["valid_actions"]), []
        self.imagined_since_action = self.imaginary_used = 0
        return self.observation, self._info(False, True)

    def _predict(self, action: str) -> str:
        """The world model's next observation after ``action`` from the current state."""
        return self.simulator.predict_transition(self.task, self.history, self.observation, action)

    def _imagine(self, action: str) -> StepResult:
        """An imagined turn (module docstring): the state stays; over the bound, refused."""
        if not self._may_imagine():
            return self.observation, step_reward(False, False, self.spec.reward), False, False, self._info(False, False)
        if self.imaginary_turns:
            return self._imaginary(action)
        self.imagined_since_action += 1
        predicted = self._predict(action)
        shown = f"{self.observation}\n[imagined, not played] {action} -> {predicted}"
        return shown, step_reward(False, True, self.spec.reward), False, False, self._info(False, True)

    def _imaginary(self, action: str) -> StepResult:
        """An imaginary turn (module docstring): the state advances along the imagined action
        unless the prediction is a win (then it is only shown), the episode never ends here,
        and the turn is marked so that the step limit leaves it out."""
        self.imaginary_used += 1
        predicted = self._predict(action)
        action_valid = not self.valid or action in self.valid
        marker = _outcome_marker(predicted)
        if marker is not None:
            predicted = marker
        else:
            self._move_to(action, predicted)
        reward = step_reward(False, action_valid, self.spec.reward)
        return IMAGINARY_LAYOUT.format(predicted), reward, False, False, {**self._info(False, action_valid), "imaginary": True}

    def step(self, action: str) -> StepResult:
        asked = imagined_action(action)
        if asked is not None:
            return self._imagine(asked)
        self.imagined_since_action = 0
        return self._advance(action)

    def _advance(self, action: str) -> StepResult:
        """Commit ``action`` in the world model: its prediction becomes the state; a predicted
        ``SOLVED_MARKER`` wins, a predicted ``FAILED_MARKER`` ends the episode lost."""
        predicted = self._predict(action)
        action_valid = not self.valid or action in self.valid
        marker = _outcome_marker(predicted)
        won = marker == SOLVED_MARKER
        self._move_to(action, marker or predicted)
        if marker is not None:
            self.valid = []
        reward = step_reward(won, action_valid, self.spec.reward)
        return self.observation, reward, marker is not None, False, self._info(won, action_valid)

    def _move_to(self, action: str, observation: str) -> None:
        """The state after ``action``: ``observation``, the action in the history, the valid
        actions of the state reached (``RecordedTasks.valid_actions``)."""
        self.history.append((self.observation, action))
        self.observation = observation
        actions = tuple(played for _, played in self.history)
        self.valid = self.simulator.tasks.valid_actions(self.group_id, actions, observation)

    def gold_actions(self) -> list[str]:
        won = self.simulator.tasks.won_episodes.get(self.group_id) or []
        return self.simulator.tasks.episode_rows(won[0])["action"].astype(str).tolist() if won else []

    def seeds(self, split: str, count: int, offset: int = 0) -> list[int]:
        check_split(split)
        return self.simulator.tasks.seeds(self.spec, split)[offset : offset + count]

    def restart(self) -> None:
        """Nothing to restart: the world model lives in this process."""

    def close(self) -> None:
        """Nothing to release."""
