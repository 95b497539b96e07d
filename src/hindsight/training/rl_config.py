"""Settings of the core RL loop (``training.loop.train_rl``): one documented dataclass.

What every method shares lives here: the batch (tasks, group size), the PPO update (its
clip and loss aggregation in the block ``ppo``), the KL to the reference, checkpoints,
evaluation and the rollout weights (the block ``rollout_weights``). Two kinds of settings
live elsewhere and are given in blocks: a method's own (``hindsight.methods.<name>.Settings``,
under ``methods.<name>``; the method is picked by ``algorithm``,
``hindsight.methods.registry``) and the schedulers' that choose tasks, keep groups, weigh
samples, order mini-batches and play ahead (``schedulers.<name>``: STEPO, the curriculum,
the pass-rate estimates, ODYSSE, asynchronous rollouts, the backend correction; each a
dataclass in ``training.scheduler_settings``, gathered in its ``SchedulerSettings``).

Defaults follow the papers wherever they carry over to a tiny CPU policy; the learning
rate, the number of updates and the batch size are scaled to the embedded default;
``conf/base/parameters_training.yml`` restates the core loop's defaults (not the methods'
or the schedulers': those live in their modules only, ``docs/configuration.md`` lists them).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from hindsight.params import ParameterError, build
from hindsight.training.scheduler_settings import SchedulerSettings

END_POLICIES = ("last", "best_seen")
"""The values of ``training.rl.end_policy`` (``training.end_selection``)."""

LOSS_AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum")


@dataclass
class PPOSettings:
    """The PPO term (``training.rl.ppo``): the clip, and how every loss term is aggregated."""

    clip_low: float = 0.2
    """PPO epsilon below 1."""
    clip_high: float = 0.2
    """PPO epsilon above 1."""
    dual_clip: float = 3.0
    """Dual-clip constant c for negative advantages."""
    loss_agg: str = "token-mean"
    """token-mean, seq-mean-token-mean or seq-mean-token-sum: how the PPO term, and with it
    the KL, the entropy bonus and the method's terms, are aggregated over tokens (verl's
    ``loss_agg_mode``)."""

    def __post_init__(self) -> None:
        if self.loss_agg not in LOSS_AGGREGATIONS:
            raise ValueError(f"training.rl.ppo.loss_agg must be one of {LOSS_AGGREGATIONS}, got {self.loss_agg!r}")
        if self.clip_low < 0 or self.clip_high < 0 or self.dual_clip <= 1:
            raise ValueError(
                "training.rl.ppo.clip_low and clip_high must be >= 0 and dual_clip > 1, got "
                f"{self.clip_low}, {self.clip_high} and {self.dual_clip}"
            )


@dataclass
class RolloutWeights:
    """The weights the update's rollouts decode with (``training.rl.rollout_weights``)."""

    merge_lora: bool = True
    """Rollouts decode with a LoRA adapter merged into the weights, not through the unmerged
    adapter (``policy.inference``; 1.35x per decode step for 135M + LoRA, benchmarks/inference_weights.py)."""
    dtype: str = "float32"
    """float32, bfloat16 (a bf16 copy per update; the trainer stays fp32) or auto (bf16
    where the device has it natively). float32 by measurement: on a 2-core AVX512-BF16 CPU
    a bf16 decode step at batch 16 was 0.68-0.76x as fast."""

    def __post_init__(self) -> None:
        if self.dtype not in ("float32", "bfloat16", "auto"):
            raise ValueError(f"training.rl.rollout_weights.dtype must be float32, bfloat16 or auto, got {self.dtype!r}")



NESTED = ("ppo", "rollout_weights", "schedulers")
"""``RLConfig``'s blocks of settings, merged key by key by ``with_overrides``."""


