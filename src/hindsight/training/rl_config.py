"""Settings of the core RL loop (``training.rl.train_rl``): one documented dataclass.

What every method shares lives here: the batch (tasks, group size), the PPO update, the
KL to the reference, checkpoints, evaluation, the rollout weights, and the schedulers that
choose tasks, keep groups and order mini-batches (STEPO, the curriculum, ODYSSE,
asynchronous rollouts). A method's own settings live in its module
(``hindsight.methods.<name>.Settings``) and are given under ``methods.<name>``; the
method is picked by ``algorithm`` (``hindsight.methods.registry``).

Defaults follow the papers wherever they carry over to a tiny CPU policy; the learning
rate, the number of updates and the batch size are scaled to the embedded default;
``conf/base/parameters_training.yml`` restates these defaults.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


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
    entropy_coef: float = 0.0
    """Weight of the entropy bonus, any method: the loss adds ``-entropy_coef * H``, H the
    entropy of the policy's token distribution (restricted to the allowed ids under
    constrained decoding, as its log-probs are) over the response tokens it chose,
    aggregated as ``loss_agg``; logged as ``losses/entropy`` when not 0. The official SEED
    release: 0.001 (verl's ``entropy_coeff``; ``conf/seed_release``). 0 here: the default
    run was measured without it."""
    max_grad_norm: float = 1.0
    """Gradient clipping norm."""
    eval_every: int = 0
    """Held-out evaluation every this many updates and after the last (0: never; the
    evaluation pipeline evaluates the final policy anyway)."""
    checkpoint_every: int = 1
    """Checkpoint every this many updates (resume continues from the last one)."""
    rollout_merge_lora: bool = True
    """Rollouts decode with a LoRA adapter merged into the weights, not through the unmerged
    adapter (``policy.inference``; 1.35x per decode step for 135M + LoRA, benchmarks/inference_weights.py)."""
    rollout_dtype: str = "float32"
    """Weights rollouts decode with: float32, bfloat16 (a bf16 copy per update; the trainer
    stays fp32) or auto (bf16 where the device has it natively). float32 by measurement:
    on a 2-core AVX512-BF16 CPU a bf16 decode step at batch 16 was 0.68-0.76x as fast."""
    stepo_step_weights: bool = False
    """STEPO (our reading): weight each step sample's PPO term by 1/T_i (T_i = its episode's
    samples in the batch), rescaled to mean 1, so every episode carries equal total weight."""
    stepo_filter_zero_variance: bool = False
    """STEPO: drop groups whose episode returns are all equal and roll out more tasks to
    refill the batch to ``tasks_per_update`` groups (``training.stepo``)."""
    stepo_filter_max_rounds: int = 2
    """STEPO filtering: at most this many extra rollout rounds per update to refill."""
    stepo_pass_rate_band: tuple[float, float] | None = None
    """STEPO pass-rate calibration: draw only tasks whose pass-rate estimate lies strictly
    inside (low, high), e.g. [0.0, 1.0] (unseen tasks count as inside); None: off."""
    curriculum: bool = False
    """Task curriculum (``rollout.curriculum``): mix learnable tasks, hard successes (with
    their stored successes replayed) and a share of generated infeasible tasks instead of a
    uniform draw."""
    curriculum_infeasible_share: float = 0.125
    """Curriculum: share drawn from generated infeasible variants of the pool's tasks (the
    goal names an absent object; ``envs.infeasible``); above 0, every task drawn offers the
    action ``declare infeasible``."""
    curriculum_replay_share: float = 0.25
    """Curriculum: share drawn from hard successes (solved once, estimate <= hard threshold)."""
    curriculum_hard_threshold: float = 0.25
    """Curriculum: a solved task whose pass-rate estimate is at most this counts as hard."""
    curriculum_positive_replay: bool = True
    """Curriculum: difficult positive replay, each hard-success group swaps one rollout for
    its task's stored won episode (``training.positive_replay``)."""
    pass_rate_smoothing: float = 0.5
    """Weight of the newest group's success rate in a task's pass-rate estimate (EMA)."""
    odysse_episode_minibatches: bool = False
    """ODYSSE sampler: every step sample of one episode goes into the same mini-batch."""
    odysse_objective: str = "token"
    """ODYSSE's policy loss: token (token-level PPO clip) or espo (our reading of its
    episode-level objective: one clipped ratio per episode, the geometric mean of its token
    ratios, advantages re-centred over the mini-batch's episodes; ``training.espo_update``);
    espo needs ``odysse_episode_minibatches: true``."""
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
    """Async and the curriculum's positive replay: upper bound of the decoupled-PPO weight
    pi_prox / pi_behav (None: no cap)."""
    sampler_weight_cap: float | None = 2.0
    """A rollout backend whose log-probs are not the learner's (``rollout.backend:
    ctranslate2`` in int8): the learner recomputes the rollout's log-probs before the update
    and the loss is decoupled PPO with the engine as the behaviour policy, the truncated
    importance weight pi_learner / pi_engine capped here (None: no cap). Ignored with the
    torch backend, whose log-probs are the learner's."""
    async_mini_groups: int = 0
    """Async (our reading of EvoCUA's mini-groups, ``training.async_batches``): whole groups
    per worker message; the learner assembles an update from them as they arrive and the
    worker takes newer weights between them (0: one message per rollout round)."""

    def __post_init__(self) -> None:
        if not 0 < self.task_fraction <= 1:
            raise ValueError(f"training.rl.task_fraction must be in (0, 1], got {self.task_fraction}")
        if self.rollout_dtype not in ("float32", "bfloat16", "auto"):
            raise ValueError(f"training.rl.rollout_dtype must be float32, bfloat16 or auto, got {self.rollout_dtype!r}")
        if self.entropy_coef < 0:
            raise ValueError(f"training.rl.entropy_coef must be >= 0 (a bonus on the entropy), got {self.entropy_coef}")
        if self.micro_batch_tokens is not None and self.micro_batch_tokens < 1:
            raise ValueError(f"training.rl.micro_batch_tokens must be a positive token count or null, got {self.micro_batch_tokens}")
        self._check_task_schedule()
        self._check_objective()

    def _check_objective(self) -> None:
        """ODYSSE's objective (``training.espo_update``)."""
        if self.odysse_objective not in ("token", "espo"):
            raise ValueError(f"training.rl.odysse_objective must be token or espo, got {self.odysse_objective!r}")
        if self.odysse_objective == "espo" and not self.odysse_episode_minibatches:
            raise ValueError(
                "training.rl.odysse_objective: espo needs whole episodes per mini-batch: set "
                "training.rl.odysse_episode_minibatches: true (or odysse_objective: token)"
            )
        if self.odysse_objective == "espo" and self.async_rollouts:
            raise ValueError("training.rl.odysse_objective: espo does not combine with training.rl.async_rollouts (set one)")
        if self.odysse_objective == "espo" and self.curriculum and self.curriculum_positive_replay:
            raise ValueError(
                "training.rl.odysse_objective: espo has no decoupled form for replayed successes: set "
                "training.rl.curriculum_positive_replay: false (or odysse_objective: token)"
            )

    def _check_task_schedule(self) -> None:
        """The STEPO and curriculum settings (``rollout.curriculum``, ``training.stepo``)."""
        if self.stepo_filter_max_rounds < 0:
            raise ValueError(f"training.rl.stepo_filter_max_rounds must be >= 0, got {self.stepo_filter_max_rounds}")
        band = self.stepo_pass_rate_band
        if band is not None:  # a YAML list becomes the (low, high) tuple
            band = self.stepo_pass_rate_band = tuple(float(value) for value in band)
        if band is not None and (len(band) != 2 or not 0.0 <= band[0] < band[1] <= 1.0):
            raise ValueError(f"training.rl.stepo_pass_rate_band must be [low, high] with 0 <= low < high <= 1, got {band}")
        if band is not None and self.curriculum:
            raise ValueError("training.rl.stepo_pass_rate_band and training.rl.curriculum both choose the tasks: set one")
        shares = (self.curriculum_infeasible_share, self.curriculum_replay_share)
        if min(shares) < 0 or sum(shares) > 1:
            raise ValueError(
                "training.rl.curriculum_infeasible_share and curriculum_replay_share must be >= 0 and sum to at most 1, "
                f"got {shares}"
            )
        for name in ("curriculum_hard_threshold", "pass_rate_smoothing"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"training.rl.{name} must be in [0, 1], got {getattr(self, name)}")
        if self.pass_rate_smoothing == 0.0:
            raise ValueError("training.rl.pass_rate_smoothing must be > 0 (0 would never update an estimate)")
        self._check_async()

    def _check_async(self) -> None:
        """The asynchronous-rollout settings (``training.async_rollouts``)."""
        if self.async_max_staleness < 0 or self.async_worker_threads < 1:
            raise ValueError(
                "training.rl.async_max_staleness must be >= 0 and training.rl.async_worker_threads >= 1, got "
                f"{self.async_max_staleness} and {self.async_worker_threads}"
            )
        if self.async_mini_groups < 0:
            raise ValueError(f"training.rl.async_mini_groups must be >= 0 (0: one message per round), got {self.async_mini_groups}")


def with_overrides(base: RLConfig, overrides: dict[str, Any]) -> RLConfig:
    """``base`` with ``overrides`` applied; a ``methods`` override is merged method by method
    and key by key (``{"methods": {"seed": {"opd_coef": 1.0}}}`` keeps SEED's other settings)."""
    overrides = dict(overrides)
    methods = {name: dict(values or {}) for name, values in base.methods.items()}
    for name, values in (overrides.pop("methods", None) or {}).items():
        methods[name] = {**methods.get(name, {}), **(values or {})}
    return dataclasses.replace(base, **overrides, methods=methods)
