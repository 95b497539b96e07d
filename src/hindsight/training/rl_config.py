"""Settings of the RL loop (SEED, GRPO, GiGPO, OPID, EMPO): one documented dataclass.

Defaults follow ALGORITHMS.md (paper settings) wherever they carry over to a tiny CPU
policy; the learning rate, the number of updates and the batch size are scaled to the
embedded default; ``conf/base/parameters_training.yml`` restates these defaults. The run's
seed and the analyzer settings come from the shared settings (``hindsight.config``).
"""

from __future__ import annotations

from dataclasses import dataclass

from hindsight.algorithms.losses import DISTILL_GATES
from hindsight.skills.assignment import SKILL_ASSIGNMENTS

ALGORITHMS = ("seed", "grpo", "gigpo", "opid", "empo", "wmr1")
SKILL_SOURCES = ("on_policy", "fixed_bank")


@dataclass
class RLConfig:
    """Every knob of one RL run; one line of documentation under each."""

    algorithm: str = "seed"
    """seed (PPO + gated on-policy distillation), grpo, gigpo, opid, empo (expert
    trajectories as the environment: ``kedro run --pipeline empo``) or wmr1 (GRPO inside a
    learned world model: ``kedro run --pipeline wmr1``)."""
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
    distill_gate: str = "sigmoid"
    """SEED's distillation gate: sigmoid (g = sigmoid(gate_beta * gap)) or ungated (the
    control: g = 1 on every distilled token, naive on-policy self-distillation; the
    ``opd/gate_*`` metrics then read 1)."""
    opid_weight: float = 0.001
    """OPID: weight of (l_skill - l_old) folded into the token advantage."""
    gigpo_step_weight: float = 1.0
    """GiGPO: weight of the step-level (anchor-group) advantage."""
    gigpo_gamma: float = 0.95
    """GiGPO: discount of the step return."""
    gigpo_similarity_threshold: float | None = None
    """GiGPO: None = exact anchor matching; else difflib ratio for fuzzy anchor groups."""
    empo_gamma: float = 0.5
    """EMPO: discount of the step return, which breaks at mismatched steps (released script: 0.5)."""
    empo_step_weight: float = 1.0
    """EMPO: weight of the step-level advantage (same task, same step index); the episode term weighs 1."""
    skill_source: str = "on_policy"
    """SEED skills: on_policy (the current policy writes them) or fixed_bank (ablation)."""
    skill_assignment: str = "own"
    """Which skill an episode is re-scored (distilled) with: own (the one written for it) or
    unrelated (the control: the skills are written as usual, then each episode with a skill
    gets one written for an episode of another task type in the batch, where there is one,
    ``skills.assignment``; logged as ``opd/skill_unrelated_share``). SEED and OPID."""
    distill: bool = True
    """SEED: False drops the distillation loss (ablation: plain GRPO from Stage 1)."""
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
    """Task curriculum (``rollout.curriculum``): mix learnable tasks, replayed hard
    successes and a share of infeasible ones instead of a uniform draw."""
    curriculum_infeasible_share: float = 0.125
    """Curriculum: share of each update's tasks drawn from never-solved tasks."""
    curriculum_replay_share: float = 0.25
    """Curriculum: share drawn from hard successes (solved once, estimate <= hard threshold)."""
    curriculum_hard_threshold: float = 0.25
    """Curriculum: a solved task whose pass-rate estimate is at most this counts as hard."""
    pass_rate_smoothing: float = 0.5
    """Weight of the newest group's success rate in a task's pass-rate estimate (EMA)."""
    odysse_episode_minibatches: bool = False
    """ODYSSE sampler: every step sample of one episode goes into the same mini-batch."""
    wmr1_replay: bool = True
    """WM-R1: an all-failure group swaps one rollout for a stored success of its task."""
    wmr1_imagined_turns: int = 0
    """WM-R1 imagined turns, at most this many before each committed action (0: off; other
    algorithms ignore it). Our reading of "the policy may ask the world model what happens if
    I do X (bounded count)": the world-model environment also offers ``imagine: <a>`` for each
    valid action; choosing it shows the world model's prediction for ``a`` without playing it
    (``envs.world_model``). Such a turn is a step sample trained like any other; it counts in
    the episode's step limit and in its world-model calls (R_wm), not in its length (R_len)."""
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
        if self.distill_gate not in DISTILL_GATES:
            raise ValueError(f"training.rl.distill_gate must be one of {DISTILL_GATES}, got {self.distill_gate!r}")
        if self.skill_assignment not in SKILL_ASSIGNMENTS:
            raise ValueError(f"training.rl.skill_assignment must be one of {SKILL_ASSIGNMENTS}, got {self.skill_assignment!r}")
        if not 0 < self.task_fraction <= 1:
            raise ValueError(f"training.rl.task_fraction must be in (0, 1], got {self.task_fraction}")
        if self.rollout_dtype not in ("float32", "bfloat16", "auto"):
            raise ValueError(f"training.rl.rollout_dtype must be float32, bfloat16 or auto, got {self.rollout_dtype!r}")
        if self.wmr1_imagined_turns < 0:
            raise ValueError(f"training.rl.wmr1_imagined_turns must be >= 0 (0: off), got {self.wmr1_imagined_turns}")
        if self.micro_batch_tokens is not None and self.micro_batch_tokens < 1:
            raise ValueError(f"training.rl.micro_batch_tokens must be a positive token count or null, got {self.micro_batch_tokens}")
        self._check_task_schedule()

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
        if self.async_rollouts and (
            self.curriculum or self.stepo_pass_rate_band is not None or self.stepo_filter_zero_variance or self.algorithm == "wmr1"
        ):
            raise ValueError(
                "training.rl.async_rollouts draws every update's tasks in advance: it does not combine with "
                "curriculum, stepo_pass_rate_band, stepo_filter_zero_variance or algorithm wmr1"
            )
        if self.async_max_staleness < 0 or self.async_worker_threads < 1:
            raise ValueError(
                "training.rl.async_max_staleness must be >= 0 and training.rl.async_worker_threads >= 1, got "
                f"{self.async_max_staleness} and {self.async_worker_threads}"
            )

    @property
    def uses_skills(self) -> bool:
        """Whether updates need skills and skill-augmented log-probs."""
        return self.algorithm == "opid" or (self.algorithm == "seed" and self.distill)
