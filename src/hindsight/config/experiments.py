"""Settings of the experiment grid (``parameters_experiments.yml``): its presets (methods x
seeds x task fractions, each cell one RL run) and what the grid pipeline reads
(``GridSettings``: the training run every cell varies, and the grid).

Defaults live here and only here; ``conf/base/parameters_experiments.yml`` restates them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hindsight.config.stages import HeldoutPlay, TrainingConfig
from hindsight.evaluation.heldout import KNOWN_SPLITS
from hindsight.experiments.methods import METHODS
from hindsight.methods.registry import check_method_settings
from hindsight.training.rl_config import RLConfig, check_keys, with_overrides


@dataclass
class GridPreset:
    """One experiment grid: methods x seeds x task fractions, each cell one RL run."""

    methods: list[str] = field(default_factory=list)
    """The methods of the cells (``training.rl.algorithm`` names; ``RLConfig.methods`` holds
    the methods' own settings)."""
    seeds: list[int] = field(default_factory=lambda: [0])
    """RL seeds of the cells."""
    fractions: list[float] = field(default_factory=lambda: [1.0])
    """Training-task fractions of the data-efficiency study."""
    fraction_methods: list[str] = field(default_factory=lambda: ["grpo", "seed"])
    """Methods also run at the fractions below 1."""
    rl: dict = field(default_factory=dict)
    """Overrides of ``training.rl`` for every cell (the budget)."""
    heldout: HeldoutPlay = field(default_factory=lambda: HeldoutPlay(episodes_per_game=8))
    """Held-out evaluation of every cell (at its start and every ``eval_every`` updates)."""

    def __post_init__(self) -> None:
        check_keys(self.rl, "experiments preset rl")  # an unknown key is named
        check_method_settings(with_overrides(RLConfig(), self.rl), "experiments preset rl")


ALL_METHODS = [name for name, method in METHODS.items() if method.default_grid]


def curve_decodings() -> dict[str, dict[str, float]]:
    """The decodings of a grid's held-out curves: the reports' (sampled, T = 0.4) and greedy."""
    return {"sampled": {"temperature": 0.4}, "greedy": {"temperature": 0.0}}


def _default_presets() -> dict[str, GridPreset]:
    return {
        "quick": GridPreset(
            methods=list(ALL_METHODS), seeds=[0], fractions=[0.5, 1.0],
            rl={"updates": 2, "tasks_per_update": 2, "group_size": 2, "eval_every": 1},
            heldout=HeldoutPlay(episodes_per_game=2),
        ),
        "first_look": GridPreset(
            methods=["grpo", "seed", "seed_no_distill", "seed_unrelated_skill"], seeds=[0], fractions=[1.0],
            fraction_methods=[], rl={"updates": 4, "tasks_per_update": 4, "group_size": 4, "eval_every": 4},
            heldout=HeldoutPlay(episodes_per_game=8, decodings=curve_decodings()),
        ),
        "controls": GridPreset(
            methods=["grpo", "seed", "seed_no_distill", "seed_ungated", "seed_unrelated_skill"], seeds=[0, 1, 2],
            fractions=[1.0], rl={"updates": 4, "tasks_per_update": 4, "group_size": 4, "eval_every": 4},
            heldout=HeldoutPlay(episodes_per_game=8, decodings=curve_decodings()),
        ),
        "distillation_controls": GridPreset(
            methods=["seed", "seed_no_distill", "seed_unrelated_skill"], seeds=[0, 1, 2], fractions=[1.0],
            fraction_methods=[], rl={"updates": 4, "tasks_per_update": 4, "group_size": 4, "eval_every": 4},
            heldout=HeldoutPlay(episodes_per_game=50, decodings=curve_decodings()),
        ),
        "distill_weight": GridPreset(
            methods=["seed", "seed_unrelated_skill", "seed_distill_weight_1", "seed_unrelated_skill_distill_weight_1"],
            seeds=[0, 1, 2], fractions=[1.0], fraction_methods=[],
            rl={"updates": 4, "tasks_per_update": 4, "group_size": 4, "eval_every": 4},
            heldout=HeldoutPlay(episodes_per_game=8, decodings=curve_decodings()),
        ),
        "learning_methods": GridPreset(
            methods=["grpo", "gigpo", "seed", "seed_no_distill", "seed_unrelated_skill"], seeds=[0, 1, 2], fractions=[1.0],
            fraction_methods=[], rl={"updates": 40, "tasks_per_update": 8, "group_size": 8, "learning_rate": 3.0e-4, "ppo_epochs": 2,
                                     "eval_every": 10, "end_policy": "last"},
            heldout=HeldoutPlay(episodes_per_game=100, decodings=curve_decodings()),
        ),
        "full": GridPreset(
            methods=list(ALL_METHODS), seeds=[0, 1, 2], fractions=[0.4, 0.6, 1.0], fraction_methods=["seed"],
            rl={"updates": 4, "tasks_per_update": 4, "group_size": 4, "eval_every": 4},
            heldout=HeldoutPlay(episodes_per_game=8, decodings=curve_decodings()),
        ),
    }


EXECUTORS = ("local", "ray")


@dataclass
class SuccessLevel:
    """The held-out success level of the grid's "episodes to level" table
    (``experiments.sample_efficiency``), fixed before the runs: per cell, the environment
    episodes played until the first held-out point at or above it. Read on the seen split by
    default, so that no figure of the unseen split picks anything."""

    rate: float = 0.4
    """The level, a success rate in (0, 1]. 0.4, fixed before any ``learning_methods`` run:
    the learning configuration's start plays 32.5% of its seen tasks at T = 0.4 (docs/learning.md)."""
    split: str = "seen"
    """The held-out split whose curve is read."""
    decoding: str = "sampled"
    """The decoding whose curve is read (a name of the preset's ``heldout.decodings``; the
    presets' ``sampled`` is T = 0.4)."""

    def __post_init__(self) -> None:
        if not 0.0 < self.rate <= 1.0:
            raise ValueError(f"experiments.success_level.rate must be in (0, 1], got {self.rate}")
        if self.split not in KNOWN_SPLITS:
            raise ValueError(f"experiments.success_level.split={self.split!r} is not one of {list(KNOWN_SPLITS)}")


@dataclass
class CellResources:
    """What one grid cell asks of a Ray cluster (``experiments.executor: ray``): Ray starts a
    cell on a node with these free, and retries it when its worker process or node dies."""

    num_cpus: float = 1.0
    """CPUs per cell; also the cell's torch threads (``HINDSIGHT_TORCH_THREADS`` wins when set)."""
    num_gpus: float = 0.0
    """GPUs per cell (a fraction shares one GPU between cells)."""
    memory_gb: float | None = None
    """Memory Ray reserves per cell in GiB (scheduling only, not a limit); null: none reserved."""
    max_retries: int = 2
    """Times a cell is run again when its worker process or node dies (Ray's ``max_retries``);
    a cell that raises is recorded as failed and not retried. (``OpenAIEndpointConfig.max_retries``
    is another thing: retries of an HTTP request to a skill-analysis endpoint.)"""

    def __post_init__(self) -> None:
        if not self.num_cpus > 0:
            raise ValueError(f"experiments.cell_resources.num_cpus must be > 0, got {self.num_cpus}")
        if self.num_gpus < 0:
            raise ValueError(f"experiments.cell_resources.num_gpus must be >= 0, got {self.num_gpus}")
        if self.memory_gb is not None and not self.memory_gb > 0:
            raise ValueError(f"experiments.cell_resources.memory_gb must be > 0 or null, got {self.memory_gb}")
        if self.max_retries < 0:
            raise ValueError(f"experiments.cell_resources.max_retries must be >= 0, got {self.max_retries}")


@dataclass
class ExperimentsConfig:
    """``parameters_experiments.yml``: the experiment grid."""

    preset: str = "full"
    """Which preset runs: full (docs/results.md, "The experiment grid"), controls (SEED against its two
    controls and GRPO), distillation_controls (SEED, SEED without distillation and SEED with an
    unrelated skill from the same start, 50 held-out tasks per game and split), distill_weight
    (SEED and its unrelated-skill control with the distillation term at weight 1), learning_methods (GRPO, GiGPO,
    SEED and SEED's two controls at conf/learning's budget, run with ``--env learning``), first_look (the default run's games and policy, one seed: SEED,
    GRPO and SEED's two controls on 8 held-out episodes per game and split, about 10 minutes
    after the default run) or quick (a smoke check: 2 episodes per split, no result)."""
    cache_dir: str = "data/07_model_output/experiment_cells"
    """This machine's records of finished cells (their whole history), skipped on re-runs."""
    summaries_dir: str = "results/grid"
    """The committed summaries of finished cells, one file per cell under ``<summaries_dir>/<preset>/``
    (``experiments.summaries``): a cell whose summary holds the same settings hash is skipped,
    on any machine, and the report is built from the summaries (docs/grid.md)."""
    success_level: SuccessLevel = field(default_factory=SuccessLevel)
    """The level of the "episodes to level" table, and the split and decoding it reads."""
    presets: dict[str, GridPreset] = field(default_factory=_default_presets)
    """The grids by name."""
    executor: str = "local"
    """How the cells run: local (one after another in this process) or ray (each cell a Ray task
    on a local Ray instance, or on the cluster at ``ray_address``; docs/scale.md)."""
    ray_address: str | None = None
    """The Ray cluster of ``executor: ray``: its head's ``host:port`` (printed by ``ray start
    --head``) or ``auto``; null starts a local Ray instance for the run."""
    ray_dashboard: bool = False
    """Start the Ray dashboard with a local instance (needs ``pip install 'ray[default]'``); its
    address is logged. A cluster's dashboard is the head's (``ray start --head``)."""
    cell_resources: CellResources = field(default_factory=CellResources)
    """What each cell asks of Ray (``executor: ray``)."""

    def __post_init__(self) -> None:
        if self.executor not in EXECUTORS:
            raise ValueError(f"experiments.executor={self.executor!r} is not one of {list(EXECUTORS)}")
        if self.preset not in self.presets:
            raise ValueError(f"experiments.preset={self.preset!r} is not one of the presets {sorted(self.presets)}")
        level, heldout = self.success_level, self.grid.heldout
        if level.split not in heldout.splits or level.decoding not in heldout.decodings:
            raise ValueError(
                f"experiments.success_level reads the {level.split!r} split at decoding {level.decoding!r}, which preset "
                f"{self.preset!r} does not play (splits {heldout.splits}, decodings {sorted(heldout.decodings)}): set "
                "experiments.success_level.split / .decoding to one it plays"
            )

    @property
    def grid(self) -> GridPreset:
        """The chosen preset."""
        return self.presets[self.preset]

    @property
    def summaries_folder(self) -> Path:
        """The chosen preset's summaries: ``<summaries_dir>/<preset>``."""
        return Path(self.summaries_dir) / self.preset


@dataclass
class GridSettings:
    """What the experiment grid reads: the training run every cell varies, and the grid
    (``parameters_training.yml`` and ``parameters_experiments.yml`` together)."""

    training: TrainingConfig = field(default_factory=TrainingConfig)
    experiments: ExperimentsConfig = field(default_factory=ExperimentsConfig)
