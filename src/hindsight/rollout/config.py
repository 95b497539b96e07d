"""How rollouts are played: the engine's settings (``RolloutConfig``), the YAML's ``rollout``
block as it is (``rollout.sampling.temperature`` is ``RolloutConfig.sampling.temperature``).
It holds the generation calls' decoding settings (``policy.generation.SamplingConfig``, the
project's one decoding class) as one field; each stage sets only its own group size, seed and
decoding changes (``RolloutConfig.at``, ``ProjectConfig.rollout_config``), which are no keys
of the block (``params.not_a_key``). The engine itself is ``rollout.engine``, which
re-exports it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from hindsight.params import build, not_a_key
from hindsight.policy.backends import BACKENDS, InferenceBackend, shared_backend
from hindsight.policy.episode_context import LAYOUTS
from hindsight.policy.generation import SamplingConfig
from hindsight.policy.prompts import PromptConfig


@dataclass
class RolloutConfig:
    """How rollouts are played: the decoding (``sampling``, the generation calls' own
    settings, held as they are) and the engine's settings around it."""

    sampling: SamplingConfig = field(default_factory=lambda: SamplingConfig(max_length=1024))
    """How each turn's response is decoded (temperature, top_p, constrained, max_length, ...:
    ``policy.generation.SamplingConfig``); every generation call of the engine gets it as is.
    Recorded log-probs are at temperature 1. The engine's default budget is 1024 tokens (a
    lone generation call's: the model's length). The ``sampling`` of a stage's block
    (``SkillsConfig``, ``TeacherFitConfig``, ``OpenAIEndpointConfig``) holds only that
    stage's changes to this one (``at``)."""
    group_size: int = not_a_key(default=8)
    """N: episodes per task (one group, same seed). Each stage sets it per call (``at``): RL
    its update's groups, ``RLConfig.group_size``; the skills stage its rollouts per task."""
    max_steps: int | None = not_a_key(default=None)
    """Steps after which an episode is truncated (None: the task spec's, from
    ``EnvironmentConfig.max_steps``; ``SFTConfig.max_steps`` counts optimizer steps)."""
    prompt: PromptConfig = field(default_factory=PromptConfig)
    """How step prompts are built (history window, pinning, valid-action list)."""
    max_parallel: int = 32
    """Episodes (and environments) live at once: one batched generation per turn."""
    seed: int = not_a_key(default=0)
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
    backend: str = "torch"
    """What generates the step-wise rollouts (``hindsight.policy.backends``): torch (the
    project's engine, on the learner's weights) or ctranslate2 (CTranslate2, the weights
    converted after every update; step-wise layout only). One backend object per name and
    compute type in a process (``inference_backend``)."""
    backend_compute_type: str = "int8"
    """ctranslate2 only: float32 (the learner's numbers) or int8 (quantized weights; the RL
    update corrects for the gap, ``training.rl.schedulers.backend_correction.weight_cap``)."""
    imagination: Any = not_a_key(default=None, compare=False, repr=False)
    """In-response world-model calls (``rollout.imagination.Imagination``: the world model and
    the bound per step), set by a method (WM-R1), not by the YAML; None: off."""

    def __post_init__(self) -> None:
        if self.episode_replays < 0:
            raise ValueError(f"rollout.episode_replays must be >= 0, got {self.episode_replays}")
        if self.layout not in LAYOUTS:
            raise ValueError(f"rollout.layout must be one of {', '.join(LAYOUTS)}, got {self.layout!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"rollout.backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")

    def inference_backend(self) -> InferenceBackend:
        """The backend object of ``backend`` and ``backend_compute_type``, shared by every
        stage's rollouts in this process (``policy.backends.shared_backend``)."""
        return shared_backend(self.backend, self.backend_compute_type)

    def at(self, *, group_size: int | None = None, sampling: Mapping[str, Any] | None = None, seed: int | None = None) -> "RolloutConfig":
        """These settings for one stage's play: its group size, its changes to the decoding
        (``sampling``: keys of ``SamplingConfig``, e.g. ``{"temperature": 0.4}``; the other keys
        keep this block's) and seed (None: kept); the sampling and prompt are copies."""
        changed = build(SamplingConfig, sampling, "sampling", defaults=self.sampling)
        return dataclasses.replace(
            self, sampling=changed, prompt=dataclasses.replace(self.prompt),
            group_size=self.group_size if group_size is None else int(group_size), seed=self.seed if seed is None else int(seed),
        )
