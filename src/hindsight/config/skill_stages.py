"""Settings of the two hindsight stages, the skills stage (``parameters_skills.yml``: the
rollouts a teacher writes skills about, the validation filter, an OpenAI-compatible teacher)
and Stage 1 (``parameters_stage1.yml``: its mixture, the teacher fit and the premise check),
one dataclass per file as in ``config.stages``, which holds the other stages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hindsight.params import build
from hindsight.policy.generation import SamplingConfig, sampling_changes
from hindsight.training.sft import SFTConfig

@dataclass
class OpenAIEndpointConfig:
    """An OpenAI-compatible chat endpoint as the Stage-1 teacher (key: ``teacher_credentials``)."""

    base_url: str = "http://127.0.0.1:8000/v1"
    model: str = "Qwen2.5-7B-Instruct"
    timeout_s: float = 60.0
    """Seconds without data before an attempt is given up (also the longest a body may take)."""
    max_retries: int = 3
    """Retries after the first attempt, for timeouts, connection errors, HTTP 429 and 5xx
    (not for other 4xx or a malformed 200)."""
    backoff_s: float = 2.0
    """Delay before the first retry; doubles after each."""
    max_concurrency: int = 4
    sampling: dict[str, Any] = field(default_factory=lambda: {"temperature": 0.0})
    """How the endpoint decodes: changes to ``policy.generation.SamplingConfig``, of which
    only ``temperature`` is sent with each request (greedy by default)."""
    circuit_breaker: int = 5
    """After this many episodes in a row got no answer, the endpoint is taken as down: the
    rest are not sent and get ``skills.teacher_fallback`` (0: always try every episode)."""

    def __post_init__(self) -> None:
        if self.timeout_s <= 0 or self.backoff_s < 0:
            raise ValueError(
                f"skills.openai: timeout_s must be > 0 and backoff_s >= 0, got {self.timeout_s} and {self.backoff_s}"
            )
        if self.max_retries < 0 or self.circuit_breaker < 0 or self.max_concurrency < 1:
            raise ValueError("skills.openai: max_retries and circuit_breaker must be >= 0, max_concurrency >= 1")
        self.sampling = sampling_changes(self.sampling, "skills.openai.sampling")
        if set(self.sampling) - {"temperature"}:
            raise ValueError(f"skills.openai.sampling: the endpoint is sent only its temperature, got {sorted(self.sampling)}")

    def decoding(self) -> SamplingConfig:
        """The endpoint's decoding: ``sampling`` over greedy decoding."""
        return build(SamplingConfig, self.sampling, "skills.openai.sampling", defaults=SamplingConfig(temperature=0.0))


@dataclass
class ValidationConfig:
    """The validation filter: keep a skill only if, injected into the prompt, it raises
    successes on M re-rollouts of its task by >= ``min_success_gain`` and the success rate
    by >= ``min_rate_gain`` over the plain rollouts."""

    enabled: bool = True
    """Run the filter (false: keep every parsed skill). Each such switch turns on its own piece:
    ``CurriculumSettings.enabled`` the RL curriculum, ``AsyncSettings.enabled`` rollouts played
    ahead of the update."""
    rollouts: int = 8
    """M: re-rollouts per skill (paper: 8; with 4, one extra success is already +0.25 and
    the rate test never decides anything)."""
    min_success_gain: int = 1
    min_rate_gain: float = 0.125


TEACHERS = ("rule_miner", "openai", "policy")
TEACHER_FALLBACKS = ("rule_miner", "none", "error")


ANALYZER_SFT_SOURCES = ("accepted", "parsed", "every_episode")


