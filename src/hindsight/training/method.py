"""The interface every RL method implements, and what the core loop hands it.

It is declared here, in the engine layer, because the engine's pieces take a method (the
schedulers: ``training.schedule``, ``training.stepo``, ``training.espo_update``) and depend
on no method; the methods (``hindsight.methods``) implement it one module each and import
it as ``hindsight.methods.Method``. The loop that calls the hooks is in the same layer:
``training.loop`` (``train_rl``) and ``training.update`` (one update, a micro-batch's loss);
``runs.rl_run.run_rl``, one layer above the methods, builds the method that ``training.rl.algorithm`` names and runs it.

The core loop (``training.loop.train_rl``) is the same for every method: rollout -> batch
-> advantages -> update -> checkpoint -> evaluation. A method changes it only through the
hooks below, each with a default that is plain GRPO, so a method module overrides only what
makes it different and reads top to bottom:

- ``Settings``: its own small settings dataclass (``training.rl.methods.<name>`` in the
  parameters; an empty one when it has none);
- ``requires``: the core settings it cannot train without, each with its value, checked
  when the parameters are read (``methods.registry.check_method_settings``, naming the
  parameter) and again before the first rollout (``unmet_requirements``);
- ``transitions``: where its training transitions come from (the environment by default;
  a learned world model for WM-R1; EMPO's expert replay is chosen by its pipeline, which
  passes the replay environments as the environment, ``transition_source`` says so);
- ``after_rollout``: what it does to a played batch before scoring (WM-R1's replay);
- ``analyze``: extra per-sample signals before the update (SEED's and OPID's skills and
  skill-augmented log-probs, ``batch.teacher_logp``);
- ``episode_scores`` and ``advantages``: each sample's episode score, and one advantage per
  step sample (GRPO over the scores by default; STEPO's balance reads the scores);
- ``token_advantages`` and ``extra_loss_terms``: what it changes inside the loss (OPID's
  token advantage, SEED's distillation term);
- ``rollout_metrics``: its own figures of the played rollouts (EMPO's match rates).

Methods are registered by name (``hindsight.methods.registry``); ``training.rl.algorithm``
picks one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Mapping

import pandas as pd
import torch

from hindsight import algorithms
from hindsight.data.outcomes import episode_outcomes
from hindsight.policy import Policy
from hindsight.rollout.engine import RolloutConfig
from hindsight.training.batch import RolloutBatch
from hindsight.training.loss_terms import LossTerm

if TYPE_CHECKING:  # the settings module imports the schedulers, which read methods
    from hindsight.training.rl_config import RLConfig


@dataclass
class NoSettings:
    """A method without settings of its own."""


@dataclass
class MethodContext:
    """What a run offers the methods that need more than the policy and the environment."""

    analyzer: Any = None
    """How the policy writes its skills (``skills.AnalyzerConfig``; SEED, OPID)."""
    skill_bank: dict[str, str] | None = None
    """Fixed skills per task and task type (the "without on-policy skills" ablation)."""
    world_model: Any = None
    """The trained world-model simulator (``world_model.environment.WorldModelSimulator``; WM-R1)."""


class Method:
    """An RL method: the defaults are GRPO's (episode return, group-normalised)."""

    name: ClassVar[str] = ""
    """The ``training.rl.algorithm`` value that picks it (set by ``hindsight.methods.register``)."""
    Settings: ClassVar[type] = NoSettings
    """Its settings dataclass (``training.rl.methods.<name>``)."""
    transition_source: ClassVar[str] = "environment"
    """Where its transitions come from: environment, expert_replay (the EMPO pipeline
    plays expert trajectories as the environment) or world_model."""
    row_source: ClassVar[str] = "rollout"
    """The ``source`` of the rows it plays (trajectory table)."""
    step_level: ClassVar[bool] = False
    """Whether its advantage adds a step-level term to the episode's (GiGPO, EMPO). STEPO's
    balance (``schedulers.stepo.step_weights``) works on episode-level advantages and refuses these."""
    requires: ClassVar[Mapping[str, Any]] = {}
    """The core settings it cannot train without: a path under ``training.rl`` -> the value it
    must have (a method whose loss is a token sum: ``{"ppo.loss_agg": "seq-mean-token-sum"}``).
    Refused, naming the parameter, when the parameters are read; none by default."""

    def __init__(self, settings: Any = None, context: MethodContext | None = None) -> None:
        self.settings = settings if settings is not None else self.Settings()
        self.context = context or MethodContext()

    # -- checks and set-up ---------------------------------------------------------------
    @property
    def uses_skills(self) -> bool:
        """Whether its updates need skills and skill-augmented log-probs."""
        return False

    def check(self, rl: RLConfig, *, parallel: bool) -> None:
        """Refuse, before the first rollout, what it cannot train with and ``requires`` cannot
        say: a combination of settings, ``torchrun`` (``parallel``), the run's context
        (raise ``ValueError``)."""

    def start(self, policy: Policy) -> None:
        """Called once before the first update with the policy being trained."""

    def state_dict(self) -> dict[str, Any]:
        """What the method keeps across updates that a resumed run needs (kept in the
        checkpoint; e.g. WM-R1's replay buffer). Empty by default."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what ``state_dict`` returned, when a run resumes."""

    # -- rollout -------------------------------------------------------------------------
    def transitions(self, env_factory: Callable) -> Callable:
        """``spec -> TextEnvironment`` its training episodes play in."""
        return env_factory

    def rollout_settings(self, rollout: RolloutConfig, *, heldout: bool) -> RolloutConfig:
        """How its episodes are played: training ones (``heldout`` False) and held-out
        evaluation ones (True); e.g. WM-R1 adds in-response world-model calls."""
        return rollout

    def after_rollout(self, policy: Policy, batch: RolloutBatch, rollout: RolloutConfig, rl: RLConfig, seed: int, update: int) -> None:
        """Change the played batch before anything is scored; add metrics to ``batch.metrics``."""

    # -- signals and advantages ----------------------------------------------------------
    def analyze(self, policy: Policy, batch: RolloutBatch, rl: RLConfig) -> dict[str, float]:
        """Fill extra per-sample signals (``batch.teacher_logp``); return their metrics."""
        return {}

    def episode_scores(self, batch: RolloutBatch, rl: RLConfig, max_steps: int) -> torch.Tensor:
        """Each step sample's episode score [N] (the episode's return; WM-R1: its reward)."""
        return episode_return_scores(batch.table)

    def advantages(self, batch: RolloutBatch, rl: RLConfig, max_steps: int) -> torch.Tensor:
        """One advantage per step sample of ``batch`` (rows of ``batch.table``, in order)."""
        return algorithms.group_normalized_advantages(
            self.episode_scores(batch, rl, max_steps), batch.table["group_id"].tolist(), std_normalize=rl.std_normalize
        )

    # -- inside the loss -----------------------------------------------------------------
    def token_advantages(
        self, advantage: torch.Tensor, teacher: torch.Tensor, old: torch.Tensor, distill_mask: torch.Tensor
    ) -> torch.Tensor:
        """The advantage the PPO term uses ([B] or [B, R]) from the sequence advantage [B]."""
        return advantage

    def extra_loss_terms(self, logp: torch.Tensor, teacher: torch.Tensor, distill_mask: torch.Tensor, loss_agg: str) -> list[LossTerm]:
        """Loss terms beside PPO and KL, each with its coefficient."""
        return []

    # -- metrics -------------------------------------------------------------------------
    def rollout_metrics(self, played: pd.DataFrame) -> dict[str, float]:
        """Its own figures of the update's played rows."""
        return {}


