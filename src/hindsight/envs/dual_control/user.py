"""The simulated user: a persona acting on their own phone through their own tools.

Two layers, so that another user can plug in (``UserModel``):

- ``PhoneTools``: what the user can do to the phone and see on it (switches, restart, SIM
  reseat, APN reset, app permissions, paying the bill in the app, the settings screen,
  a speed test, a test MMS). Only these change the phone.
- ``RuleUser``: the rule-based user (the default). It reads the agent's instruction (one of
  ``INSTRUCTIONS``), and answers by the rules below, shaped by the task's persona.

Rules (tests hit every one):

    facts        the problem, the phone number, the name with date of birth, the preference
                 for more data: said only when asked (``what is ...``), never volunteered.
    reads        settings, messages app permissions: read out exactly (``domain``).
    performs     a phone action is done and the reply says the result ("Airplane mode is
                 now off."); a switch already where asked: "... is already off.".
    checks       "run speed test" / "send test mms" read the result; when it shows the
                 customer's problem solved (a connection for mobile data, a fast speed for
                 slow data, a sent MMS), the user ends the conversation themselves.
    told fixed   ``tell_user fixed``: the user checks the same way; solved -> ends; not
                 solved -> says so and goes on, until their patience runs out (then ends,
                 lost). A premature "fixed" never wins.
    one at once  two instructions joined by "and" are refused, nothing done.
    ambiguous    "toggle ...": asks whether on or off is meant; nothing done.
    refuses      "factory reset phone"; "reset apn" on a phone without an APN menu.

Personas: ``easy`` opens with the problem, knows their number, tolerates two premature
"fixed" (ends on the third) and never slips; ``hard`` opens vaguely ("something is wrong"),
does not know their number (identify by name and date of birth), ends on the second
premature "fixed", and in a task with ``slips`` flips the wrong switch once on the first
switch instruction it carries out (and says so).

The LLM seam: a ``UserModel`` built around one of the project's inference backends
(``hindsight.policy.backends``) would prompt a model with the persona, the task's hidden
facts (``TelecomTask``) and the conversation, and map its answer onto ``PhoneTools`` calls;
``TelecomSession(task, user_factory=...)`` takes it. None ships: the rules keep every
episode reproducible and the gold solver always winning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from hindsight.envs.dual_control.domain import (
    GOOD_SPEED_MBPS, World, download_mbps, mms_blockers, permissions_screen, settings_screen, speed_test,
)
from hindsight.envs.dual_control.policy import OUT_OF_SCOPE

if TYPE_CHECKING:
    from hindsight.envs.dual_control.tasks import TelecomTask

INSTRUCTIONS: tuple[str, ...] = (
    "what is the problem",
    "what is your phone number",
    "what is your name and date of birth",
    "refuel or plan upgrade",
    "check network settings",
    "check messages app permissions",
    "run speed test",
    "send test mms",
    "turn off airplane mode",
    "turn on mobile data",
    "turn on data roaming",
    "turn off data saver",
    "turn off vpn",
    "set network mode to auto",
    "grant messages permissions",
    "restart phone",
    "reseat sim card",
    "reset apn",
    "pay the bill",
    "toggle airplane mode",
    "toggle mobile data",
    "factory reset phone",
    "reseat sim card and restart phone",
    "reset apn and restart phone",
    "turn off data saver and turn off vpn",
)
"""What the agent may ask the user (``ask_user <instruction>``)."""

PROBLEMS: dict[str, str] = {
    "mobile_data": "My problem is that mobile data does not work at all.",
    "slow_data": "My problem is that mobile data is very slow.",
    "mms": "My problem is that I cannot send picture messages (MMS).",
}
SWITCH_ACTIONS: dict[str, tuple[str, str, bool]] = {
    "turn off airplane mode": ("airplane mode", "airplane_mode", False),
    "turn on mobile data": ("mobile data", "mobile_data", True),
    "turn on data roaming": ("data roaming", "data_roaming", True),
    "turn off data saver": ("data saver", "data_saver", False),
    "turn off vpn": ("VPN", "vpn", False),
}
CONFUSED_WITH: dict[str, tuple[str, str]] = {
    "airplane_mode": ("mobile data", "mobile_data"), "mobile_data": ("airplane mode", "airplane_mode"),
    "data_roaming": ("mobile data", "mobile_data"), "data_saver": ("VPN", "vpn"), "vpn": ("data saver", "data_saver"),
}
"""The switch a slipping user flips instead of the one asked for."""
PATIENCE = {"easy": 3, "hard": 2}
"""Premature "fixed" claims after which the user ends the conversation."""
ONE_AT_A_TIME_REPLY = "One thing at a time, please. What should I do first?"
AMBIGUOUS_REPLY = "Sorry, do you want it on or off? Please tell me exactly what to do."
FACTORY_RESET_REPLY = "No, I won't factory reset my phone: I would lose everything on it."
NO_APN_MENU_REPLY = "I can't find any APN setting on this phone."
ENDED = " (conversation ended)"


@dataclass(frozen=True)
class UserTurn:
    """A user message; ``ended``: the user ended the conversation with it."""

    text: str
    ended: bool = False


class UserModel(Protocol):
    """What a simulated user answers (the seam for another user, e.g. a language model)."""

    def opening(self) -> str: ...

    def respond(self, instruction: str) -> UserTurn: ...

    def told_fixed(self) -> UserTurn: ...


class PhoneTools:
    """The user's own tools on their phone (the only code that changes the phone)."""

    def __init__(self, world: World) -> None:
        self.world = world

    def set_switch(self, attribute: str, value: bool) -> None:
        setattr(self.world.phone, attribute, value)

    def restart(self) -> None:
        self.world.phone.restart_pending = False

    def reseat_sim(self) -> None:
        self.world.phone.sim_seated, self.world.phone.restart_pending = True, True

    def reset_apn(self) -> bool:
        if not self.world.phone.model.apn_menu:
            return False
        self.world.phone.apn_ok = self.world.phone.mms_apn_ok = True
        self.world.phone.restart_pending = True
        return True

    def set_network_mode_auto(self) -> None:
        self.world.phone.network_mode = "auto"

    def grant_messages_permissions(self) -> None:
        self.world.phone.messages_permissions = True

    def pay_bill(self) -> bool:
        paid_before = self.world.account.bill_paid
        self.world.account.bill_paid = True
        return not paid_before


