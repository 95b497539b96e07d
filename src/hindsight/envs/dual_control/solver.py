"""The gold solver: an expert policy that reads only what the agent reads.

It keeps a belief about the phone and account, updated from every observation text (account
record, settings screen, status bar, the user's and the tools' replies), and acts by a fixed
priority: read the account, the settings and the status bar; then fix what blocks data in
the order bill -> suspension -> airplane mode -> SIM -> mobile data -> roaming (account,
then phone) -> APN (the user resets it, or ``push_apn_settings`` where the phone has no APN
menu) -> quota (the customer's stated wish) -> restart; then read the status bar again and
say ``tell_user fixed`` once the data icon is clean. A user slip shows in the user's reply
("Oops, I tapped mobile data instead. Mobile data is now off.") and the belief takes it in,
so the next action repairs it. ``solve(task)`` plays the policy and returns its actions:
the environment's gold sequence (the user is deterministic per task, so replaying the
sequence reproduces the episode).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hindsight.envs.dual_control.session import ASK_PREFIX, FINAL_MESSAGE, TelecomSession
from hindsight.envs.dual_control.tasks import TOP_UP, TelecomTask

MAX_SOLVER_ACTIONS = 40
"""Safety cap on one solved episode (the longest gold sequence is far shorter)."""

_ACCOUNT = re.compile(
    r"Account: plan (\w+), data (?:(?P<used>[\d.]+) of (?P<limit>[\d.]+) GB used|unlimited), roaming (on|off), "
    r"location (abroad|home), line (suspended|active), bill (paid|overdue), device APN profile (valid|invalid)"
)
_SETTINGS = re.compile(
    r"mobile data (on|off), data roaming (on|off), APN (default|custom \(edited\)|managed by carrier), "
    r"SIM (ready|not detected), restart required (yes|no)"
)
_STATUS = re.compile(r"The status bar shows: airplane mode (on|off), .*?(no data icon|data icon \S+( crossed out)?)\.")
_SWITCH = re.compile(r"(Airplane mode|Mobile data|Data roaming) is (?:now|already) (on|off)")
_SWITCH_BELIEF = {"Airplane mode": "airplane", "Mobile data": "mobile_data", "Data roaming": "data_roaming"}
_WISH = re.compile(r"an upgrade to the (\w+) plan")


@dataclass
class Belief:
    """What the solver knows (None: not read yet)."""

    plan: str | None = None
    quota_exhausted: bool | None = None
    roaming_enabled: bool = False
    abroad: bool = False
    suspended: bool = False
    bill_paid: bool = True
    apn_ok: bool = True
    settings_read: bool = False
    mobile_data: bool = True
    data_roaming: bool = False
    apn_menu: bool = True
    sim_ready: bool = True
    restart_pending: bool = False
    airplane: bool | None = None
    data_flows: bool = False
    checked_since_change: bool = False


class GoldSolver:
    """The expert policy of one episode; ``act(observation)`` -> the next action."""

    def __init__(self, task_text: str) -> None:
        wish = _WISH.search(task_text)
        self.wish = wish.group(1) if wish else TOP_UP
        self.belief = Belief()

    def act(self, observation: str) -> str:
        """Take in ``observation`` (the reply to the previous action) and choose the next action."""
        self._observe(observation)
        return self._choose()

    def _observe(self, text: str) -> None:
        b = self.belief
        if match := _ACCOUNT.search(text):
            plan, used, limit, roaming, where, line, bill, apn = match.group(1, "used", "limit", 4, 5, 6, 7, 8)
            b.plan, b.roaming_enabled, b.abroad = plan, roaming == "on", where == "abroad"
            b.quota_exhausted = used is not None and float(used) >= float(limit)
            b.suspended, b.bill_paid, b.apn_ok = line == "suspended", bill == "paid", apn == "valid"
        if match := _SETTINGS.search(text):
            data, roaming, apn, sim, restart = match.groups()
            b.settings_read, b.mobile_data, b.data_roaming = True, data == "on", roaming == "on"
            b.apn_menu, b.sim_ready, b.restart_pending = apn != "managed by carrier", sim == "ready", restart == "yes"
        if match := _STATUS.search(text):
            b.airplane = match.group(1) == "on"
            b.data_flows = match.group(2).startswith("data icon") and not match.group(3)
            b.checked_since_change = True
        else:
            changed = text.startswith(("User: Okay", "User: Oops", "Tool:"))
            b.checked_since_change = b.checked_since_change and not changed
        for name, value in _SWITCH.findall(text):
            setattr(b, _SWITCH_BELIEF[name], value == "on")
        self._observe_effects(text)

    def _observe_effects(self, text: str) -> None:
        b = self.belief
        if "the phone restarted" in text:
            b.restart_pending = False
        if "put it back" in text:
            b.sim_ready, b.restart_pending = True, True
        if "reset the APN" in text or "APN profile sent" in text:
            b.apn_ok, b.restart_pending = True, True
        if "can't find any APN setting" in text:
            b.apn_menu = False
        if "paid the bill" in text or "already paid" in text:
            b.bill_paid = True
        if "line is active" in text:
            b.suspended = False
        if "Roaming enabled" in text or "Roaming is already enabled" in text:
            b.roaming_enabled = True
        if "Added" in text or "Plan changed" in text:
            b.quota_exhausted = False

    def _choose(self) -> str:
        b = self.belief
        if b.plan is None:
            return "lookup_account"
        if not b.settings_read:
            return ASK_PREFIX + "check network settings"
        if b.airplane is None:
            return ASK_PREFIX + "read status bar"
        fixes = [
            (not b.bill_paid, ASK_PREFIX + "pay the bill"),
            (b.suspended, "resume_line"),
            (b.airplane, ASK_PREFIX + "turn off airplane mode"),
            (not b.sim_ready, ASK_PREFIX + "reseat sim card"),
            (not b.mobile_data, ASK_PREFIX + "turn on mobile data"),
            (b.abroad and not b.roaming_enabled, "enable_roaming"),
            (b.abroad and not b.data_roaming, ASK_PREFIX + "turn on data roaming"),
            (not b.apn_ok, ASK_PREFIX + "reset apn" if b.apn_menu else "push_apn_settings"),
            (bool(b.quota_exhausted), "refuel_data" if self.wish == TOP_UP else f"change_plan {self.wish}"),
            (b.restart_pending, ASK_PREFIX + "restart phone"),
        ]
        for needed, action in fixes:
            if needed:
                return action
        if not b.checked_since_change:
            return ASK_PREFIX + "read status bar"
        if b.data_flows:
            return FINAL_MESSAGE
        self.belief = Belief(airplane=b.airplane)  # the status bar disagrees with the belief: read everything again
        return "lookup_account"


def solve(task: TelecomTask, opening: str) -> list[str]:
    """The gold action sequence of ``task`` (``opening``: the first observation)."""
    session, solver = TelecomSession(task), GoldSolver(task.text)
    observation, actions = opening, []
    while not session.finished and len(actions) < MAX_SOLVER_ACTIONS:
        action = solver.act(observation)
        actions.append(action)
        observation = session.act(action)
    return actions
