"""Settings of each stage, one dataclass per ``conf/*/parameters_<stage>.yml``, in run order:
ingestion -> behaviour_cloning -> skills -> stage1 -> training -> evaluation (and the
scoring pipeline; the experiment grid's settings are in ``config.experiments``).

Defaults live here and only here: ``conf/base`` restates them so a user sees every knob, and
a test checks that the YAML keys are these fields and its values these defaults. Library
settings (``SFTConfig``, ``RLConfig``, ``PromptConfig``, ``RewardConfig``, ``LoraSettings``,
``HeldoutPlay``: a stage's held-out budget, splits and decodings, from ``evaluation.heldout``)
are nested as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hindsight.data.external_files import ExternalFile
from hindsight.envs.base import SPLITS
from hindsight.evaluation.heldout import HeldoutPlay
from hindsight.methods.registry import check_method_settings
from hindsight.policy.lora import LoraSettings
from hindsight.training.rl_config import RLConfig
from hindsight.training.sft import SFTConfig

@dataclass
class IngestionConfig:
    """``parameters_ingestion.yml``: the expert episodes and external trajectory files."""

    expert_episodes: dict[str, int] = field(default_factory=lambda: {"train": 100, "dev": 0, "test": 0})
    """Gold-path episodes per fold and game (the RL training tasks are the first
    ``training.tasks_per_game`` train seeds; held-out "seen" tasks lie after them)."""
    external_files: list[str | ExternalFile] = field(default_factory=list)
    """Extra trajectory files, relative to the project root: a path (JSONL / JSON / parquet;
    project schema or agent-SFT conversations), or a mapping ``{path, format, images}``
    (``format: gui``: GUI episodes with a screenshot per step, docs/gui_data.md)."""
    external_source: str = "expert"
    """The ``source`` given to conversation-format episodes."""
    assume_success: bool = True
    """Outcome of conversation-format episodes that state none: agent-SFT conversation sets
    hold successful demonstrations without an outcome field (how many were assumed is
    logged as ``ingestion/outcome_assumed_episodes``)."""

    def __post_init__(self) -> None:
        for split, count in self.expert_episodes.items():
            if split not in SPLITS:
                raise ValueError(f"ingestion.expert_episodes: unknown fold {split!r}; use {list(SPLITS)}")
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                raise ValueError(f"ingestion.expert_episodes.{split} must be a non-negative integer, got {count!r}")


@dataclass
class PolicyConfig:
    """Which policy behaviour cloning starts from."""

    model_dir: str | None = None
    """A local HF causal-LM directory (its own tokenizer; never downloaded), or null for
    the embedded tiny model built from scratch."""
    preset: str = "tiny"
    """Embedded model size (``ExperimentsConfig.preset`` names an experiment grid instead):
    tiny (~1M parameters, the default run and the tests) | small (~4M) | base (~30M). At the default run's step budget on a CPU, tiny learns the games
    better than small (docs/results.md, "The default run: tiny, without the valid-action list")."""
    architecture: str = "qwen2"
    """Embedded model architecture: qwen2 (default) | gpt_oss (alternating sliding-window and
    full attention layers with learned attention sinks, on the sink-aware FlexAttention)."""
    vocab_size: int = 2048
    """Vocabulary of the tokenizer trained on the training prompts (embedded model)."""
    dtype: str | None = None
    """Parameter dtype of a loaded model (float32 when null): the weights trained on.
    ``RolloutWeights.dtype`` is the dtype of the copy RL's rollouts decode with."""
    lora: LoraSettings | None = None
    """A LoRA adapter on a loaded model, e.g. {rank: 16, alpha: 32, dropout: 0.05,
    target_modules: [q_proj, v_proj]}; null = full fine-tuning."""
    from_pretrained_model: bool = False
    """Start from the catalog's ``pretrained_model`` (the pretrained route: ``kedro run
    --env pretrained --pipeline pretrained_model`` converts it once) instead of
    ``model_dir`` or the embedded model."""
    vision: bool = False
    """Give the embedded model a small screenshot encoder (``policy.screen_model``): each
    step's screen, where the environment renders one, becomes a few soft tokens at the end
    of the prompt. Off: the text view only. A ``model_dir`` holding an image-text-to-text
    model sees by itself (docs/vision_policies.md)."""

    def __post_init__(self) -> None:
        if self.from_pretrained_model and self.model_dir:
            raise ValueError("policy: set model_dir or from_pretrained_model, not both")
        if self.architecture not in ("qwen2", "gpt_oss"):
            raise ValueError(f"policy.architecture must be qwen2 or gpt_oss, got {self.architecture!r}")
        if self.vision and (self.model_dir or self.from_pretrained_model or self.architecture != "qwen2"):
            raise ValueError(
                "policy.vision gives the embedded qwen2 model a screenshot encoder: leave model_dir and "
                "from_pretrained_model unset and architecture qwen2 (an image-text-to-text model_dir sees by itself)"
            )