class RuleUser:
    """The rule-based user of one task (see the module docstring)."""

    def __init__(self, task: "TelecomTask", world: World) -> None:
        self.task, self.world, self.phone = task, world, PhoneTools(world)
        self.slip_pending = bool(task.slips)
        self.premature = 0

    def opening(self) -> str:
        if self.task.persona == "hard":
            return "Customer: Hi, something is wrong with my phone."
        problem = OUT_OF_SCOPE.get(self.task.faults[0]) if self.task.intent == "out_of_scope" else PROBLEMS[self.task.intent]
        return "Customer: Hi. " + problem

    def solved(self) -> bool:
        """The customer's own check passes."""
        intent = self.task.intent
        if intent == "mms":
            return not mms_blockers(self.world)
        if intent == "slow_data":
            return download_mbps(self.world) >= GOOD_SPEED_MBPS
        return intent == "mobile_data" and download_mbps(self.world) > 0

    def _check_text(self) -> str:
        if self.task.intent == "mms":
            return "The MMS was sent." if self.solved() else "The MMS failed to send."
        return speed_test(self.world)

    def told_fixed(self) -> UserTurn:
        if self.task.intent == "out_of_scope":
            text = "That is not what I asked for."
        elif self.solved():
            return UserTurn(f"I checked: {self._check_text()} It works now, thank you!" + ENDED, True)
        else:
            text = f"I checked: {self._check_text()} It still doesn't work."
        self.premature += 1
        if self.premature >= PATIENCE[self.task.persona]:
            return UserTurn(text + " I give up." + ENDED, True)
        return UserTurn(text)

    def respond(self, instruction: str) -> UserTurn:
        if " and " in instruction and instruction.split(" and ")[0] in INSTRUCTIONS:
            return UserTurn(ONE_AT_A_TIME_REPLY)
        if instruction in ("run speed test", "send test mms"):
            reading = speed_test(self.world) if instruction == "run speed test" else (
                "The MMS was sent." if not mms_blockers(self.world) else "The MMS failed to send.")
            if self.solved() and (instruction == "send test mms") == (self.task.intent == "mms"):
                return UserTurn(reading + " It works now, thank you!" + ENDED, True)
            return UserTurn(reading)
        return UserTurn(self._answer(instruction))

    def _answer(self, instruction: str) -> str:
        task, customer = self.task, self.world.customer
        if instruction == "what is the problem":
            return OUT_OF_SCOPE[task.faults[0]] if task.intent == "out_of_scope" else PROBLEMS[task.intent]
        if instruction == "what is your phone number":
            return "I don't know my number by heart." if task.persona == "hard" else f"My number is {customer.phone_number}."
        if instruction == "what is your name and date of birth":
            return f"I am {customer.first_name} {customer.last_name}, born {customer.birth_date}."
        if instruction == "refuel or plan upgrade":
            if task.preference == "refuel":
                return f"I prefer a refuel of {task.refuel_wanted_gb} GB."
            return f"I prefer an upgrade to the {task.preference} plan."
        if instruction == "check network settings":
            return settings_screen(self.world)
        if instruction == "check messages app permissions":
            return permissions_screen(self.world)
        if instruction in SWITCH_ACTIONS:
            return self._switch(*SWITCH_ACTIONS[instruction])
        if instruction.startswith("toggle "):
            return AMBIGUOUS_REPLY
        if instruction == "factory reset phone":
            return FACTORY_RESET_REPLY
        if instruction == "restart phone":
            self.phone.restart()
            return "Okay, the phone restarted."
        if instruction == "reseat sim card":
            self.phone.reseat_sim()
            return "Okay, I took the SIM card out and put it back. The phone asks for a restart."
        if instruction == "reset apn":
            if not self.phone.reset_apn():
                return NO_APN_MENU_REPLY
            return "Okay, I reset the APN to default. The phone asks for a restart."
        if instruction == "set network mode to auto":
            self.phone.set_network_mode_auto()
            return "Okay. Network mode is now auto."
        if instruction == "grant messages permissions":
            self.phone.grant_messages_permissions()
            return "Okay, the messages app may now use SMS and storage."
        if instruction == "pay the bill":
            return "Okay, I paid the bill in the app." if self.phone.pay_bill() else "My bill is already paid."
        raise ValueError(f"unknown instruction {instruction!r}")

    def _switch(self, label: str, attribute: str, value: bool) -> str:
        phone = self.world.phone
        if getattr(phone, attribute) == value:
            return f"{label[0].upper() + label[1:]} is already {'on' if value else 'off'}."
        if self.slip_pending:
            self.slip_pending = False
            wrong_label, wrong = CONFUSED_WITH[attribute]
            flipped = not getattr(phone, wrong)
            self.phone.set_switch(wrong, flipped)
            return f"Oops, I tapped {wrong_label} instead. {wrong_label[0].upper() + wrong_label[1:]} is now {'on' if flipped else 'off'}."
        self.phone.set_switch(attribute, value)
        return f"Okay. {label[0].upper() + label[1:]} is now {'on' if value else 'off'}."
