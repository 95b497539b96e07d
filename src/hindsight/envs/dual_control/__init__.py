"""A dual-control tool-use domain (telecom support), offline and procedurally generated.

The agent (support) and a rule-based simulated user (the customer) act on one shared state:
the agent changes the account with its tools, only the user can change the phone. Modules:
``domain`` (the state and its texts), ``tasks`` (seeded fault combinations and folds),
``user`` (the user simulator's rules), ``session`` (the agent's tools and the final check),
``solver`` (the gold expert), ``env`` (the ``TextEnvironment``: ``environment.env:
dual_control``, game ``telecom``). docs/dual_control.md describes the domain.
"""

from hindsight.envs.dual_control.env import DualControlEnvironment
from hindsight.envs.dual_control.session import ACTIONS, TelecomSession, final_check
from hindsight.envs.dual_control.solver import GoldSolver, solve
from hindsight.envs.dual_control.tasks import FAULTS, TelecomTask, make_task

__all__ = [
    "ACTIONS",
    "FAULTS",
    "DualControlEnvironment",
    "GoldSolver",
    "TelecomSession",
    "TelecomTask",
    "final_check",
    "make_task",
    "solve",
]
