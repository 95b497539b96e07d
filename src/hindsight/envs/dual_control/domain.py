"""The shared world of the telecom domain: one customer's phone and account.

Two parties act on one state. The agent (the support representative) changes the
*account* through its tools; only the simulated user can change the *phone* (its switches,
SIM card, restarts). Mobile data works when nothing in ``blockers`` stands in the way:

    airplane mode       the phone's airplane mode is on
    no sim              the SIM card is not detected (reseat it, then restart)
    restart pending     a SIM reseat, APN reset or system update waits for a restart
    line suspended      the account's line is suspended (bill unpaid: pay, then resume)
    mobile data off     the phone's mobile data switch is off
    bad apn             the phone's APN profile is wrong (reset it on the phone, or push it
                        from the network on phones without an APN menu; then restart)
    quota exhausted     the plan's data (plus top-ups) is used up
    roaming blocked     the phone is abroad and either the account's roaming or the phone's
                        data-roaming switch is off

The texts here (status bar, settings screen, account record) are the only way either
party learns the state: the agent reads the account itself and the phone through the user.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PLAN_LIMITS_GB: dict[str, float | None] = {"basic": 2.0, "plus": 10.0, "unlimited": None}
"""Monthly data of each plan (None: unlimited)."""
PLANS: tuple[str, ...] = tuple(PLAN_LIMITS_GB)
TOP_UP_GB = 1.0
"""Data one ``refuel_data`` adds (one charge on the bill)."""


@dataclass(frozen=True)
class PhoneModel:
    """A phone model: how its status bar labels data, and whether its user can edit the APN."""

    name: str
    data_label: str
    """The data icon's text when data flows ("4G", "LTE", "H+")."""
    apn_menu: bool
    """The user can reset the APN on the phone; without it only ``push_apn_settings`` fixes it."""


PHONE_MODELS: dict[str, PhoneModel] = {
    "Nexa 5": PhoneModel("Nexa 5", "4G", apn_menu=True),
    "Orbit X": PhoneModel("Orbit X", "LTE", apn_menu=False),
    "Lumen Flip": PhoneModel("Lumen Flip", "H+", apn_menu=False),
}


@dataclass
class Phone:
    """The phone: only the user's actions change it."""

    model: PhoneModel
    airplane_mode: bool = False
    mobile_data: bool = True
    data_roaming: bool = False
    apn_ok: bool = True
    sim_seated: bool = True
    restart_pending: bool = False


@dataclass
class Account:
    """The customer's account: only the agent's tools change it."""

    plan: str = "plus"
    data_used_gb: float = 1.0
    top_up_gb: float = 0.0
    roaming_enabled: bool = False
    abroad: bool = False
    line_suspended: bool = False
    bill_paid: bool = True
    plan_changes: int = 0
    """Plan changes made in this conversation (each one is billed)."""
    top_ups: int = 0
    """Data top-ups bought in this conversation (each one is billed)."""
    roaming_added_at_home: int = 0
    """Roaming add-ons enabled while the customer is at home (an unnecessary charge)."""

    def data_limit_gb(self) -> float | None:
        """The plan's data plus top-ups (None: unlimited)."""
        limit = PLAN_LIMITS_GB[self.plan]
        return None if limit is None else limit + self.top_up_gb

    def quota_exhausted(self) -> bool:
        """The data used has reached the limit."""
        limit = self.data_limit_gb()
        return limit is not None and self.data_used_gb >= limit


@dataclass
class World:
    """The shared state of one conversation."""

    phone: Phone
    account: Account = field(default_factory=Account)


def blockers(world: World) -> list[str]:
    """What keeps mobile data from working now (empty: it works); names as in the module doc."""
    phone, account = world.phone, world.account
    checks = [
        ("airplane mode", phone.airplane_mode),
        ("no sim", not phone.sim_seated),
        ("restart pending", phone.restart_pending),
        ("line suspended", account.line_suspended),
        ("mobile data off", not phone.mobile_data),
        ("bad apn", not phone.apn_ok),
        ("quota exhausted", account.quota_exhausted()),
        ("roaming blocked", account.abroad and not (account.roaming_enabled and phone.data_roaming)),
    ]
    return [name for name, blocked in checks if blocked]


def has_signal(world: World) -> bool:
    """The phone is registered on a network (no airplane mode, a SIM, an active line)."""
    return not (world.phone.airplane_mode or not world.phone.sim_seated or world.account.line_suspended)


def status_bar(world: World) -> str:
    """What the user reads on the status bar."""
    phone = world.phone
    if phone.airplane_mode:
        signal = "airplane mode on, no signal"
    elif not phone.sim_seated:
        signal = "airplane mode off, No SIM"
    elif world.account.line_suspended:
        signal = "airplane mode off, emergency calls only"
    else:
        signal = "airplane mode off, signal 4 bars" + (", roaming R" if world.account.abroad else "")
    if not blockers(world):
        data = f"data icon {phone.model.data_label}"
    elif phone.mobile_data and has_signal(world):
        data = f"data icon {phone.model.data_label} crossed out"
    else:
        data = "no data icon"
    return f"The status bar shows: {signal}, {data}."


def settings_screen(world: World) -> str:
    """What the user reads on the network settings screen."""
    phone = world.phone
    if phone.model.apn_menu:
        apn = "APN default" if phone.apn_ok else "APN custom (edited)"
    else:
        apn = "APN managed by carrier"
    return (
        f"The settings show: mobile data {_on(phone.mobile_data)}, data roaming {_on(phone.data_roaming)}, "
        f"{apn}, SIM {'ready' if phone.sim_seated else 'not detected'}, "
        f"restart required {'yes' if phone.restart_pending else 'no'}."
    )


def account_record(world: World) -> str:
    """What ``lookup_account`` returns."""
    account = world.account
    limit = account.data_limit_gb()
    quota = "unlimited" if limit is None else f"{account.data_used_gb:.1f} of {limit:.1f} GB used"
    return (
        f"Account: plan {account.plan}, data {quota}, roaming {_on(account.roaming_enabled)}, "
        f"location {'abroad' if account.abroad else 'home'}, "
        f"line {'suspended' if account.line_suspended else 'active'}, "
        f"bill {'paid' if account.bill_paid else 'overdue'}, "
        f"device APN profile {'valid' if world.phone.apn_ok else 'invalid'}."
    )


def _on(value: bool) -> str:
    return "on" if value else "off"