@dataclass
class RLConfig:
    """Every knob of the core loop; one line of documentation under each."""

    algorithm: str = "seed"
    """The RL method (``hindsight.methods``): seed, grpo, gigpo, opid, empo (expert
    trajectories as the environment: ``kedro run --pipeline empo``), wmr1 (GRPO inside a
    learned world model: ``kedro run --pipeline wmr1``), or any registered method."""
    methods: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each method's own settings, by method name (``methods.seed.opd_coef``); a method
    not named here runs with its defaults. Keys are checked against the method's
    ``Settings`` when the parameters are read."""
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
    ppo: PPOSettings = field(default_factory=PPOSettings)
    """The PPO term's clip and the loss aggregation (``PPOSettings``)."""
    std_normalize: bool = True
    """Advantages divided by the group std (False: mean-only); for GiGPO both the episode
    and the step term (the official code's mean_std_norm / mean_norm)."""
    kl_coef: float = 0.01
    """Weight of the low-variance KL to the reference (Stage-1) policy."""
    entropy_coef: float = 0.0
    """Weight of the entropy bonus, any method: the loss adds ``-entropy_coef * H``, H the
    entropy of the policy's token distribution (restricted to the allowed ids under
    constrained decoding, as its log-probs are) over the response tokens it chose,
    aggregated as ``ppo.loss_agg``; logged as ``losses/entropy`` when not 0. The official SEED
    release: 0.001 (verl's ``entropy_coeff``; ``conf/seed_release``). 0 here: the default
    run was measured without it."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm."""
    eval_every: int = 0
    """Held-out evaluation every this many updates and after the last (0: never; the
    evaluation pipeline evaluates the final policy anyway)."""
    end_policy: str = "last"
    """Which policy the run ends with: ``last`` (after the last update) or ``best_seen`` (the
    held-out point, the start included, with the highest success on the seen split, mean over
    the decodings; needs ``eval_every`` > 0 and the seen split: ``training.end_selection``)."""
    checkpoint_every: int = 1
    """Checkpoint every this many updates (resume continues from the last one)."""
    action_labels: bool = True
    """Label each update's played steps optimal or not where the environment can
    (``training.played_labels``: exact on TextWorldExpress coin, the gold solver's next
    action elsewhere, a proxy; one environment reset per episode): logs ``labels/optimal_share``
    for every method, and SEED's gate on optimal against suboptimal actions
    (``opd/gate_push``, ``opd/shift_auroc``). false: no labelling."""
    rollout_weights: RolloutWeights = field(default_factory=RolloutWeights)
    """The weights the update's rollouts decode with (``RolloutWeights``)."""
    schedulers: SchedulerSettings = field(default_factory=SchedulerSettings)
    """The schedulers, one block each (``training.scheduler_settings.SchedulerSettings``): ``stepo``,
    ``curriculum``, ``pass_rates``, ``odysse``, ``async_rollouts``, ``backend_correction``;
    a block names only what differs from its defaults (every scheduler is off by default).
    A mapping given in Python is built the same way (as for ``ppo`` and ``rollout_weights``)."""

    def __post_init__(self) -> None:
        if not 0 < self.task_fraction <= 1:
            raise ValueError(f"training.rl.task_fraction must be in (0, 1], got {self.task_fraction}")
        if self.end_policy not in END_POLICIES:
            raise ValueError(f"training.rl.end_policy must be one of {list(END_POLICIES)}, got {self.end_policy!r}")
        if self.entropy_coef < 0:
            raise ValueError(f"training.rl.entropy_coef must be >= 0 (a bonus on the entropy), got {self.entropy_coef}")
        if self.micro_batch_tokens is not None and self.micro_batch_tokens < 1:
            raise ValueError(f"training.rl.micro_batch_tokens must be a positive token count or null, got {self.micro_batch_tokens}")
        for name, cls in (("ppo", PPOSettings), ("rollout_weights", RolloutWeights), ("schedulers", SchedulerSettings)):
            if isinstance(getattr(self, name), Mapping):  # a block given in Python
                setattr(self, name, build(cls, getattr(self, name), f"training.rl.{name}"))


def check_keys(overrides: Mapping[str, Any], where: str = "training.rl") -> None:
    """Refuse keys ``RLConfig`` does not have, naming them."""
    known = {f.name for f in dataclasses.fields(RLConfig) if f.init}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ParameterError(f"unknown key(s) {[f'{where}.{key}' for key in unknown]}; the known keys of '{where}' are {sorted(known)}")


def with_overrides(base: RLConfig, overrides: Mapping[str, Any], where: str = "training.rl") -> RLConfig:
    """``base`` with ``overrides`` applied; a ``methods`` override is merged method by method
    and key by key (``{"methods": {"seed": {"opd_coef": 1.0}}}`` keeps SEED's other settings),
    and a ``schedulers``, ``ppo`` or ``rollout_weights`` override key by key
    (``{"schedulers": {"stepo": {"step_weights": True}}}`` keeps every other scheduler setting).
    An unknown key is refused by name (``check_keys``)."""
    overrides = dict(overrides)
    check_keys(overrides, where)
    methods = {name: dict(values or {}) for name, values in base.methods.items()}
    for name, values in (overrides.pop("methods", None) or {}).items():
        methods[name] = {**methods.get(name, {}), **(values or {})}
    for name in NESTED:  # a block: its keys over the base's, checked against its dataclass
        block = overrides.get(name)
        if isinstance(block, Mapping):
            current = getattr(base, name)
            overrides[name] = build(type(current), block, f"{where}.{name}", defaults=current)
    return dataclasses.replace(base, **overrides, methods=methods)
