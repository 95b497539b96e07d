"""One support conversation: the agent's tools, the user's turns and the final check.

Actions (the same list at every step, ``ACTIONS``):

    lookup_account                 the account record (``domain.account_record``)
    change_plan <plan>             switch plan (billed; the new plan's data applies)
    refuel_data                    buy a 1 GB top-up (billed)
    resume_line                    lift a suspension; refused while the bill is unpaid
    enable_roaming                 add roaming to the account (billed; unnecessary at home)
    push_apn_settings              send the APN profile to the phone over the air (a restart
                                   applies it)
    ask_user <instruction>         the user acts or reads (``user.UserSimulator``)
    tell_user fixed                end: the customer checks; won iff ``final_check`` passes
    transfer_to_human              end: the conversation is handed over (lost)

Reward (``final_check``): after ``tell_user fixed`` the task is won iff mobile data works
(``domain.blockers`` is empty) and the account shows exactly the changes the task asked for:
when the quota was exhausted, one top-up (customer wants a top-up) or the one plan change to
the named plan (customer wants an upgrade); otherwise no top-up and no plan change; and no
roaming add-on while at home. A conversation that never says ``tell_user fixed`` is not won,
even when the state is right.
"""

from __future__ import annotations

import copy

from hindsight.envs.dual_control.domain import PLANS, TOP_UP_GB, World, account_record, blockers
from hindsight.envs.dual_control.tasks import TOP_UP, TelecomTask
from hindsight.envs.dual_control.user import INSTRUCTIONS, UserSimulator

FINAL_MESSAGE = "tell_user fixed"
TRANSFER = "transfer_to_human"
ASK_PREFIX = "ask_user "
ACTIONS: tuple[str, ...] = (
    "lookup_account",
    *(f"change_plan {plan}" for plan in PLANS),
    "refuel_data",
    "resume_line",
    "enable_roaming",
    "push_apn_settings",
    *(ASK_PREFIX + instruction for instruction in INSTRUCTIONS),
    FINAL_MESSAGE,
    TRANSFER,
)
"""Every action; all are valid in every state."""


def final_check(task: TelecomTask, world: World) -> list[str]:
    """What is wrong with ``world`` at the end of ``task`` (empty: the task is solved)."""
    account = world.account
    problems = [f"mobile data still blocked: {name}" for name in blockers(world)]
    quota_task = "quota" in task.faults
    wants_top_up = quota_task and task.preference == TOP_UP
    wanted_plan = task.preference if quota_task and not wants_top_up else task.initial_plan
    if account.top_ups != int(wants_top_up):
        problems.append(f"{account.top_ups} data top-up(s) bought, {int(wants_top_up)} wanted")
    if account.plan != wanted_plan or account.plan_changes != int(wanted_plan != task.initial_plan):
        problems.append(f"plan {account.plan} after {account.plan_changes} change(s), {wanted_plan} wanted")
    if account.roaming_added_at_home:
        problems.append("roaming add-on charged while at home")
    return problems


class TelecomSession:
    """The state of one conversation on ``task`` (the task's world is copied)."""

    def __init__(self, task: TelecomTask) -> None:
        self.task = task
        self.world = copy.deepcopy(task.world)
        self.user = UserSimulator(self.world, task.slips)
        self.finished = False
        self.won = False
        self.problems: list[str] = []
        """``final_check``'s findings once the agent said it is fixed."""

    def act(self, action: str) -> str:
        """Play ``action`` (one of ``ACTIONS``); return the observation."""
        if self.finished:
            raise RuntimeError("the conversation has ended")
        if action.startswith(ASK_PREFIX):
            return "User: " + self.user.respond(action[len(ASK_PREFIX):])
        if action == FINAL_MESSAGE:
            self.finished = True
            self.problems = final_check(self.task, self.world)
            self.won = not self.problems
            if self.won:
                return "User: It works now, thank you! (conversation ended)"
            return "User: It still isn't right: " + "; ".join(self.problems) + ". (conversation ended)"
        if action == TRANSFER:
            self.finished = True
            self.problems = ["transferred to a human"]
            return "You transfer the customer to a human agent. (conversation ended)"
        return "Tool: " + self._agent_tool(action)

    def _agent_tool(self, action: str) -> str:
        account = self.world.account
        if action == "lookup_account":
            return account_record(self.world)
        if action.startswith("change_plan "):
            plan = action.split(" ", 1)[1]
            if plan == account.plan:
                return f"The account is already on the {plan} plan."
            account.plan, account.plan_changes = plan, account.plan_changes + 1
            return f"Plan changed to {plan} (a plan change fee is billed)."
        if action == "refuel_data":
            account.top_up_gb += TOP_UP_GB
            account.top_ups += 1
            return f"Added {TOP_UP_GB:.0f} GB of data (billed)."
        if action == "resume_line":
            if not account.line_suspended:
                return "The line is already active."
            if not account.bill_paid:
                return "Cannot resume the line: the bill is overdue."
            account.line_suspended = False
            return "The line is active again."
        if action == "enable_roaming":
            if account.roaming_enabled:
                return "Roaming is already enabled."
            account.roaming_enabled = True
            account.roaming_added_at_home += not account.abroad
            return "Roaming enabled on the account (billed)."
        if action == "push_apn_settings":
            self.world.phone.apn_ok, self.world.phone.restart_pending = True, True
            return "APN profile sent to the phone; it applies after a restart."
        raise ValueError(f"unknown action {action!r}")
