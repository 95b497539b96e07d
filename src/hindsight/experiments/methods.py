"""The methods of the experiment grid, in report order: one list, with each method's label
and what it changes (SEED's ablations and controls; docs/fidelity.md, SEED).

A grid method (``GridArm``: an arm of the experiment) is a starting checkpoint and a set of
overrides of the RL settings:

    grpo              GRPO from the base (behaviour-cloned) policy
    gigpo             GiGPO from the base policy
    opid              OPID from the Stage-1 checkpoint (skill shift folded into the advantage)
    seed              SEED from the Stage-1 checkpoint
    seed_no_stage1    SEED from the base policy (no analyzer SFT: its skills parse by the
                      grammar, their content is untrained)
    seed_no_distill   plain GRPO from the Stage-1 checkpoint
    seed_fixed_bank   SEED whose skills come from the Stage-1 skill bank, not the policy
    seed_ungated      control: SEED with the distillation gate fixed at 1 (every distilled
                      token weighs 1, not sigmoid(beta * gap): ``distill_gate: ungated``)
    seed_unrelated_skill
                      control: SEED whose episodes are re-scored with a skill the policy
                      wrote for an episode of another task type in the batch, not their
                      own (``skill_assignment: unrelated``): the skill's content or just
                      extra context?
    seed_distill_weight_1
                      SEED with the distillation term weighted 1 instead of the paper's 0.01
                      (``opd_coef``): at 0.01 and a few updates the term moves the weights too
                      little to change one sampled action (docs/results.md, "The experiment grid")
    seed_unrelated_skill_distill_weight_1
                      its control: the unrelated skill, also at weight 1
    empo              EMPO from the base policy: the training tasks' gold episodes replayed
                      as the environment (``runs.empo_run.empo_grid_setup``)
    wmr1              WM-R1 from the Stage-1 checkpoint: GRPO inside the learned world model
                      (the catalog's ``world_model``: ``kedro run --pipeline world_model``)
    grpo_stepo        GRPO + STEPO: 1/T_i step weights, zero-variance filter with refill,
                      pass-rate calibration in (0, 1)
    grpo_curriculum   GRPO with the curriculum (learnable, hard successes, infeasible share)
    grpo_odysse       GRPO with the ODYSSE episodic mini-batch sampler
    grpo_espo         GRPO with the ODYSSE sampler and ESPO, our reading of its episode-level objective
    grpo_state2state  GRPO from the State2State checkpoint (the catalog's ``state2state_policy``:
                      ``kedro run --pipeline state2state``), the same RL budget as ``grpo``
    grpo_async        GRPO with asynchronous rollouts (a rollout worker process), staleness <= 1

The two controls are in the default presets (``full``: docs/results.md, "The experiment
grid"; the test suite's quick grid, ``conf/test``, leaves them out for time and
``tests/training/test_seed_controls.py`` runs them instead). EMPO, WM-R1 and the last five
(the schedulers and State2State) are not in the default presets' method lists (so the
default grid takes no longer; WM-R1 and ``grpo_state2state`` also need a model from the
catalog, ``experiments.starts``); name them in a preset's ``methods`` to run them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GridArm:
    """One arm of the grid: a row of its tables (a starting checkpoint and overrides of the RL
    settings). Not ``training.method.Method``, the interface an RL algorithm implements: an arm
    names one (``rl['algorithm']``) and adds a start and settings, so SEED's ablations and
    controls are several arms of one algorithm."""

    name: str
    label: str
    """How reports name it."""
    start_from: str
    """stage1, base (both trained by the experiments pipeline) or state2state (the catalog's
    State2State checkpoint, ``experiments.starts``)."""
    rl: dict[str, Any] = field(default_factory=dict)
    """Overrides of ``training.rl`` (``rl_config.with_overrides``: a method's own settings
    under ``methods.<name>``, the schedulers' under ``schedulers.<name>``)."""
    default_grid: bool = True
    """Whether the default presets list it (``config.experiments``)."""


def _seed(**settings: Any) -> dict[str, Any]:
    """Overrides that pick SEED with these of its own settings (``methods.seed``)."""
    return {"algorithm": "seed", "methods": {"seed": settings}}


def _grpo(**schedulers: dict[str, Any]) -> dict[str, Any]:
    """Overrides that pick GRPO with these scheduler blocks (``schedulers.<name>``, merged key
    by key over the base run's)."""
    return {"algorithm": "grpo", "schedulers": schedulers}


METHOD_LIST = (
    GridArm("grpo", "GRPO", "base", {"algorithm": "grpo"}),
    GridArm("gigpo", "GiGPO", "base", {"algorithm": "gigpo"}),
    GridArm("opid", "OPID", "stage1", {"algorithm": "opid"}),
    GridArm("seed", "SEED", "stage1", {"algorithm": "seed"}),
    GridArm("seed_no_stage1", "SEED w/o Stage 1", "base", {"algorithm": "seed"}),
    GridArm("seed_no_distill", "SEED w/o distillation", "stage1", _seed(distill=False)),
    GridArm("seed_fixed_bank", "SEED w/o on-policy skills", "stage1", _seed(skill_source="fixed_bank")),
    GridArm("seed_ungated", "SEED, ungated distillation", "stage1", _seed(distill_gate="ungated")),
    GridArm("seed_unrelated_skill", "SEED, unrelated skill", "stage1", _seed(skill_assignment="unrelated")),
    GridArm("seed_distill_weight_1", "SEED, distillation weight 1", "stage1", _seed(opd_coef=1.0), default_grid=False),
    GridArm(
        "seed_unrelated_skill_distill_weight_1", "SEED, unrelated skill, distillation weight 1", "stage1",
        _seed(skill_assignment="unrelated", opd_coef=1.0), default_grid=False,
    ),
    GridArm("empo", "EMPO", "base", {"algorithm": "empo"}, default_grid=False),
    GridArm("wmr1", "WM-R1", "stage1", {"algorithm": "wmr1"}, default_grid=False),
    GridArm(
        "grpo_stepo", "GRPO + STEPO", "base",
        _grpo(stepo={"step_weights": True, "filter_zero_variance": True, "pass_rate_band": (0.0, 1.0)}),
        default_grid=False,
    ),
    GridArm("grpo_curriculum", "GRPO + curriculum", "base", _grpo(curriculum={"enabled": True}), default_grid=False),
    GridArm("grpo_odysse", "GRPO + ODYSSE sampler", "base", _grpo(odysse={"episode_minibatches": True}), default_grid=False),
    GridArm(
        "grpo_espo", "GRPO + ODYSSE ESPO", "base",
        _grpo(odysse={"episode_minibatches": True, "objective": "espo"}), default_grid=False,
    ),
    GridArm("grpo_state2state", "GRPO after State2State", "state2state", {"algorithm": "grpo"}, default_grid=False),
    GridArm(
        "grpo_async", "GRPO + async rollouts", "base", _grpo(async_rollouts={"enabled": True, "max_staleness": 1}), default_grid=False,
    ),
)

METHODS: dict[str, GridArm] = {method.name: method for method in METHOD_LIST}
"""By name, in report order."""