@dataclass
class SkillsConfig:
    """``parameters_skills.yml``: Stage 1, steps 1-4 (rollouts, teacher, validation, SFT set)."""

    tasks_per_game: int = 3
    """Training tasks per game the base policy plays (the first train-fold seeds)."""
    rollouts_per_task: int = 8
    """K: base-policy rollouts per task (paper: 8)."""
    sampling: dict[str, Any] = field(default_factory=lambda: {"temperature": 0.4})
    """How those rollouts and the validation re-rollouts decode: changes to the shared
    ``rollout.sampling`` (keys of ``policy.generation.SamplingConfig``; the others are the
    shared block's)."""
    teacher: str = "rule_miner"
    """rule_miner (offline, default) | openai (any OpenAI-compatible endpoint) | policy."""
    openai: OpenAIEndpointConfig = field(default_factory=OpenAIEndpointConfig)
    """The endpoint, for ``teacher: openai``."""
    teacher_fallback: str = "rule_miner"
    """What an episode the endpoint could not answer (after the retries) gets, for ``teacher:
    openai``: rule_miner (the offline teacher's skill; records say ``teacher: rule_miner``) |
    none (no skill) | error (same, but the run stops with a clear error once the endpoint is
    down: ``openai.circuit_breaker`` episodes in a row, or every episode, got no answer)."""
    validation: ValidationConfig = field(default_factory=ValidationConfig)
    """The validation filter."""
    analyzer_sft_from: str = "every_episode"
    """The analyzer SFT set is built from the accepted skills (``accepted``: the paper), from
    every parsed one (``parsed``), or (``every_episode``: route A, the default) from the rule
    teacher of the ``analyzer`` language, one skill for every expert episode and every
    base-policy rollout (the teacher's skills are still validated and kept for the bank)."""
    analyzer_heldout_fraction: float = 0.1
    """Share of the analyzer SFT episodes held out (never trained on): Stage 1 reports the
    analyzer's parse rate and exact match on them (paper: 10%)."""

    def __post_init__(self) -> None:
        self.sampling = sampling_changes(self.sampling, "skills.sampling")
        if self.teacher not in TEACHERS:
            raise ValueError(f"skills.teacher must be one of {TEACHERS}, got {self.teacher!r}")
        if self.teacher_fallback not in TEACHER_FALLBACKS:
            raise ValueError(
                f"skills.teacher_fallback must be one of {TEACHER_FALLBACKS}, got {self.teacher_fallback!r}"
            )
        if self.analyzer_sft_from not in ANALYZER_SFT_SOURCES:
            raise ValueError(
                f"skills.analyzer_sft_from must be one of {ANALYZER_SFT_SOURCES}, got {self.analyzer_sft_from!r}"
            )
        if not 0.0 <= self.analyzer_heldout_fraction < 1.0:
            raise ValueError(f"skills.analyzer_heldout_fraction must be in [0, 1), got {self.analyzer_heldout_fraction}")


def _stage1_sft() -> SFTConfig:
    return SFTConfig(learning_rate=0.001, batch_size=8, max_steps=250, bf16_autocast="auto")


def _teacher_fit_sft() -> SFTConfig:
    return SFTConfig(learning_rate=0.0005, batch_size=16, max_steps=300, bf16_autocast="auto")


@dataclass
class TeacherFitConfig:
    """``stage1.teacher_fit``: after Stage 1's SFT, fit the teacher on the policy's own
    episodes (``stage1.teacher_fit``): the policy plays training tasks, writes its own skill
    for each won episode, and trains on every step of those episodes with and without the
    skill, beside the Stage-1 mixture. Step-wise layout only."""

    episodes_per_game: int = 0
    """Training tasks per game the policy plays (one episode each; 0: no fit, the Stage-1
    checkpoint is the SFT one)."""
    sampling: dict[str, Any] = field(default_factory=lambda: {"temperature": 1.0})
    """How those episodes decode: changes to the shared ``rollout.sampling`` (keys of
    ``policy.generation.SamplingConfig``; RL's training rollouts sample at 1.0). The
    temperature must be above 0."""
    repeat: int = 1
    """Copies of the fit pairs beside one copy of the Stage-1 mixture."""
    unrelated: bool = False
    """Also each step with the skill of a won episode of another task type, the played
    action the target (the teacher learns to leave a skill that does not fit alone)."""
    sft: SFTConfig = field(default_factory=_teacher_fit_sft)
    """The SFT run of the fit, continuing from the Stage-1 SFT checkpoint."""

    def __post_init__(self) -> None:
        if self.episodes_per_game < 0 or self.repeat < 1:
            raise ValueError(
                "stage1.teacher_fit: episodes_per_game must be >= 0 and repeat >= 1, "
                f"got {self.episodes_per_game!r} and {self.repeat!r}"
            )
        self.sampling = sampling_changes(self.sampling, "stage1.teacher_fit.sampling")
        if self.sampling.get("temperature", 1.0) <= 0:
            raise ValueError(f"stage1.teacher_fit.sampling.temperature must be > 0, got {self.sampling['temperature']!r}")


