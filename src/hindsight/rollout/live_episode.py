"""One episode in progress: its environment, prompt state and recorded table rows.

The rollout engine and the random agent both drive episodes through this class, so the
table they write has one shape (``TABLE_COLUMNS``: ``hindsight.data.schema.ROLLOUT_COLUMNS``,
the trajectory table of the data contract plus ``response_logprobs``; rows built by
``hindsight.data.rows.trajectory_row``) and one set of rules:

- the prompt of step t is ``prompts.build_prompt`` over the task text, the earlier
  (observation, action) pairs, the current observation, its valid actions and the pinned
  facts, with the episode's skill injected when it has one (``policy.skill_injection``);
  without a skill it equals what ``prompts.episode_prompts`` rebuilds from the table rows;
- ``reward`` is the environment's own step reward (``envs.reward.step_reward(won_now,
  action_valid)`` under the ``RewardConfig`` the environment was built with), recorded as
  given; ``won`` is True only on the winning step;
- the history records the action played, unless the environment's step info names
  another (``info["history_action"]``), and the row's ``source`` is the caller's unless
  the info names one (``info["source"]``): the hook of EMPO's expert replay, whose
  Patch Module puts the expert's action into the history and marks the row "patched"
  (``hindsight.envs.expert_replay``); real environments set neither. An environment that
  scores the whole response (the replay's format term reads the thought) has
  ``step_with_response(action, response)``, called instead of ``step``;
- the episode ends (``done``) when the environment terminates or truncates, when the task
  is won, or after ``max_steps`` steps (truncation by the rollout); a step whose info says
  ``imaginary`` (WM-R1's imaginary turn, ``world_model.environment``) is recorded like any
  row but left out of that count;
- an episode of a policy that sees (``sees``) reads the environment's ``screenshot()`` after
  the reset and after every step (``screen``: what the next prompt shows; None for an
  environment that renders none).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from hindsight.data.rows import EpisodeFields, trajectory_row
from hindsight.data.schema import ROLLOUT_COLUMNS
from hindsight.envs.base import TextEnvironment
from hindsight.policy.prompts import PromptConfig, build_prompt, update_pinned_facts
from hindsight.rollout.tasks import TaskRef
from hindsight.policy.skill_injection import inject_skill

logger = logging.getLogger(__name__)

TABLE_COLUMNS = list(ROLLOUT_COLUMNS)
"""The rollout table's columns, in order."""


@dataclass
class Episode:
    """An episode being played on a borrowed environment."""

    episode_id: str
    task: TaskRef
    env: TextEnvironment
    max_steps: int
    prompt_config: PromptConfig
    skill: str | None = None
    observation: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    task_text: str = ""
    history: list[tuple[str, str]] = field(default_factory=list)
    pinned: list[str] = field(default_factory=list)
    step: int = 0
    """Rows recorded so far (imaginary turns included)."""
    imaginary: int = 0
    """Imaginary turns among them (not counted in ``max_steps``)."""
    won: bool = False
    done: bool = False
    rows: list[dict[str, Any]] = field(default_factory=list)
    context: Any = None
    """Multi-turn layout: the episode's token sequence and KV cache
    (``policy.episode_context.EpisodeContext``); None in the step-wise layout."""
    sees: bool = False
    """The policy reads screenshots (a vision policy): ``screen`` follows the environment."""
    screen: Any = None
    """The current screenshot (RGB uint8 (H, W, 3)) when ``sees``, else None."""

    @property
    def group_id(self) -> str:
        """The task's group id."""
        return self.task.group_id

    @property
    def valid_actions(self) -> list[str]:
        """The valid actions of the current state."""
        return list(self.info.get("valid_actions") or [])

    def start(self) -> None:
        """Reset the environment to the episode's task."""
        self.observation, self.info = self.env.reset(self.task.seed, self.task.split)
        self.screen = self.env.screenshot() if self.sees else None
        self.task_text = str(self.info.get("task", ""))
        self.pinned = update_pinned_facts([], self.observation, self.prompt_config)

    def prompt(self) -> str:
        """The prompt of the current step (skill injected when the episode has one)."""
        text = build_prompt(
            self.task_text, self.history, self.observation, self.valid_actions, self.pinned, self.prompt_config
        )
        return inject_skill(text, self.skill) if self.skill else text

    def play(
        self,
        action: str,
        response: str,
        *,
        source: str,
        policy_version: int,
        response_logprobs: list[float] | None = None,
    ) -> dict[str, Any]:
        """Send ``action`` to the environment, record the step's table row, advance.

        Args:
            action: The action parsed from the response.
            response: The raw model output.
            source: The table's ``source`` value.
            policy_version: Version of the acting policy.
            response_logprobs: Per-token log-probs of the response (recorded as is).

        Returns:
            The table row (also appended to ``self.rows``).
        """
        acted_on, acted_info = self.observation, self.info
        step_with_response = getattr(self.env, "step_with_response", None)
        outcome = step_with_response(action, response) if step_with_response is not None else self.env.step(action)
        next_observation, reward, terminated, truncated, next_info = outcome
        won_now = bool(next_info.get("won", False)) and not self.won
        self.step += 1
        self.imaginary += int(bool(next_info.get("imaginary", False)))
        self.won = self.won or won_now
        self.done = bool(terminated or truncated or self.won or self.step - self.imaginary >= self.max_steps)
        source = str(next_info.get("source", source))
        identity = EpisodeFields(
            episode_id=self.episode_id,
            group_id=self.group_id,
            env=self.task.spec.env,
            task_type=str(acted_info.get("task_type", self.task.spec.game)),
            task=self.task_text,
            split=self.task.split,
            seed=self.task.seed,
            source=source,
            policy_version=policy_version,
        )
        row = trajectory_row(
            identity,
            step=self.step - 1,
            observation=acted_on,
            anchor_observation=str(acted_info.get("anchor_observation", acted_on)),
            valid_actions=acted_info.get("valid_actions") or [],
            action=action,
            response=response,
            reward=reward,
            score=next_info.get("score", 0.0) or 0.0,
            done=self.done,
            won=won_now,
            action_valid=next_info.get("action_valid", True),
        )
        row["response_logprobs"] = [float(value) for value in (response_logprobs or [])]
        self.rows.append(row)
        self.history.append((acted_on, str(next_info.get("history_action", action))))
        self.observation, self.info = next_observation, next_info
        self.screen = self.env.screenshot() if self.sees else None
        self.pinned = update_pinned_facts(self.pinned, next_observation, self.prompt_config)
        return row
