"""Procedural telecom tasks: a seeded intent, faults, persona, customer, phone and account.

A task is (split, seed) -> an intent (``INTENTS``: mobile data, slow data, MMS, or a
request support must transfer), one to three faults of that intent (``INTENT_FAULTS``),
a persona (``PERSONAS``: how the user answers, ``user``), the customer (name, date of
birth, phone number), the phone model, the plan, and, when the quota is a fault, the
customer's preference (a refuel of 1-3 GB, or an upgrade to a named plan; the user says it
only when asked). The same (split, seed) always gives the same task (``random.Random``
seeded with the string "split:seed").

Folds. "train" and "dev" draw from the same distribution (disjoint seeds): one fault, or
two faults whose pair is not held out, on the seen phone models, the first two
out-of-scope requests. "test" is the unseen fold: a held-out pair (``HELD_OUT_PAIRS``) or
any three faults of an intent, on any phone model including ``UNSEEN_MODELS``, and the
held-out request ``port_number``.

``signature`` names what makes two tasks the same task (everything but the customer's
identity and data use off the quota); ``DualControlEnvironment.seeds`` uses it so that the
held-out "seen" window never repeats a task of the training window before it.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from hindsight.envs.base import check_split
from hindsight.envs.dual_control.domain import PHONE_MODELS, PLAN_LIMITS_GB, PLANS, Account, Customer, Phone, World
from hindsight.envs.dual_control.policy import OUT_OF_SCOPE, POLICY

INTENT_FAULTS: dict[str, tuple[str, ...]] = {
    "mobile_data": ("airplane", "data_off", "apn", "sim", "quota", "suspended", "roaming", "restart"),
    "slow_data": ("data_saver", "vpn", "network_mode"),
    "mms": ("mms_apn", "permissions", "data_off"),
    "out_of_scope": tuple(OUT_OF_SCOPE),
}
"""Intent -> its fault families (for out_of_scope: the request)."""
INTENTS: tuple[str, ...] = tuple(INTENT_FAULTS)
INTENT_WEIGHTS: tuple[float, ...] = (0.4, 0.2, 0.2, 0.2)
FAULTS: tuple[str, ...] = tuple(dict.fromkeys(f for faults in INTENT_FAULTS.values() for f in faults))
PERSONAS: tuple[str, ...] = ("easy", "hard")
HELD_OUT_PAIRS: frozenset[frozenset[str]] = frozenset(
    frozenset(pair)
    for pair in (
        ("apn", "roaming"), ("sim", "quota"), ("airplane", "suspended"), ("data_off", "restart"),
        ("data_saver", "vpn"), ("mms_apn", "permissions"),
    )
)
"""Fault pairs only the test fold has."""
HELD_OUT_REQUESTS: tuple[str, ...] = ("port_number",)
SEEN_MODELS: tuple[str, ...] = ("Nexa 5", "Orbit X")
UNSEEN_MODELS: tuple[str, ...] = ("Lumen Flip",)
SPLIT_SEED_START: dict[str, int] = {"train": 0, "dev": 1_000_000, "test": 2_000_000}
SEEDS_PER_SPLIT = 100_000
TOP_UP = "refuel"
DEFAULT_SLIP_PROBABILITY = 0.5
FIRST_NAMES = ("Ana", "Ben", "Chloe", "David", "Elena", "Farid", "Grace", "Hugo", "Iris", "Jonas", "Keiko", "Liam")
LAST_NAMES = ("Silva", "Novak", "Okafor", "Meyer", "Rossi", "Tanaka", "Dubois", "Larsen", "Costa", "Ahmed")


def fault_combinations(split: str, intent: str) -> list[tuple[str, ...]]:
    """Every fault combination of ``intent`` in fold ``split`` (sorted as in ``INTENT_FAULTS``)."""
    check_split(split)
    faults = INTENT_FAULTS[intent]
    if intent == "out_of_scope":
        return [(r,) for r in faults if (r in HELD_OUT_REQUESTS) == (split == "test")]
    pairs = list(itertools.combinations(faults, 2))
    if split != "test":
        return [(fault,) for fault in faults] + [pair for pair in pairs if frozenset(pair) not in HELD_OUT_PAIRS]
    return [pair for pair in pairs if frozenset(pair) in HELD_OUT_PAIRS] + list(itertools.combinations(faults, 3))


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
    intent: str
    faults: tuple[str, ...]
    persona: str
    initial_plan: str
    preference: str
    """``TOP_UP`` (then ``refuel_wanted_gb``) or the plan to upgrade to when more data is needed."""
    refuel_wanted_gb: int
    slips: bool
    """The user toggles the wrong switch on the first switch instruction (hard persona only)."""
    world: World
    """The starting state (copy it before playing)."""

    @property
    def text(self) -> str:
        """The task shown to the agent: the policy document."""
        return POLICY

    @property
    def needs_account_change(self) -> bool:
        """Fixing it takes an account tool."""
        account_faults = {"quota", "suspended", "roaming"}
        apn_by_network = not self.world.phone.model.apn_menu and {"apn", "mms_apn"} & set(self.faults)
        return bool(account_faults & set(self.faults) or apn_by_network)

    @property
    def needs_identification(self) -> bool:
        """Winning takes an identified customer (an account change, or a transfer)."""
        return self.needs_account_change or self.intent == "out_of_scope"

    @property
    def refuel_over_limit(self) -> bool:
        """The customer asks for a refuel above the policy's limit."""
        from hindsight.envs.dual_control.policy import REFUEL_LIMIT_GB

        return "quota" in self.faults and self.preference == TOP_UP and self.refuel_wanted_gb > REFUEL_LIMIT_GB

    def signature(self) -> tuple:
        """What makes two tasks the same task (see the module docstring)."""
        wish = (self.preference, self.refuel_wanted_gb) if "quota" in self.faults else None
        phone = self.world.phone
        return (self.intent, self.faults, self.persona, self.slips, phone.model.name, phone.network_mode, self.initial_plan, wish)


