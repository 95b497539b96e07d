"""Procedural telecom tasks: a seeded fault combination on a seeded phone and account.

A task is (split, seed) -> a ``World`` with one to three faults (``FAULTS``), the phone
model, the customer's preference when more data is needed (a one-off top-up or an upgrade
to a named plan, stated in the task text whatever the faults), and whether the simulated
user slips once (``user.UserSimulator``). The same (split, seed) always gives the same task
(``random.Random`` seeded with the string "split:seed").

Folds. "train" and "dev" draw from the same distribution (disjoint seeds): one fault, or
two faults whose pair is not held out, on the seen phone models. "test" is the unseen fold:
a held-out pair (``HELD_OUT_PAIRS``) or any three faults, on any phone model including
``UNSEEN_MODELS`` (never in train or dev).
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from hindsight.envs.base import check_split
from hindsight.envs.dual_control.domain import PHONE_MODELS, PLAN_LIMITS_GB, PLANS, Account, Phone, World

FAULTS: tuple[str, ...] = ("airplane", "data_off", "apn", "sim", "quota", "suspended", "roaming", "restart")
"""Fault families; each breaks one condition of ``domain.blockers``."""
HELD_OUT_PAIRS: frozenset[frozenset[str]] = frozenset(
    frozenset(pair)
    for pair in (("apn", "roaming"), ("sim", "quota"), ("airplane", "suspended"), ("data_off", "restart"))
)
"""Fault pairs only the test fold has."""
SEEN_MODELS: tuple[str, ...] = ("Nexa 5", "Orbit X")
UNSEEN_MODELS: tuple[str, ...] = ("Lumen Flip",)
SPLIT_SEED_START: dict[str, int] = {"train": 0, "dev": 1_000_000, "test": 2_000_000}
SEEDS_PER_SPLIT = 100_000
TOP_UP = "top-up"
DEFAULT_SLIP_PROBABILITY = 0.3


def fault_combinations(split: str) -> list[tuple[str, ...]]:
    """Every fault combination of fold ``split`` (sorted tuples)."""
    check_split(split)
    singles = [(fault,) for fault in FAULTS]
    pairs = list(itertools.combinations(FAULTS, 2))
    if split != "test":
        return singles + [pair for pair in pairs if frozenset(pair) not in HELD_OUT_PAIRS]
    held_out = [pair for pair in pairs if frozenset(pair) in HELD_OUT_PAIRS]
    return held_out + list(itertools.combinations(FAULTS, 3))


def split_models(split: str) -> tuple[str, ...]:
    """The phone models of fold ``split``."""
    check_split(split)
    return SEEN_MODELS + UNSEEN_MODELS if split == "test" else SEEN_MODELS


def split_seeds(split: str) -> range:
    """The task seeds of fold ``split``."""
    check_split(split)
    return range(SPLIT_SEED_START[split], SPLIT_SEED_START[split] + SEEDS_PER_SPLIT)


@dataclass(frozen=True)
class TelecomTask:
    """One generated task."""

    split: str
    seed: int
    faults: tuple[str, ...]
    initial_plan: str
    preference: str
    """``TOP_UP`` or the plan the customer would upgrade to when more data is needed."""
    slips: bool
    """The user toggles the wrong switch on the first switch instruction."""
    world: World
    """The starting state (copy it before playing)."""

    @property
    def text(self) -> str:
        """The task shown to the agent."""
        wish = "a one-off data top-up" if self.preference == TOP_UP else f"an upgrade to the {self.preference} plan"
        return (
            f"Your task is to get the customer's mobile data working again (phone: {self.world.phone.model.name}). "
            f"If more data is needed, the customer wants {wish}; make no other changes or charges. "
            "When it works, tell the user it is fixed."
        )


def make_task(split: str, seed: int, slip_probability: float = DEFAULT_SLIP_PROBABILITY) -> TelecomTask:
    """Task ``seed`` of fold ``split`` (see the module docstring)."""
    rng = random.Random(f"{split}:{int(seed)}")
    faults = rng.choice(fault_combinations(split))
    model = PHONE_MODELS[rng.choice(split_models(split))]
    plan = rng.choice(PLANS[:2] if "quota" in faults else PLANS)
    bigger = [name for name in PLANS if PLANS.index(name) > PLANS.index(plan)]
    preference = rng.choice([TOP_UP] + bigger) if bigger else TOP_UP
    limit = PLAN_LIMITS_GB[plan]
    used = limit if "quota" in faults else round(rng.uniform(0.1, (limit or 20.0) - 0.5), 1)
    phone = Phone(model=model)
    account = Account(plan=plan, data_used_gb=float(used), abroad="roaming" in faults)
    for fault in faults:
        _apply_fault(fault, phone, account)
    slips = rng.random() < slip_probability
    return TelecomTask(split, int(seed), tuple(faults), plan, preference, slips, World(phone, account))


def _apply_fault(fault: str, phone: Phone, account: Account) -> None:
    if fault == "airplane":
        phone.airplane_mode = True
    elif fault == "data_off":
        phone.mobile_data = False
    elif fault == "apn":
        phone.apn_ok = False
    elif fault == "sim":
        phone.sim_seated = False
    elif fault == "suspended":
        account.line_suspended, account.bill_paid = True, False
    elif fault == "roaming":
        account.abroad, account.roaming_enabled, phone.data_roaming = True, False, False
    elif fault == "restart":
        phone.restart_pending = True
    elif fault != "quota":  # quota: the data used is set to the limit by make_task
        raise ValueError(f"unknown fault {fault!r}")
