"""Settings of the RL loop (SEED, GRPO, GiGPO, OPID): one documented dataclass.

Defaults follow ALGORITHMS.md (paper settings) wherever they carry over to a tiny CPU
policy; the learning rate, the number of updates and the batch size are scaled to the
embedded default; ``conf/base/parameters_training.yml`` restates these defaults. The run's
seed and the analyzer settings come from the shared settings (``hindsight.config``).
"""

from __future__ import annotations

from dataclasses import dataclass

ALGORITHMS = ("seed", "grpo", "gigpo", "opid")
SKILL_SOURCES = ("on_policy", "fixed_bank")


@dataclass
class RLConfig:
    """Every knob of one RL run; one line of documentation under each."""

    algorithm: str = "seed"
    """seed (PPO + gated on-policy distillation), grpo, gigpo or opid."""
    updates: int = 4
    """Number of RL updates (rollout -> analyze -> score -> update)."""
    tasks_per_update: int = 8
    """Training tasks rolled out per update (paper: 16)."""
    group_size: int = 4
    """Rollouts per task: one group (paper: 8)."""
    task_fraction: float = 1.0
    """Fraction of the training task pool this run may draw from (data-efficiency grid)."""
    learning_rate: float = 1e-4
    """AdamW learning rate (paper: 1e-6 for 3B; a tiny policy needs more)."""
    ppo_epochs: int = 1
    """Passes over each rollout batch."""
    mini_batch_size: int = 64
    """Step samples per optimizer step."""
    micro_batch_tokens: int | None = 4096
    """Padded tokens per forward/backward pass: a mini-batch runs as micro-batches within
    this budget with gradients accumulated (same loss, bounded activation memory; None:
    the whole mini-batch in one pass)."""
    clip_low: float = 0.2
    """PPO epsilon below 1."""
    clip_high: float = 0.2
    """PPO epsilon above 1."""
    dual_clip: float = 3.0
    """Dual-clip constant c for negative advantages."""
    loss_agg: str = "token-mean"
    """token-mean, seq-mean-token-mean or seq-mean-token-sum."""
    std_normalize: bool = True
    """Advantages divided by the group std (False: mean-only); for GiGPO both the episode
    and the step term (the official code's mean_std_norm / mean_norm)."""
    kl_coef: float = 0.01
    """Weight of the low-variance KL to the reference (Stage-1) policy."""
    opd_coef: float = 0.01
    """Weight of the gated on-policy distillation loss (SEED)."""
    gate_beta: float = 5.0
    """Sharpness of the distillation gate sigmoid(beta * gap)."""
    opid_weight: float = 0.001
    """OPID: weight of (l_skill - l_old) folded into the token advantage."""
    gigpo_step_weight: float = 1.0
    """GiGPO: weight of the step-level (anchor-group) advantage."""
    gigpo_gamma: float = 0.95
    """GiGPO: discount of the step return."""
    gigpo_similarity_threshold: float | None = None
    """GiGPO: None = exact anchor matching; else difflib ratio for fuzzy anchor groups."""
    skill_source: str = "on_policy"
    """SEED skills: on_policy (the current policy writes them) or fixed_bank (ablation)."""
    distill: bool = True
    """SEED: False drops the distillation loss (ablation: plain GRPO from Stage 1)."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm."""
    eval_every: int = 0
    """Held-out evaluation every this many updates and after the last (0: never; the
    evaluation pipeline evaluates the final policy anyway)."""
    checkpoint_every: int = 1
    """Checkpoint every this many updates (resume continues from the last one)."""
    async_rollouts: bool = False
    """Generate rollouts in a second process (``training.async_rollouts``) while the learner
    trains, with decoupled PPO on stale samples; False: the synchronous loop."""
    async_max_staleness: int = 1
    """Async: how many policy versions generation may run ahead of the learner (the bound on
    learner version minus behaviour version; 0: lock-step, the synchronous loop's results
    when the worker and the learner use the same number of torch threads)."""
    async_worker_threads: int = 1
    """Async: torch intra-op threads of the rollout worker process."""
    async_behaviour_weight_cap: float | None = None
    """Async: upper bound of the decoupled-PPO weight pi_prox / pi_behav (None: no cap)."""

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"training.rl.algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        if self.skill_source not in SKILL_SOURCES:
            raise ValueError(f"training.rl.skill_source must be one of {SKILL_SOURCES}, got {self.skill_source!r}")
        if not 0 < self.task_fraction <= 1:
            raise ValueError(f"training.rl.task_fraction must be in (0, 1], got {self.task_fraction}")
        if self.micro_batch_tokens is not None and self.micro_batch_tokens < 1:
            raise ValueError(f"training.rl.micro_batch_tokens must be a positive token count or null, got {self.micro_batch_tokens}")
        if self.async_max_staleness < 0 or self.async_worker_threads < 1:
            raise ValueError(
                "training.rl.async_max_staleness must be >= 0 and training.rl.async_worker_threads >= 1, got "
                f"{self.async_max_staleness} and {self.async_worker_threads}"
            )

    @property
    def uses_skills(self) -> bool:
        """Whether updates need skills and skill-augmented log-probs."""
        return self.algorithm == "opid" or (self.algorithm == "seed" and self.distill)
