"""Settings of the world-model stage (``parameters_world_model.yml``): WM-R1's world model,
a causal LM trained on (task, history, action) -> next observation (``hindsight.world_model``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from hindsight.config.stages import PolicyConfig
from hindsight.policy.generation import sampling_changes
from hindsight.world_model.environment import WorldModelSettings
from hindsight.training.sft import SFTConfig


def _world_model_sft() -> SFTConfig:
    return SFTConfig(learning_rate=0.002, batch_size=8, max_steps=600, bf16_autocast="auto")


START_POLICIES = ("stage1", "base")
"""The checkpoints whose own episodes the world model may learn from."""


@dataclass
class PolicyEpisodesConfig:
    """``world_model.policy_episodes``: the start policy's own episodes, played on the real
    environment by the rollout engine (``world_model_policy_episodes``), won and lost with
    their real rewards and endings: learnt from (``trained_share``) and, the held-out ones,
    the episodes the world model's judgement is calibrated on (``world_model.calibration``)."""

    start_from: str = "stage1"
    """Which checkpoint plays them: stage1 | base. ``TrainingConfig.start_from`` is where RL
    (WM-R1 included) starts; set the two alike, so the world model judges the episodes of the
    policy WM-R1 trains."""
    tasks_per_game: int = 0
    """The first train-fold tasks per game it plays (the tasks WM-R1 trains on, which have
    gold episodes; 0: none, and no calibration). ``TrainingConfig``, ``SkillsConfig`` and
    ``State2StateConfig`` count their own stages' tasks."""
    episodes_per_task: int = 4
    """Episodes per task."""
    sampling: dict[str, Any] = field(default_factory=dict)
    """Changes to the shared ``rollout.sampling`` (``RolloutConfig.sampling``) for these
    episodes and the imagined ones (none: the temperature RL samples at, as WM-R1's rollouts
    do); ``SkillsConfig``, ``TeacherFitConfig`` and ``OpenAIEndpointConfig`` hold their own
    stages' changes."""
    trained_share: float = 1.0
    """Share of the episodes that are not held out the world model learns from (a stable
    draw by episode id; 0: none, the held-out ones are still played and scored)."""

    def __post_init__(self) -> None:
        self.sampling = sampling_changes(self.sampling, "world_model.policy_episodes.sampling")
        if self.start_from not in START_POLICIES:
            raise ValueError(f"world_model.policy_episodes.start_from must be one of {START_POLICIES}, got {self.start_from!r}")
        if self.tasks_per_game < 0 or self.episodes_per_task < 1:
            raise ValueError("world_model.policy_episodes: tasks_per_game must be >= 0 and episodes_per_task >= 1")
        if not 0 <= self.trained_share <= 1:
            raise ValueError(f"world_model.policy_episodes.trained_share must be in [0, 1], got {self.trained_share}")


@dataclass
class CalibrationConfig:
    """``world_model.calibration``: the imagined half of the calibration (the world model
    driving episodes with the start policy from the held-out policy episodes' starts)."""

    imagined_tasks: int = 16
    """Most tasks imagined (a fixed-seed draw of the held-out policy episodes' tasks; 0: no
    imagination)."""
    imagined_episodes_per_task: int = 4
    """Imagined episodes per task."""

    def __post_init__(self) -> None:
        if self.imagined_tasks < 0 or self.imagined_episodes_per_task < 1:
            raise ValueError("world_model.calibration: imagined_tasks must be >= 0 and imagined_episodes_per_task >= 1")


@dataclass
class WorldModelConfig:
    """``parameters_world_model.yml``: the world model, its training and held-out evaluation."""

    model: PolicyConfig = field(default_factory=lambda: PolicyConfig(preset="small"))
    """The model: a local HF causal-LM directory (``model_dir``) or the embedded Qwen2 of
    ``preset`` with a tokenizer trained on the examples (as the policy; a model block, where
    ``OpenAIEndpointConfig.model`` is the name of the teacher endpoint's model)."""
    sft: SFTConfig = field(default_factory=_world_model_sft)
    """Training on the examples (the project's SFT loop; the response is the next observation)."""
    query: WorldModelSettings = field(default_factory=WorldModelSettings)
    """How a prompt is written and the answer generated, in training, evaluation and the
    world-model environment alike (``world_model.environment.WorldModelSettings``; the token
    budget is no key of it: ``sft.max_length``)."""
    gold_share: float = 1.0
    """Share of the ``trajectories`` (gold) episodes that are not held out the world model
    learns from (a stable draw by episode id; 1: all)."""
    use_rollouts: bool = True
    """Also learn from the base policy's rollouts of the skills stage (``skill_rollouts``:
    its mistakes show transitions the expert never made), not only ``trajectories``."""
    random_episodes_per_game: int = 0
    """Random-valid-action episodes played in the real environment per game, one on each of
    the first train-fold tasks, learnt from beside the trajectories
    (``world_model_exploration``): the expert never errs, so without them the world model
    sees few episodes end lost (``transitions.FAILED_MARKER``) and judges every ending a win
    (0: none; a web task needs a browser for them)."""
    policy_episodes: PolicyEpisodesConfig = field(default_factory=PolicyEpisodesConfig)
    """The start policy's own episodes on the real environment (won and lost), learnt from
    and held out to calibrate the world model's judgement on (``State2StateConfig.policy_episodes``
    counts the base policy's exploration episodes of State2State)."""
    calibration: CalibrationConfig = field(default_factory=CalibrationConfig)
    """The imagined episodes of the calibration."""
    terminal_repeat: int = 1
    """Each training episode's last step when its outcome is known (response ``[task
    solved]`` or ``[task failed]``) appears this many times in the SFT set: an episode ends
    once, so the markers the world model judges outcomes by are a small share of the
    examples (1: as collected)."""
    heldout_fraction: float = 0.2
    """Share of episodes held out (never trained on) to score the world model
    (``EmpoConfig`` holds out its own share of expert trajectories, for EMPO's evaluation)."""
    heldout_max_examples: int = 200
    """Most held-out transitions scored (exact match needs one generation each)."""

    def __post_init__(self) -> None:
        if not 0 <= self.heldout_fraction < 1:
            raise ValueError(f"world_model.heldout_fraction must be in [0, 1), got {self.heldout_fraction}")
        if not 0 <= self.gold_share <= 1:
            raise ValueError(f"world_model.gold_share must be in [0, 1], got {self.gold_share}")
        if self.random_episodes_per_game < 0:
            raise ValueError(f"world_model.random_episodes_per_game must be >= 0, got {self.random_episodes_per_game}")
        if self.terminal_repeat < 1:
            raise ValueError(f"world_model.terminal_repeat must be >= 1, got {self.terminal_repeat}")
        if self.model.vision:
            raise ValueError("world_model.model.vision: the world model reads and writes text; leave it false")

    def query_settings(self) -> WorldModelSettings:
        """How the world-model environment queries the model: the format it was trained on,
        within its training token budget."""
        return dataclasses.replace(self.query, max_length=self.sft.max_length)

    def recorded_episodes(self, trajectories: pd.DataFrame, skill_rollouts: pd.DataFrame) -> pd.DataFrame:
        """The episodes the world model learns from and starts its tasks from: the
        trajectories and, with ``use_rollouts``, the skills stage's rollouts."""
        sources = [trajectories, skill_rollouts] if self.use_rollouts else [trajectories]
        return pd.concat([source for source in sources if len(source)], ignore_index=True)
