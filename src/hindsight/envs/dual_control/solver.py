"""The gold solver, and the two rule-breaking variants the tests compare it with.

``GoldSolver`` picks each action from the conversation so far and the true state, but only
acts on what the conversation has already shown: it first asks what the problem is (the
hard persona's vague opening), identifies the customer (asks the number; a customer who
does not know it gives name and date of birth), reads the account (``get_details``), the
settings screen and, for MMS, the messages app's permissions; then fixes what it read in a
fixed priority: bill -> suspension -> airplane mode -> SIM -> mobile data -> roaming
(account, then phone) -> APN (the user resets it, or ``push_apn_settings`` on a phone
without an APN menu) -> app permissions -> data saver -> VPN -> network mode -> quota (asks
the preference, then refuels at most the policy's limit or changes to the named plan) ->
restart; then says ``tell_user fixed``, and the user's check ends the conversation. An
out-of-scope request is transferred right after the identification. A slip shows in the user's reply, and the next
action repairs it.

Variants (tests): ``identify=False`` never identifies (its account tools are refused, so it
skips them; it transfers an out-of-scope request unidentified); ``follow_policy=False`` refuels what the customer asks for and tries to fix an
out-of-scope request instead of transferring it. Each loses exactly the tasks that need
what it skips (``TelecomTask.needs_identification``, ``refuel_over_limit``, intent
``out_of_scope``). ``solve(task)`` plays the gold policy and returns its actions: the
environment's gold sequence (the user is deterministic per task).
"""

from __future__ import annotations

from hindsight.envs.dual_control.policy import REFUEL_LIMIT_GB
from hindsight.envs.dual_control.session import ASK_PREFERENCE, ASK_PREFIX, FINAL_MESSAGE, TRANSFER, TelecomSession
from hindsight.envs.dual_control.tasks import TOP_UP, TelecomTask
from hindsight.envs.dual_control.tools import ACCOUNT_TOOLS, parse_call

MAX_SOLVER_ACTIONS = 40
"""Safety cap on one solved episode (the longest gold sequence is far shorter)."""


class GoldSolver:
    """The expert policy of one conversation (see the module docstring)."""

    def __init__(self, session: TelecomSession, identify: bool = True, follow_policy: bool = True) -> None:
        self.session, self.identify, self.follow_policy = session, identify, follow_policy

    def _asked(self, instruction: str) -> bool:
        return ASK_PREFIX + instruction in self.session.actions

    def act(self) -> str:
        """The next action."""
        session = self.session
        task, seen = session.task, session.seen
        if task.persona == "hard" and not self._asked("what is the problem"):
            return ASK_PREFIX + "what is the problem"
        if self.identify and not session.identified:
            if seen.phone_numbers:
                return f"identify_by_phone {seen.phone_numbers[0]}"
            if seen.names:
                return "identify_by_name " + " ".join(seen.names[0])
            if not self._asked("what is your phone number"):
                return ASK_PREFIX + "what is your phone number"
            return ASK_PREFIX + "what is your name and date of birth"
        if task.intent == "out_of_scope" and self.follow_policy:
            return TRANSFER
        if self.identify and "get_details" not in session.actions:
            return "get_details"
        if not self._asked("check network settings"):
            return ASK_PREFIX + "check network settings"
        if task.intent == "mms" and not self._asked("check messages app permissions"):
            return ASK_PREFIX + "check messages app permissions"
        for action in self._fixes():
            if session.identified or parse_call(action).tool not in ACCOUNT_TOOLS:
                return action
        return FINAL_MESSAGE

    def _fixes(self) -> list[str]:
        """Every fix the true state still needs, in priority order."""
        world, task = self.session.world, self.session.task
        phone, account = world.phone, world.account
        ask = ASK_PREFIX
        apn_fix = ask + "reset apn" if phone.model.apn_menu else "push_apn_settings"
        if task.preference == TOP_UP:
            gb = min(task.refuel_wanted_gb, REFUEL_LIMIT_GB) if self.follow_policy else task.refuel_wanted_gb
            charge = f"refuel_data {gb}"
        else:
            charge = f"change_plan {task.preference}"
        quota_fix = charge if self._asked("refuel or plan upgrade") else ASK_PREFERENCE
        fixes = [
            (not account.bill_paid, ask + "pay the bill"),
            (account.line_suspended, "resume_line"),
            (phone.airplane_mode, ask + "turn off airplane mode"),
            (not phone.sim_seated, ask + "reseat sim card"),
            (not phone.mobile_data, ask + "turn on mobile data"),
            (account.abroad and not account.roaming_enabled, "enable_roaming"),
            (account.abroad and not phone.data_roaming, ask + "turn on data roaming"),
            (not (phone.apn_ok and phone.mms_apn_ok), apn_fix),
            (not phone.messages_permissions, ask + "grant messages permissions"),
            (phone.data_saver, ask + "turn off data saver"),
            (phone.vpn, ask + "turn off vpn"),
            (phone.network_mode != "auto", ask + "set network mode to auto"),
            (account.quota_exhausted(), quota_fix),
            (phone.restart_pending, ask + "restart phone"),
        ]
        return [action for needed, action in fixes if needed]


def play(task: TelecomTask, identify: bool = True, follow_policy: bool = True) -> TelecomSession:
    """Play a solver (gold by default) on ``task``; return the finished session."""
    session = TelecomSession(task)
    session.opening()
    solver = GoldSolver(session, identify, follow_policy)
    while not session.finished and len(session.actions) < MAX_SOLVER_ACTIONS:
        session.act(parse_call(solver.act()))
    return session


def solve(task: TelecomTask) -> list[str]:
    """The gold action sequence of ``task``."""
    return list(play(task).actions)
