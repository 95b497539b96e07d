"""Settings of each stage, one dataclass per ``conf/*/parameters_<stage>.yml``, in run order:
ingestion -> behaviour_cloning -> (skills -> stage1: ``config.skill_stages``) -> training ->
evaluation (and the scoring pipeline; the experiment grid's settings are in ``config.experiments``).

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
    heldout: HeldoutPlay = field(
        default_factory=lambda: HeldoutPlay(
            episodes_per_game=25, decodings={"sampled": {"temperature": 0.4}, "greedy": {"temperature": 0.0}}
        )
    )
    """Held-out evaluation during training (every ``rl.eval_every`` updates; the training
    pipeline then also evaluates the start): the points of the run's held-out curve, sampled
    and greedy (``evaluation.curves``)."""
    rl: RLConfig = field(default_factory=lambda: RLConfig(eval_every=2))
    """The core loop's settings, the method (``rl.algorithm``) and its own (``rl.methods``);
    the default run's curve has a held-out point at its start and every 2 updates.
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
