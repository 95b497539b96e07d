"""The shared world of the telecom domain: one customer's phone and account.

Two parties act on one state. The agent (the support representative) changes the
*account* through its tools; only the simulated user can change the *phone* (its switches,
SIM card, restarts, app permissions). Mobile data works when nothing in ``blockers``
stands in the way:

    airplane mode       the phone's airplane mode is on
    no sim              the SIM card is not detected (reseat it, then restart)
    restart pending     a SIM reseat, APN reset or APN push waits for a restart
    line suspended      the account's line is suspended (bill unpaid: pay, then resume)
    mobile data off     the phone's mobile data switch is off
    bad apn             the phone's APN profile is wrong (reset it on the phone, or push it
                        from the network on phones without an APN menu; then restart)
    quota exhausted     the plan's data (plus refuels) is used up
    roaming blocked     the phone is abroad and either the account's roaming or the phone's
                        data-roaming switch is off

Data is *slow* (``slow_causes``) when data saver, a VPN or a network mode other than
"auto" throttles it: the speed test (``speed_test``) shows under ``GOOD_SPEED_MBPS``.
An MMS goes out (``mms_blockers``) when mobile data works, the APN carries the MMS server
and the messages app may use SMS and storage.

The texts here (settings screen, speed test, account record) are the only way either party
learns the state: the agent reads the account itself and the phone through the user. The
settings screen names what differs from the phone's defaults (our simplification, so that a
small policy can find the one setting that matters in it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

PLAN_LIMITS_GB: dict[str, float | None] = {"basic": 2.0, "plus": 10.0, "unlimited": None}
"""Monthly data of each plan (None: unlimited)."""
PLANS: tuple[str, ...] = tuple(PLAN_LIMITS_GB)
NETWORK_MODES: dict[str, float] = {"auto": 48.0, "3g only": 6.0, "2g only": 0.3}
"""Network mode -> download speed (Mbps) with nothing else throttling."""
GOOD_SPEED_MBPS = 10.0
"""A speed test at or above this is what the customer calls fast."""


@dataclass(frozen=True)
class PhoneModel:
    """A phone model: whether its user can edit the APN."""

    name: str
    apn_menu: bool
    """The user can reset the APN on the phone; without it only ``push_apn_settings`` fixes it."""


PHONE_MODELS: dict[str, PhoneModel] = {
    "Nexa 5": PhoneModel("Nexa 5", apn_menu=True),
    "Orbit X": PhoneModel("Orbit X", apn_menu=False),
    "Lumen Flip": PhoneModel("Lumen Flip", apn_menu=False),
}


@dataclass(frozen=True)
class Customer:
    """Who the customer is: what identification matches against."""

    first_name: str
    last_name: str
    birth_date: str
    """YYYY-MM-DD."""
    phone_number: str
    """NNN-NNNN."""


@dataclass
class Phone:
    """The phone: only the user's actions change it."""

    model: PhoneModel
    airplane_mode: bool = False
    mobile_data: bool = True
    data_roaming: bool = False
    apn_ok: bool = True
    mms_apn_ok: bool = True
    sim_seated: bool = True
    restart_pending: bool = False
    data_saver: bool = False
    vpn: bool = False
    network_mode: str = "auto"
    messages_permissions: bool = True


@dataclass
class Account:
    """The customer's account: only the agent's tools change it."""

    plan: str = "plus"
    data_used_gb: float = 1.0
    refuel_gb: float = 0.0
    """Data added by refuels in this conversation (each refuel is billed)."""
    roaming_enabled: bool = False
    abroad: bool = False
    line_suspended: bool = False
    bill_paid: bool = True
    plan_changes: int = 0
    """Plan changes made in this conversation (each one is billed)."""
    roaming_added_at_home: int = 0
    """Roaming add-ons enabled while the customer is at home (an unnecessary charge)."""

    def data_limit_gb(self) -> float | None:
        """The plan's data plus refuels (None: unlimited)."""
        limit = PLAN_LIMITS_GB[self.plan]
        return None if limit is None else limit + self.refuel_gb

    def quota_exhausted(self) -> bool:
        """The data used has reached the limit."""
        limit = self.data_limit_gb()
        return limit is not None and self.data_used_gb >= limit