def episode_return_scores(table: pd.DataFrame) -> torch.Tensor:
    """Each step sample's score: its episode's return [N] (rows of ``table``, in order)."""
    returns = episode_outcomes(table).set_index("episode_id")["return"]
    return torch.tensor(table["episode_id"].map(returns).to_numpy(dtype="float64"), dtype=torch.float32)


def required_setting(rl: RLConfig, path: str) -> Any:
    """The value of the core setting ``path`` (``"ppo.loss_agg"``) in ``rl``; a path
    ``RLConfig`` does not have is an error of the method that names it."""
    value: Any = rl
    for part in path.split("."):
        if not dataclasses.is_dataclass(value) or part not in {f.name for f in dataclasses.fields(value)}:
            raise ValueError(f"a method's requires names training.rl.{path}, which the core settings do not have")
        value = getattr(value, part)
    return value


def unmet_requirements(method: type[Method] | Method, rl: RLConfig) -> list[tuple[str, Any, Any]]:
    """The core settings ``method.requires`` asks for that ``rl`` does not have, as
    (path under ``training.rl``, the value required, the value given)."""
    return [
        (path, wanted, given)
        for path, wanted in method.requires.items()
        if (given := required_setting(rl, path)) != wanted
    ]


def check_requirements(method: Method, rl: RLConfig) -> None:
    """Refuse ``rl`` where it lacks a core setting the method requires (the run-time twin of
    the check made when the parameters are read, for settings built in code)."""
    unmet = unmet_requirements(method, rl)
    if unmet:
        path, wanted, given = unmet[0]
        raise ValueError(f"training.rl.algorithm={method.name!r} requires training.rl.{path}: {wanted!r}, got {given!r}")
