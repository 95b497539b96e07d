"""Settings every stage shares (``conf/*/parameters.yml``): the run's seed, the environment
and its games, how the policy is prompted and decodes, and how it writes skills.

``ProjectConfig`` is the file's dataclass; the ``settings`` pipeline builds it once and every
stage reads it. Each random stream of a run derives from the one ``seed`` (``Seeds``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Mapping

from hindsight.envs.base import EnvironmentSpec
from hindsight.envs.miniwob.browser import BrowserSettings
from hindsight.envs.reward import RewardConfig
from hindsight.evaluation.heldout import HeldoutConfig, HeldoutPlay
from hindsight.policy.prompts import PromptConfig
from hindsight.policy.generation import SamplingConfig
from hindsight.policy.logprobs import LOGPROB_TEMPERATURE
from hindsight.rollout.engine import RolloutConfig
from hindsight.skills.analyzers import AnalyzerConfig


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
    heldout_games: list[GameConfig] = field(default_factory=list)
    """Task types never trained on: played only by the held-out split "unseen_types" (their
    test fold; ``evaluation.heldout.splits``). Empty: no such split (the default)."""
    reward: RewardConfig = field(default_factory=RewardConfig)
    """Step reward: ``success_reward * won - invalid_penalty * invalid``."""
    step_timeout_s: float | None = 60.0
    """Longest one simulator call of a reset or step may take (TextWorldExpress,
    ScienceWorld): past it the JVM is killed ("step timeout") and the episode is replayed on a
    fresh JVM (``rollout.episode_replays``). null: no limit."""
    browsers: BrowserSettings = field(default_factory=BrowserSettings)
    """The MiniWoB++ web tasks' Chromium browsers per Python process (``env: miniwob`` only;
    ``hindsight.envs.miniwob.BrowserSettings``): a Kedro run on miniwob sets them for its
    process at its start, ends the idle ones at its end and puts the earlier ones back (a
    separate worker process reads ``HINDSIGHT_MAX_BROWSERS``, ... instead)."""

    def __post_init__(self) -> None:
        if not self.games:
            raise ValueError("environment.games must list at least one game")
        shared = sorted({g.game for g in self.games} & {g.game for g in self.heldout_games})
        if shared:
            raise ValueError(f"environment.heldout_games must hold task types never trained on; also in games: {shared}")
        if self.step_timeout_s is not None and not self.step_timeout_s > 0:
            raise ValueError(f"environment.step_timeout_s must be positive or null, got {self.step_timeout_s!r}")

    def specs(self) -> list[EnvironmentSpec]:
        """One ``EnvironmentSpec`` per game, in the order of ``games``."""
        return [_game_spec(self, g) for g in self.games]

    def heldout_specs(self) -> list[EnvironmentSpec]:
        """One ``EnvironmentSpec`` per held-out task type (``heldout_games``)."""
        return [_game_spec(self, g) for g in self.heldout_games]


def _game_spec(environment: EnvironmentConfig, game: GameConfig) -> EnvironmentSpec:
    """The ``EnvironmentSpec`` of one game of ``environment``."""
    return EnvironmentSpec(
        env=environment.env, game=game.game, params=dict(game.params), max_steps=environment.max_steps,
        reward=environment.reward, step_timeout_s=environment.step_timeout_s,
    )


def _project_rollout() -> RolloutConfig:
    """The project's rollout defaults (why: ``ProjectConfig.rollout``'s docstring); the
    temperature is the log-probs' (``LOGPROB_TEMPERATURE``), set nowhere else in the code."""
    return RolloutConfig(
        sampling=SamplingConfig(temperature=LOGPROB_TEMPERATURE, max_length=1024),
        prompt=PromptConfig(history_window=2, show_valid_actions=False),
    )


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
    rollout: RolloutConfig = field(default_factory=_project_rollout)
    """How the policy is prompted and decodes when it plays (every stage that plays): the
    rollout engine's settings (``rollout.config.RolloutConfig``) with their decoding
    (``rollout.sampling``, ``policy.generation.SamplingConfig``). Each stage sets its own
    group size and seed, and a stage that decodes otherwise names its changes to
    ``rollout.sampling`` in its own block (``skills.sampling``, ``stage1.teacher_fit.sampling``,
    the held-out ``decodings``; ``rollout_config``). The project's
    defaults differ from those classes': the temperature is 1, the temperature every log-prob (old, current, teacher, reference) is
    taken at, so RL's PPO ratio and distillation target are on-policy (the official SEED
    recipe); ``max_length`` is 1024; the prompt shows the last 2 turns and leaves the
    valid-action list out (constrained decoding offers only valid actions anyway, the list is
    about 40% of a prompt's tokens, and behaviour cloning without it learned about as well in
    30% less time: docs/results.md, "The default run: tiny, without the valid-action list")."""
    analyzer: AnalyzerConfig = field(default_factory=AnalyzerConfig)
    """How the policy writes skills."""

    @property
    def seeds(self) -> Seeds:
        """The run's random streams (``Seeds``)."""
        return Seeds(self.seed)

    def specs(self) -> list[EnvironmentSpec]:
        """The environment specs, one per game."""
        return self.environment.specs()

    def rollout_config(self, *, group_size: int = 1, sampling: Mapping[str, Any] | None = None, seed: int | None = None) -> RolloutConfig:
        """The rollout engine's settings for one stage: the shared ``rollout`` block with the
        stage's group size, its changes to ``rollout.sampling`` (None: none; e.g. the skills
        stage's ``{"temperature": 0.4}``) and seed (None: the run's rollout seed); the reward
        is the environment's (``specs()`` carries it)."""
        return self.rollout.at(group_size=group_size, sampling=sampling, seed=self.seeds.rollouts if seed is None else seed)

    def heldout_config(self, play: HeldoutPlay) -> HeldoutConfig:
        """The held-out evaluation of a stage: its play (budget, splits, decodings, trials;
        a copy) with the environment's "seen" offset and the run's evaluation seed."""
        return HeldoutConfig(
            play=copy.deepcopy(play),
            seen_seed_offset=self.environment.seen_seed_offset,
            seed=self.seeds.evaluation,
            unseen_type_specs=self.environment.heldout_specs(),
        )
