"""How rollouts are played: the engine's settings (``RolloutConfig``). It holds the
generation calls' decoding settings (``policy.generation.SamplingConfig``) as one field
instead of copying them, and the YAML's ``rollout`` block holds it in turn
(``hindsight.config.RolloutSettings``, its keys flat); each stage sets only its own group
size, temperature and seed (``RolloutConfig.at``, ``ProjectConfig.rollout_config``). The
engine itself is ``rollout.engine``, which re-exports it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from hindsight.params import flat_field
from hindsight.policy.backends import TorchBackend
from hindsight.policy.episode_context import LAYOUTS
from hindsight.policy.generation import SamplingConfig
from hindsight.policy.prompts import PromptConfig


@dataclass
class RolloutConfig:
    """How rollouts are played: the decoding (``sampling``, the generation calls' own
    settings, held as they are) and the engine's settings around it."""

    sampling: SamplingConfig = flat_field(lambda: SamplingConfig(max_length=1024))
    """How each turn's response is decoded (temperature, top_p, constrained, max_length, ...:
    ``policy.generation.SamplingConfig``; flat in a parameter block: ``rollout.temperature``);
    every generation call of the engine gets it as is. Recorded log-probs are at temperature
    1. The engine's default budget is 1024 tokens (a lone generation call's: the model's
    length)."""
    group_size: int = 8
    """N: episodes per task (one group, same seed). Each stage sets it per call (``at``): RL
    its update's groups, ``RLConfig.group_size``; the skills stage its rollouts per task."""
    max_steps: int | None = None
    """Steps after which an episode is truncated (None: the task spec's, from
    ``EnvironmentConfig.max_steps``; ``SFTConfig.max_steps`` counts optimizer steps)."""
    prompt: PromptConfig = field(default_factory=PromptConfig)
    """How step prompts are built (history window, pinning, valid-action list)."""
    max_parallel: int = 32
    """Episodes (and environments) live at once: one batched generation per turn."""
    seed: int = 0
    """Seed of the sampling RNG (same seed, tasks and policy: same rollouts). Each stage sets
    it from one of the run's streams, all derived from ``ProjectConfig.seed`` (``Seeds``); a
    held-out trial plays with ``HeldoutConfig.seed`` + trial."""
    episode_replays: int = 3
    """Times an episode whose environment died (a killed JVM) or hung past
    ``environment.step_timeout_s`` under it is replayed from its start, same task and seed,
    on a restarted environment; counted in ``faults/episode_replays``. An episode whose every
    try died with its environment stops the run, naming the environment and the tries; one
    whose tries ran out on a hang is left out and counted (``faults/failed_episodes``)."""
    progress: bool = True
    """A tqdm bar: live episodes and env steps/s."""
    layout: str = "stepwise"
    """stepwise: a prompt per step with a history window (the SEED paper's); multiturn: each
    episode one growing token sequence, KV cache kept across turns, trained with one
    forward pass per episode."""
    backend: Any = field(default_factory=TorchBackend, compare=False, repr=False)
    """The inference backend object of the step-wise generation (``policy.backends``; the
    torch engine by default). Not a parameter key: ``ProjectConfig.rollout_config`` builds it
    from the names ``rollout.backend`` and ``rollout.backend_compute_type``."""
    imagination: Any = field(default=None, compare=False, repr=False)
    """In-response world-model calls (``rollout.imagination.Imagination``: the world model and
    the bound per step), set by a method (WM-R1), not by the YAML; None: off."""

    def __post_init__(self) -> None:
        if self.episode_replays < 0:
            raise ValueError(f"rollout.episode_replays must be >= 0, got {self.episode_replays}")
        if self.layout not in LAYOUTS:
            raise ValueError(f"rollout.layout must be one of {', '.join(LAYOUTS)}, got {self.layout!r}")

    def at(self, *, group_size: int | None = None, temperature: float | None = None, seed: int | None = None) -> "RolloutConfig":
        """These settings for one stage's play: its group size, sampling temperature and seed
        (None: kept); the sampling and prompt are copies, the backend is shared."""
        sampling = dataclasses.replace(self.sampling, **({} if temperature is None else {"temperature": float(temperature)}))
        return dataclasses.replace(
            self, sampling=sampling, prompt=dataclasses.replace(self.prompt),
            group_size=self.group_size if group_size is None else int(group_size), seed=self.seed if seed is None else int(seed),
        )