@dataclass
class Stage1Config:
    """``parameters_stage1.yml``: Stage 1 of SEED from the base policy: behaviour cloning +
    skill-conditioned behaviour cloning + analyzer SFT (-> the Stage-1 checkpoint)."""

    sft: SFTConfig = field(default_factory=_stage1_sft)
    """The SFT run on the mixture."""
    behaviour_cloning: bool = True
    """The mixture holds behaviour cloning and skill-conditioned behaviour cloning on every
    expert step (our reading, measured for the tiny policy); false: neither (the official
    release's Stage 1 is analyzer SFT only, ``conf/seed_release``)."""
    analyzer_repeat: int = 1
    """Copies of the analyzer SFT set in the mixture."""
    own_rollout_repeat: int = 0
    """Copies of hindsight skill use on the base policy's own won skills-stage rollouts in
    the mixture: every step of such an episode, its own skill injected (written from that
    very episode), the played action as the target. 0: none (the mixture has skill-conditioned
    behaviour cloning on expert steps only)."""
    counterfactual_repeat: int = 0
    """Copies of counterfactual skill use in the mixture (``stage1.counterfactual``): expert
    steps whose action the skill lists, that item swapped for another valid action, which
    becomes the target, so only the skill tells the action (copy k draws with seed k).
    Step-wise layout only. 0: none."""
    reorder_repeat: int = 0
    """Copies of order examples (``stage1.counterfactual.reorder_examples``): at an expert
    step whose state also allows an action the skill lists later, the two items trade places
    in the skill and the later one becomes the target, so the skill's order decides between
    actions the state allows (copy k draws with seed k). Step-wise layout only. 0: none."""
    unrelated_repeat: int = 0
    """Copies of ignoring examples (``stage1.counterfactual.unrelated_skill_examples``): every
    expert step with the skill of another task type's episode, the expert's action still the
    target, so a skill that does not fit changes nothing. 0: none."""
    premise_tasks_per_game: int = 5
    """Held-out (seen-split) tasks per game on which the premise check plays and re-scores
    after Stage 1 (0: skip the check)."""
    premise_copy_pairs: int = 200
    """Most (step, action) pairs of the premise check's copy test (``stage1.premise_copy``):
    on the won episodes' steps, a valid action X scored under a skill naming X and under one
    naming another valid action of the step; each pair costs two scoring passes of one step
    (0: no copy test)."""
    premise_ranking: bool = True
    """Whether the premise check also measures the ranking of SEED's shift
    (``stage1.premise_ranking``): on steps where the environment labels optimal actions
    (exact on TextWorldExpress coin, the gold solver's next action elsewhere as a proxy),
    the AUROC of log p(a | skill) - log p(a) for optimal against suboptimal actions; every
    valid action of a ranked step costs one plain and one scoring pass per source."""
    premise_ranking_steps: int = 0
    """Most ranked steps the ranking scores (a seeded draw; 0: every ranked step)."""
    premise_tasks_per_piece: int = 0
    """Tasks per piece of the premise check (``stage1.premise_pieces``): the plays, then the
    scoring, run piece by piece, each piece kept under ``premise_pieces_dir`` as it finishes,
    so a killed run continues where it stopped when run again (0: one piece, nothing kept)."""
    premise_pieces_dir: str = "data/07_model_output/premise_pieces"
    """Where the premise check's finished pieces are kept: one subdirectory per policy and
    settings (a hash of the policy's weights, the rollout and analyzer settings, the seed and
    the piece size), its pieces named by their tasks; read only when
    ``premise_tasks_per_piece`` > 0."""
    teacher_fit: TeacherFitConfig = field(default_factory=TeacherFitConfig)
    """The teacher fit on the policy's own episodes after the SFT (off by default)."""

    def __post_init__(self) -> None:
        for name in (
            "analyzer_repeat", "own_rollout_repeat", "counterfactual_repeat", "reorder_repeat", "unrelated_repeat",
            "premise_tasks_per_game", "premise_copy_pairs", "premise_tasks_per_piece", "premise_ranking_steps",
        ):
            if getattr(self, name) < 0:  # the type is checked by params.build
                raise ValueError(f"stage1.{name} must be >= 0, got {getattr(self, name)!r}")
        if not isinstance(self.behaviour_cloning, bool):
            raise ValueError(f"stage1.behaviour_cloning must be true or false, got {self.behaviour_cloning!r}")
