"""A tiny grid without training (helpers of the grid tests): cells whose result is made up
from their seed, an identity whose settings a test can change cell by cell, and a counter of
the cells that ran."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hindsight.experiments.grid import Cell

CELLS = [Cell("grpo", 0, 1.0), Cell("seed", 0, 1.0), Cell("grpo", 1, 1.0), Cell("seed", 1, 1.0)]


def made_up_result(cell: Cell) -> dict[str, Any]:
    """What ``GridRun.run_cell`` returns, for 2 updates evaluated at 0 and 2 on 4 seen tasks."""
    rate = 0.25 * (cell.seed + (cell.method == "seed"))
    history = []
    for update in (0, 1, 2):
        row: dict[str, Any] = {"update": update, "charts/env_steps_total": 40.0 * update}
        if update:
            row.update({"rollout/env_episodes": 8.0, "rollout/success_rate": 1 / 3, "losses/grad_norm": float("nan")})
        if update != 1:
            row.update({"heldout/seen/sampled/success_rate": rate + 0.25 * (update == 2), "heldout/seen/sampled/episodes": 4.0,
                        "eval/seen/all/success_rate": rate, "eval/seen/all/episodes": 4.0})
        history.append(row)
    outcomes = {"agent": ["policy-sampled"] * 4, "eval_split": ["unseen"] * 4, "env": ["twc"] * 4, "task_type": ["twc"] * 4,
                "seed": [11, 12, 13, 14], "trial": [0] * 4, "won": [1, 0, int(cell.seed == 1), 0]}
    return {"history": history, "final": {"eval/seen/all/success_rate": rate, "eval/seen/all/episodes": 4.0},
            "env_steps": 80.0, "end_update": 2, "end_outcomes": outcomes, "cpu": "a test CPU"}


@dataclass
class Counting:
    """``run_cell`` counting the cells it trains."""

    ran: list[str] = field(default_factory=list)

    def __call__(self, cell: Cell) -> dict[str, Any]:
        self.ran.append(cell.name)
        return made_up_result(cell)


@dataclass
class Identity:
    """``experiments.resume.CellIdentity`` with per-cell learning rates and one start."""

    learning_rates: dict[str, float] = field(default_factory=dict)
    weights: str = "weights-1"

    def settings_of(self, cell: Cell) -> dict[str, Any]:
        return {"rl": {"learning_rate": self.learning_rates.get(cell.name, 1e-4), "progress": True}, "start_from": "base"}

    def fingerprint(self, cell: Cell) -> str:
        return self.weights

    def key(self, cell: Cell) -> str:
        return f"{cell.name}-{self.settings_of(cell)['rl']['learning_rate']}-{self.weights}"