@dataclass
class World:
    """The shared state of one conversation."""

    phone: Phone
    customer: Customer
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


def slow_causes(world: World) -> list[str]:
    """What throttles working mobile data (empty: full speed)."""
    phone = world.phone
    checks = [("data saver", phone.data_saver), ("vpn", phone.vpn), ("network mode", phone.network_mode != "auto")]
    return [name for name, slow in checks if slow]


def mms_blockers(world: World) -> list[str]:
    """What keeps an MMS from going out (empty: it is sent)."""
    phone = world.phone
    extra = [("mms apn", not phone.mms_apn_ok), ("messages permissions", not phone.messages_permissions)]
    return blockers(world) + [name for name, blocked in extra if blocked]


def download_mbps(world: World) -> float:
    """What a speed test measures (0.0: no connection)."""
    if blockers(world):
        return 0.0
    speed = NETWORK_MODES[world.phone.network_mode]
    if world.phone.data_saver:
        speed /= 8.0
    if world.phone.vpn:
        speed /= 6.0
    return round(speed, 1)


def speed_test(world: World) -> str:
    """What the user reads after running a speed test."""
    speed = download_mbps(world)
    if speed == 0.0:
        return "The speed test says: no connection."
    verdict = "fast" if speed >= GOOD_SPEED_MBPS else "slow"
    return f"The speed test says: {speed:.1f} Mbps download ({verdict})."


def settings_screen(world: World) -> str:
    """What the user reads on the network settings screen: what differs from the phone's
    defaults (airplane mode off, mobile data on, data roaming off, data saver off, VPN off,
    network mode auto, the carrier's APN, SIM ready, no restart), and the signal."""
    phone = world.phone
    if phone.airplane_mode:
        signal = "no signal"
    elif not phone.sim_seated:
        signal = "No SIM"
    elif world.account.line_suspended:
        signal = "emergency calls only"
    else:
        signal = "signal 4 bars" + (", roaming" if world.account.abroad else "")
    unusual = [
        (phone.airplane_mode, "airplane mode on"),
        (not phone.mobile_data, "mobile data off"),
        (phone.data_roaming, "data roaming on"),
        (phone.data_saver, "data saver on"),
        (phone.vpn, "VPN on"),
        (phone.network_mode != "auto", f"network mode {phone.network_mode}"),
        (phone.model.apn_menu and not phone.apn_ok, "APN custom (edited)"),
        (phone.model.apn_menu and phone.apn_ok and not phone.mms_apn_ok, "APN without MMS server"),
        (not phone.sim_seated, "SIM not detected"),
        (phone.restart_pending, "restart required"),
    ]
    listed = [text for shown, text in unusual if shown]
    return f"The settings show: {signal}; " + (", ".join(listed) if listed else "all settings at default") + "."


def permissions_screen(world: World) -> str:
    """What the user reads on the messages app's permission screen."""
    state = "allowed" if world.phone.messages_permissions else "denied"
    return f"The messages app permissions show: SMS {state}, storage {state}."


def account_record(world: World) -> str:
    """What ``get_details`` returns once the customer is identified."""
    account, phone = world.account, world.phone
    limit = account.data_limit_gb()
    quota = "unlimited" if limit is None else f"{account.data_used_gb:.1f} of {limit:.1f} GB used" + (
        " (none left)" if account.quota_exhausted() else "")
    profile = "invalid" if not phone.apn_ok else ("valid" if phone.mms_apn_ok else "missing MMS server")
    return (
        f"Account of {world.customer.first_name} {world.customer.last_name}: plan {account.plan}, data {quota}, "
        f"roaming {_on(account.roaming_enabled)}, location {'abroad' if account.abroad else 'home'}, "
        f"line {'suspended' if account.line_suspended else 'active'}, bill {'paid' if account.bill_paid else 'overdue'}, "
        f"device APN profile {profile}."
    )


def _on(value: bool) -> str:
    return "on" if value else "off"
