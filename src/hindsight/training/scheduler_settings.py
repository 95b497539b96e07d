"""The schedulers' settings (``training.rl.schedulers.<name>``), one dataclass per block, and
``SchedulerSettings``, which holds them all and refuses the blocks that do not combine.

Every scheduler is off by default. The blocks are plain settings, apart from the pieces that
use them: the run's settings (``training.rl_config.RLConfig.schedulers``) hold them, the
method interface reads them (``training.method``), and each piece is built from its own
block by ``training.schedule.Schedule.from_settings`` (STEPO: ``training.stepo``; ODYSSE:
``training.minibatches`` and ``training.espo_update``; asynchronous rollouts:
``training.async_rollouts``; the backend correction: ``training.backend_correction``; the
curriculum and the pass-rate estimates are the rollout's: ``rollout.curriculum``,
``rollout.pass_rates``). What each setting does is said in those modules' docstrings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hindsight.rollout.curriculum import CurriculumSettings
from hindsight.rollout.pass_rates import PassRateSettings

ENGINES = ("process", "ray")
"""``async_rollouts.engine``: one worker process, or ``workers`` Ray actors."""


@dataclass
class StepoSettings:
    """STEPO's schedulers (``training.rl.schedulers.stepo``; ``training.stepo``'s docstring)."""

    step_weights: bool = False
    """Weight each step sample's PPO term by 1/T_i (T_i = its episode's samples in the
    batch), rescaled to mean 1, so every episode carries equal total weight (our reading)."""
    filter_zero_variance: bool = False
    """Drop groups whose episode returns are all equal and roll out more tasks to refill the
    batch to ``tasks_per_update`` groups."""
    filter_max_rounds: int = 2
    """Filtering: at most this many extra rollout rounds per update to refill."""
    pass_rate_band: tuple[float, float] | None = None
    """Pass-rate calibration: draw only tasks whose pass-rate estimate lies strictly inside
    (low, high), e.g. [0.0, 1.0] (unseen tasks count as inside); None: off."""

    def __post_init__(self) -> None:
        if self.filter_max_rounds < 0:
            raise ValueError(f"training.rl.schedulers.stepo.filter_max_rounds must be >= 0, got {self.filter_max_rounds}")
        band = self.pass_rate_band
        if band is not None:  # a YAML list becomes the (low, high) tuple
            band = self.pass_rate_band = tuple(float(value) for value in band)
        if band is not None and (len(band) != 2 or not 0.0 <= band[0] < band[1] <= 1.0):
            raise ValueError(
                f"training.rl.schedulers.stepo.pass_rate_band must be [low, high] with 0 <= low < high <= 1, got {band}"
            )


@dataclass
class OdysseSettings:
    """ODYSSE (``training.rl.schedulers.odysse``; our reading, docs/fidelity.md)."""

    episode_minibatches: bool = False
    """Episodic sampler: every step sample of one episode goes into the same mini-batch
    (``training.minibatches``)."""
    objective: str = "token"
    """The policy loss: token (token-level PPO clip) or espo (our reading of ODYSSE's
    episode-level objective: one clipped ratio per episode, the geometric mean of its token
    ratios, advantages re-centred over the mini-batch's episodes; ``training.espo_update``); espo needs
    ``episode_minibatches: true``."""

    def __post_init__(self) -> None:
        if self.objective not in ("token", "espo"):
            raise ValueError(f"training.rl.schedulers.odysse.objective must be token or espo, got {self.objective!r}")
        if self.objective == "espo" and not self.episode_minibatches:
            raise ValueError(
                "training.rl.schedulers.odysse.objective: espo needs whole episodes per mini-batch: set "
                "training.rl.schedulers.odysse.episode_minibatches: true (or objective: token)"
            )


@dataclass
class AsyncSettings:
    """Asynchronous rollouts (``training.rl.schedulers.async_rollouts``; ``training.async_rollouts``'s docstring)."""

    enabled: bool = False
    """Generate rollouts in a second process while the learner trains, with decoupled PPO on
    stale samples; False: the synchronous loop."""
    max_staleness: int = 1
    """How many policy versions generation may run ahead of the learner (the bound on
    learner version minus behaviour version; 0: lock-step, the synchronous loop's results
    when the worker and the learner use the same number of torch threads)."""
    worker_threads: int = 1
    """Torch intra-op threads of the rollout worker process."""
    behaviour_weight_cap: float | None = None
    """Upper bound of the decoupled-PPO weight pi_prox / pi_behav (None: no cap)."""
    mini_groups: int = 0
    """Our reading of EvoCUA's mini-groups (``training.async_batches``): whole groups per
    worker message; the learner assembles an update from them as they arrive and the worker
    takes newer weights between them (0: one message per rollout round)."""
    engine: str = "process"
    """Who plays the rollouts: ``process`` (one worker process, fed through queues) or
    ``ray`` (``workers`` Ray actors, ``training.ray_rollouts``; the weights go through Ray's
    object store once per version). Not ``rollout.backend``, the generation backend that
    plays each episode's turns."""
    workers: int = 1
    """Ray actors playing the rollouts (``engine: ray``; each request's tasks are divided
    among them). Not ``ExperimentsConfig``'s grid workers nor the data-collection
    ``workers``: those name processes of other stages."""
    ray_address: str | None = None
    """``engine: ray``: the cluster's head (``host:port`` or ``auto``); null starts a local
    instance for the run. ``ExperimentsConfig.ray_address`` is the grid's, set apart."""

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"training.rl.schedulers.async_rollouts.engine must be one of {ENGINES}, got {self.engine!r}")
        if self.workers < 1:
            raise ValueError(f"training.rl.schedulers.async_rollouts.workers must be >= 1, got {self.workers}")
        if self.workers > 1 and self.engine != "ray":
            raise ValueError(
                f"training.rl.schedulers.async_rollouts.workers: {self.workers} needs engine: ray (the process engine has one worker)"
            )
        if self.max_staleness < 0 or self.worker_threads < 1:
            raise ValueError(
                "training.rl.schedulers.async_rollouts.max_staleness must be >= 0 and worker_threads >= 1, got "
                f"{self.max_staleness} and {self.worker_threads}"
            )
        if self.mini_groups < 0:
            raise ValueError(
                f"training.rl.schedulers.async_rollouts.mini_groups must be >= 0 (0: one message per round), got {self.mini_groups}"
            )
        if self.behaviour_weight_cap is not None and self.behaviour_weight_cap <= 0:
            raise ValueError(
                f"training.rl.schedulers.async_rollouts.behaviour_weight_cap must be > 0 or null, got {self.behaviour_weight_cap}"
            )


@dataclass
class BackendCorrectionSettings:
    """The correction for an inexact rollout backend (``training.rl.schedulers.backend_correction``;
    ``training.backend_correction``'s docstring)."""

    weight_cap: float | None = 2.0
    """A rollout backend whose log-probs are not the learner's (``rollout.backend:
    ctranslate2`` in int8): the truncated importance weight pi_learner / pi_engine of the
    decoupled-PPO update is capped here (None: no cap). Ignored with the torch backend."""

    def __post_init__(self) -> None:
        if self.weight_cap is not None and self.weight_cap <= 0:
            raise ValueError(f"training.rl.schedulers.backend_correction.weight_cap must be > 0 or null, got {self.weight_cap}")


@dataclass
class SchedulerSettings:
    """The schedulers of the core loop (``training.rl.schedulers``), one block each; every
    one off by default (``training.schedule``'s docstring: what each piece does and which
    combinations are refused)."""

    stepo: StepoSettings = field(default_factory=StepoSettings)
    """STEPO (``training.stepo``): step weights, the zero-variance filter, the pass-rate band."""
    curriculum: CurriculumSettings = field(default_factory=CurriculumSettings)
    """The task curriculum and its positive replay (``rollout.curriculum``, ``training.positive_replay``)."""
    pass_rates: PassRateSettings = field(default_factory=PassRateSettings)
    """The per-task pass-rate estimates the curriculum and STEPO's band read (``rollout.pass_rates.PassRates``)."""
    odysse: OdysseSettings = field(default_factory=OdysseSettings)
    """ODYSSE: the episodic sampler (``training.minibatches``) and the ESPO objective (``training.espo_update``)."""
    async_rollouts: AsyncSettings = field(default_factory=AsyncSettings)
    """Rollouts generated ahead by a worker process (``training.async_rollouts``)."""
    backend_correction: BackendCorrectionSettings = field(default_factory=BackendCorrectionSettings)
    """Decoupled PPO against an inexact rollout backend (``training.backend_correction``)."""

    def __post_init__(self) -> None:
        curriculum, espo = self.curriculum, self.odysse.objective == "espo"
        if self.stepo.pass_rate_band is not None and curriculum.enabled:
            raise ValueError(
                "training.rl.schedulers.stepo.pass_rate_band and training.rl.schedulers.curriculum.enabled both choose the tasks: set one"
            )
        if espo and self.async_rollouts.enabled:
            raise ValueError(
                "training.rl.schedulers.odysse.objective: espo does not combine with "
                "training.rl.schedulers.async_rollouts.enabled (set one)"
            )
        if espo and curriculum.enabled and curriculum.positive_replay:
            raise ValueError(
                "training.rl.schedulers.odysse.objective: espo has no decoupled form for replayed successes: set "
                "training.rl.schedulers.curriculum.positive_replay: false (or objective: token)"
            )
