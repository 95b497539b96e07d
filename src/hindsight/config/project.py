"""Settings every stage shares (``conf/*/parameters.yml``): the run's seed, the environment
and its games, how the policy is prompted and decodes, and how it writes skills.

``ProjectConfig`` is the file's dataclass; the ``settings`` pipeline builds it once and every
stage reads it. Each random stream of a run derives from the one ``seed`` (``Seeds``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hindsight.envs.base import EnvironmentSpec
from hindsight.envs.reward import RewardConfig
from hindsight.evaluation.heldout import HeldoutConfig
from hindsight.policy.prompts import PromptConfig
from hindsight.policy.backends import shared_backend
from hindsight.rollout.engine import RolloutConfig
from hindsight.skills.analyzers import AnalyzerConfig

if TYPE_CHECKING:
    from hindsight.config.stages import HeldoutPlay


@dataclass
class GameConfig:
    """One game of the environment."""

    game: str
    """Game / task name inside the environment (``twc``, ``cookingworld``, ``boil``)."""
    params: dict[str, Any] = field(default_factory=dict)
    """Game parameters (TextWorldExpress: ``numLocations``, ``numItemsToPutAway``, ...)."""


def _default_games() -> list[GameConfig]:
    return [
        GameConfig("twc", {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}),
        GameConfig(
            "cookingworld",
            {"numLocations": 1, "numIngredients": 1, "numDistractorItems": 0, "includeDoors": 0, "limitInventorySize": 0},
        ),
    ]


@dataclass
class EnvironmentConfig:
    """The environment, its games and how a step is rewarded."""

    env: str = "textworldexpress"
    """textworldexpress | scienceworld | textworld | alfworld | dual_control (the telecom
    domain, ``hindsight.envs.dual_control``) | gym (a registered Gymnasium
    text env: each ``games`` entry's ``game`` is its id, ``params`` its make kwargs;
    ``hindsight.envs.gym_adapter``)."""
    max_steps: int = 20
    """Steps after which an episode ends unsolved."""
    seen_seed_offset: int | None = None
    """First train-fold task position of the held-out "seen" split: the training tasks lie
    before it. null: 500, or half the game's train fold when it holds fewer than 1000 tasks
    (TextWorldExpress: 1000 per game, so 500; a ScienceWorld task's 14 train variations: 7;
    ``hindsight.rollout.tasks.seen_offset``)."""
    games: list[GameConfig] = field(default_factory=_default_games)
    """The games trained and evaluated on (one task type each)."""
    reward: RewardConfig = field(default_factory=RewardConfig)
    """Step reward: ``success_reward * won - invalid_penalty * invalid``."""
    step_timeout_s: float | None = 60.0
    """Longest one simulator call of a reset or step may take (TextWorldExpress,
    ScienceWorld): past it the JVM is killed ("step timeout") and the episode is replayed on a
    fresh JVM (``rollout.episode_replays``). null: no limit."""

    def __post_init__(self) -> None:
        if not self.games:
            raise ValueError("environment.games must list at least one game")
        if self.step_timeout_s is not None and not self.step_timeout_s > 0:
            raise ValueError(f"environment.step_timeout_s must be positive or null, got {self.step_timeout_s!r}")

    def specs(self) -> list[EnvironmentSpec]:
        """One ``EnvironmentSpec`` per game, in the order of ``games``."""
        return [
            EnvironmentSpec(
                env=self.env, game=g.game, params=dict(g.params), max_steps=self.max_steps, reward=self.reward,
                step_timeout_s=self.step_timeout_s,
            )
            for g in self.games
        ]


@dataclass
class RolloutSettings:
    """How the policy is prompted and decodes when it plays (every stage that plays)."""

    constrained: bool = True
    """Decode only valid actions (token trie); false = free generation (LLMs)."""
    temperature: float = 1.0
    """Sampling temperature of RL rollouts: 1, the temperature every log-prob (old,
    current, teacher, reference) is taken at, so the PPO ratio and the distillation target
    are on-policy (the official SEED recipe; the skills stage and the evaluation sample at
    their own temperatures)."""
    top_p: float = 1.0
    """Nucleus sampling mass (1.0 = off)."""
    max_new_tokens: int = 24
    """Longest free-generation response, in tokens."""
    max_length: int = 1024
    """Prompt + response tokens; the oldest prompt tokens are dropped beyond it."""
    max_parallel: int = 32
    """Episodes (and environments) live at once: one batched generation per turn."""
    progress: bool = True
    """A tqdm bar: live episodes and env steps/s."""
    episode_replays: int = 3
    """Times an episode whose environment died (a killed JVM) or hung past
    ``environment.step_timeout_s`` under it is replayed from its start, same task and seed,
    on a restarted environment; counted in ``faults/episode_replays``. An episode whose every
    try died with its environment stops the run, naming the environment and the tries; one
    whose tries ran out on a hang is left out and counted (``faults/failed_episodes``)."""
    prompt: PromptConfig = field(default_factory=lambda: PromptConfig(history_window=2, show_valid_actions=False))
    """How a step prompt is built (history window, pinned facts, valid-action list). The
    project shows the last 2 turns and leaves the valid-action list out: constrained
    decoding offers only valid actions anyway, the list is about 40% of a prompt's tokens,
    and behaviour cloning without it learned about as well in 30% less time (docs/results.md,
    "The default run: tiny, without the valid-action list")."""
    layout: str = "stepwise"
    """stepwise: a prompt per step with a history window (the SEED paper's); multiturn: each
    episode one growing token sequence, KV cache kept across turns, trained with one
    forward pass per episode."""
    backend: str = "torch"
    """What generates the step-wise rollouts (``hindsight.policy.backends``): torch (the
    project's engine, on the learner's weights) or ctranslate2 (CTranslate2, the weights
    converted after every update; step-wise layout only)."""
    backend_compute_type: str = "int8"
    """ctranslate2 only: float32 (the learner's numbers) or int8 (quantized weights; the RL
    update corrects for the gap, ``training.rl.schedulers.backend_correction.weight_cap``)."""


@dataclass(frozen=True)
class Seeds:
    """Every random stream of a run, derived from its one ``seed`` (with seed 0 they are the
    values the project always used, so results carry over)."""

    seed: int

    @property
    def model(self) -> int:
        """Weight initialisation of the embedded policy."""
        return self.seed

    @property
    def examples(self) -> int:
        """Order of the SFT examples (behaviour cloning, Stage 1)."""
        return self.seed

    @property
    def rollouts(self) -> int:
        """Sampling of the skills stage's rollouts and of the RL run (tasks, episodes, mini-batches)."""
        return self.seed

    @property
    def validation(self) -> int:
        """Sampling of the skill-validation re-rollouts (a stream apart from ``rollouts``)."""
        return self.seed + 1

    @property
    def evaluation(self) -> int:
        """Sampling during held-out evaluation (fixed whatever the RL seed, so every run of a
        grid is evaluated on the same draws)."""
        return self.seed + 1234


@dataclass
class ProjectConfig:
    """``parameters.yml``: what every stage shares."""

    seed: int = 0
    """The run's seed; every random stream derives from it (``Seeds``)."""
    environment: EnvironmentConfig = field(default_factory=EnvironmentConfig)
    """The environment, its games and the step reward."""
    rollout: RolloutSettings = field(default_factory=RolloutSettings)
    """How the policy is prompted and decodes."""
    analyzer: AnalyzerConfig = field(default_factory=AnalyzerConfig)
    """How the policy writes skills."""

    @property
    def seeds(self) -> Seeds:
        """The run's random streams (``Seeds``)."""
        return Seeds(self.seed)

    def specs(self) -> list[EnvironmentSpec]:
        """The environment specs, one per game."""
        return self.environment.specs()

    def rollout_config(self, *, group_size: int = 1, temperature: float | None = None, seed: int | None = None) -> RolloutConfig:
        """The rollout engine's settings for one stage: the shared decoding and prompt, and
        the stage's group size, temperature and seed (the reward is the environment's:
        ``specs()`` carries it)."""
        shared = self.rollout
        return RolloutConfig(
            group_size=group_size,
            temperature=shared.temperature if temperature is None else float(temperature),
            top_p=shared.top_p,
            constrained=shared.constrained,
            max_new_tokens=shared.max_new_tokens,
            max_length=shared.max_length,
            prompt=dataclasses.replace(shared.prompt),
            max_parallel=shared.max_parallel,
            seed=self.seeds.rollouts if seed is None else int(seed),
            progress=shared.progress,
            episode_replays=shared.episode_replays,
            layout=shared.layout,
            backend=shared_backend(shared.backend, shared.backend_compute_type),
        )

    def heldout_config(self, play: "HeldoutPlay", random_floor: bool = False) -> HeldoutConfig:
        """The held-out evaluation of a stage: its budget, splits and decodings, the
        environment's "seen" offset and the run's evaluation seed."""
        return HeldoutConfig(
            episodes_per_game=play.episodes_per_game,
            seen_seed_offset=self.environment.seen_seed_offset,
            splits=tuple(play.splits),
            decodings=dict(play.decodings),
            random_floor=random_floor,
            seed=self.seeds.evaluation,
            trials_per_task=play.trials_per_task,
        )
