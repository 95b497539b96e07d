"""How rollouts are played: the engine's settings (``RolloutConfig``), built per stage by
``hindsight.config.ProjectConfig.rollout_config`` from the shared ``rollout`` block; the
engine itself is ``rollout.engine``, which re-exports it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hindsight.policy.backends import TorchBackend
from hindsight.policy.episode_context import LAYOUTS
from hindsight.policy.generation import SamplingConfig
from hindsight.policy.prompts import PromptConfig


@dataclass
class RolloutConfig:
    """How rollouts are played."""

    group_size: int = 8
    """N: episodes per task (one group, same seed)."""
    max_steps: int | None = None
    """Steps after which an episode is truncated (None: the task spec's ``max_steps``)."""
    temperature: float = 0.4
    """Sampling temperature (0 = greedy); recorded log-probs are at temperature 1."""
    top_p: float = 1.0
    """Nucleus sampling mass (1.0 = off)."""
    constrained: bool = True
    """Decode only valid actions (token trie); False = free generation (LLMs)."""
    max_new_tokens: int = 24
    """Longest free-generation response, in tokens."""
    max_length: int | None = 1024
    """Prompt + response token budget; longer prompts lose their oldest tokens."""
    stop_at_newline: bool = True
    """Free generation stops at the first newline."""
    max_batch_tokens: int | None = None
    """Padded prompt tokens per forward batch (None: 2048 on CPU, unlimited on GPU; see
    ``policy.generation.SamplingConfig``)."""
    prompt: PromptConfig = field(default_factory=PromptConfig)
    """How step prompts are built (history window, pinning, valid-action list)."""
    max_parallel: int = 32
    """Most episodes live (and environments alive) at once."""
    seed: int = 0
    """Seed of the sampling RNG (same seed, tasks and policy: same rollouts)."""
    episode_replays: int = 3
    """Times an episode whose environment died or hung under it is replayed from its start
    (same task and seed) on a restarted environment (``rollout.replay``); an episode whose
    every try died with its environment stops the run."""
    progress: bool = True
    """Show a tqdm progress bar (live episodes, env steps/s)."""
    layout: str = "stepwise"
    """stepwise (a prompt per step, history window) or multiturn (one token sequence per
    episode, KV cache kept across turns)."""
    backend: Any = field(default_factory=TorchBackend, compare=False, repr=False)
    """The inference backend of the step-wise generation (``policy.backends``: built from
    ``rollout.backend``; the torch engine by default)."""
    imagination: Any = field(default=None, compare=False, repr=False)
    """In-response world-model calls (``rollout.imagination.Imagination``: the world model and
    the bound per step), set by a method (WM-R1), not by the YAML; None: off."""

    def __post_init__(self) -> None:
        if self.episode_replays < 0:
            raise ValueError(f"rollout.episode_replays must be >= 0, got {self.episode_replays}")
        if self.layout not in LAYOUTS:
            raise ValueError(f"rollout.layout must be one of {', '.join(LAYOUTS)}, got {self.layout!r}")

    def sampling(self) -> SamplingConfig:
        """The decoding settings of the generation calls."""
        return SamplingConfig(
            max_new_tokens=self.max_new_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            constrained=self.constrained,
            stop_at_newline=self.stop_at_newline,
            max_length=self.max_length,
            max_batch_tokens=self.max_batch_tokens,
        )