def _behaviour_cloning_sft() -> SFTConfig:
    return SFTConfig(learning_rate=0.002, batch_size=8, max_steps=400, bf16_autocast="auto")


@dataclass
class BehaviourCloningConfig:
    """``parameters_behaviour_cloning.yml``: the policy and its behaviour cloning on the
    expert steps (-> the base policy)."""

    policy: PolicyConfig = field(default_factory=PolicyConfig)
    """The policy to start from."""
    sft: SFTConfig = field(default_factory=_behaviour_cloning_sft)
    """A step budget, not a time budget: the same data gives the same weights on any CPU.
    400 steps of 8 are about 2 epochs of the default 1630 expert steps (about 1 min on 2
    cores without bf16 for the tiny policy); at a fixed token budget, more smaller steps
    learned faster (docs/results.md, "Tuning the default")."""


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
    temperature: float = 0.0
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
    temperature: float = 0.4
    """Sampling temperature of those rollouts and of the validation re-rollouts."""
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
    temperature: float = 1.0
    """Sampling temperature of those episodes (RL's training rollouts sample at 1.0)."""
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
        if self.temperature <= 0:
            raise ValueError(f"stage1.teacher_fit.temperature must be > 0, got {self.temperature!r}")


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
            "premise_tasks_per_game", "premise_copy_pairs", "premise_tasks_per_piece",
        ):
            if getattr(self, name) < 0:  # the type is checked by params.build
                raise ValueError(f"stage1.{name} must be >= 0, got {getattr(self, name)!r}")
        if not isinstance(self.behaviour_cloning, bool):
            raise ValueError(f"stage1.behaviour_cloning must be true or false, got {self.behaviour_cloning!r}")


@dataclass
class TrainingConfig:
    """``parameters_training.yml``: the RL run."""

    start_from: str = "stage1"
    """stage1 (SEED) | base (the "without Stage 1" ablation). The start is also the KL reference."""
    tasks_per_game: int = 100
    """Training-task pool per game: the first train-fold seeds (the expert episodes' tasks
    with the default ``ingestion.expert_episodes.train``). The skills stage and State2State
    count their own tasks (``SkillsConfig``, ``State2StateConfig``)."""
    checkpoint_root: str = "data/06_models/rl_checkpoints"
    """Checkpoints live under a fingerprint of the run's settings and starting weights. Each
    RL stage has its own root (``EmpoConfig``, ``State2StateConfig``), so none resumes from
    another's checkpoints."""
    heldout: HeldoutPlay = field(default_factory=lambda: HeldoutPlay(episodes_per_game=8, decodings={"sampled": 0.4}))
    """Held-out evaluation during training (every ``rl.eval_every`` updates)."""
    rl: RLConfig = field(default_factory=RLConfig)
    """The core loop's settings, the method (``rl.algorithm``) and its own (``rl.methods``).
    Each RL stage holds its own, with its own method and budget (``EmpoConfig``,
    ``State2StateConfig``); an experiment grid preset (``GridPreset``) holds overrides of this
    block for its cells."""

    def __post_init__(self) -> None:
        if self.start_from not in ("stage1", "base"):
            raise ValueError(f"training.start_from must be 'stage1' or 'base', got {self.start_from!r}")
        check_method_settings(self.rl)


@dataclass
class ScoringConfig:
    """``parameters_scoring.yml``: token-level distillation signals of the skill rollouts."""

    gate_beta: float = 5.0
    """gate = sigmoid(gate_beta * (logp_skill - logp_plain)), for the scoring pipeline's
    offline signals; SEED's update gates with its own ``SEEDSettings.gate_beta``
    (``training.rl.methods.seed``)."""
    batch_size: int = 32
    """Steps per forward batch of the scoring pass (inference only; ``SFTConfig.batch_size``
    counts the examples of an optimizer step)."""
    max_length: int = 1024
    """Prompt + response tokens of a scored step (the oldest prompt tokens dropped beyond it)."""


@dataclass
class EvaluationConfig:
    """``parameters_evaluation.yml``: the final held-out evaluation."""

    heldout: HeldoutPlay = field(default_factory=HeldoutPlay)
    """25 tasks per game and split: 2 games x 2 splits x 25 = 100 tasks."""
    random_floor: bool = True
    """Also play the random-valid-action agent on the same tasks (beside the Stage-1 policy;
    ``hindsight.evaluation.heldout.evaluate_agents``' ``include_random``)."""
    filmstrips: int = 2
    """Episodes per evaluation agent drawn as a filmstrip into MLflow (each step's screen
    with its action drawn on it, replayed on a fresh environment): environments that
    render a screen only; 0: none."""

    def __post_init__(self) -> None:
        if isinstance(self.filmstrips, bool) or not isinstance(self.filmstrips, int) or self.filmstrips < 0:
            raise ValueError(f"evaluation.filmstrips must be a non-negative integer, got {self.filmstrips!r}")
