"""Settings of the world-model stage (``parameters_world_model.yml``): WM-R1's world model,
a causal LM trained on (task, history, action) -> next observation (``hindsight.world_model``)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pandas as pd

from hindsight.config.stages import PolicyConfig
from hindsight.world_model.environment import WorldModelSettings
from hindsight.training.sft import SFTConfig


def _world_model_sft() -> SFTConfig:
    return SFTConfig(learning_rate=0.002, batch_size=8, max_steps=600, bf16_autocast="auto")


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
    use_rollouts: bool = True
    """Also learn from the base policy's rollouts of the skills stage (``skill_rollouts``:
    its mistakes show transitions the expert never made), not only ``trajectories``."""
    random_episodes_per_game: int = 0
    """Random-valid-action episodes played in the real environment per game, one on each of
    the first train-fold tasks, learnt from beside the trajectories
    (``world_model_exploration``): the expert never errs, so without them the world model
    sees few episodes end lost (``transitions.FAILED_MARKER``) and judges every ending a win
    (0: none; a web task needs a browser for them)."""
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