def make_task(split: str, seed: int, slip_probability: float = DEFAULT_SLIP_PROBABILITY) -> TelecomTask:
    """Task ``seed`` of fold ``split`` (see the module docstring)."""
    rng = random.Random(f"{split}:{int(seed)}")
    intent = rng.choices(INTENTS, weights=INTENT_WEIGHTS)[0]
    faults = rng.choice(fault_combinations(split, intent))
    persona = rng.choice(PERSONAS)
    model = PHONE_MODELS[rng.choice(split_models(split))]
    plan = rng.choice(PLANS[:2] if "quota" in faults else PLANS)
    bigger = [name for name in PLANS if PLANS.index(name) > PLANS.index(plan)]
    preference = rng.choice([TOP_UP, TOP_UP] + bigger)
    refuel_wanted = rng.choice((1, 2, 3))
    limit = PLAN_LIMITS_GB[plan]
    used = limit if "quota" in faults else round(rng.uniform(0.1, (limit or 20.0) - 0.5), 1)
    customer = Customer(
        rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES),
        f"{rng.randint(1950, 2004)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}", f"555-{rng.randint(0, 9999):04d}",
    )
    phone = Phone(model=model)
    account = Account(plan=plan, data_used_gb=float(used), abroad="roaming" in faults)
    for fault in faults:
        _apply_fault(fault, phone, account, rng)
    slips = persona == "hard" and rng.random() < slip_probability
    return TelecomTask(split, int(seed), intent, tuple(faults), persona, plan, preference, refuel_wanted, slips,
                       World(phone, customer, account))


def _apply_fault(fault: str, phone: Phone, account: Account, rng: random.Random) -> None:
    switches = {"airplane": ("airplane_mode", True), "data_off": ("mobile_data", False), "apn": ("apn_ok", False),
                "sim": ("sim_seated", False), "restart": ("restart_pending", True), "data_saver": ("data_saver", True),
                "vpn": ("vpn", True), "mms_apn": ("mms_apn_ok", False), "permissions": ("messages_permissions", False)}
    if fault in switches:
        setattr(phone, *switches[fault])
    elif fault == "network_mode":
        phone.network_mode = rng.choice(("3g only", "2g only"))
    elif fault == "suspended":
        account.line_suspended, account.bill_paid = True, False
    elif fault == "roaming":
        account.abroad, account.roaming_enabled, phone.data_roaming = True, False, False
    elif fault not in ("quota", *OUT_OF_SCOPE):  # quota: the data used is set to the limit by make_task
        raise ValueError(f"unknown fault {fault!r}")
