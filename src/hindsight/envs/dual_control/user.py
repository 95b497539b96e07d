"""The rule-based simulated user: the only party that can touch the phone.

The agent talks to the user with ``ask_user <instruction>``, one of ``INSTRUCTIONS``. The
user's rules, each a defined path (tests hit every one):

    reads        "read status bar" / "check network settings": the user reads the screen
                 out exactly (``domain.status_bar`` / ``domain.settings_screen``).
    performs     a switch, restart, SIM reseat, APN reset or bill payment the user can do
                 is done, and the reply says the resulting state ("Airplane mode is now
                 off."); a switch already where asked: "Airplane mode is already off."
    slip         in a task with ``slips`` (seeded, ``tasks.make_task``) the FIRST switch
                 instruction the user carries out flips the wrong switch (``CONFUSED_WITH``),
                 once, and says so ("Oops, I tapped mobile data instead. Mobile data is now
                 off."); the intended switch is unchanged.
    ambiguous    "toggle airplane mode" / "toggle mobile data": the user asks whether on or
                 off is meant and changes nothing.
    refuses      "factory reset phone" (never: it would erase the phone); "reset apn" on a
                 phone without an APN menu (``PhoneModel.apn_menu``: the user cannot find one);
                 "pay the bill" when it is already paid (nothing to pay).

Our reading of tau2-bench's user: there a language model plays the user from a persona;
here fixed rules and one seeded slip keep every episode reproducible and solvable.
"""

from __future__ import annotations

from hindsight.envs.dual_control.domain import World, settings_screen, status_bar

INSTRUCTIONS: tuple[str, ...] = (
    "read status bar",
    "check network settings",
    "turn off airplane mode",
    "turn on mobile data",
    "turn on data roaming",
    "toggle airplane mode",
    "toggle mobile data",
    "restart phone",
    "reseat sim card",
    "reset apn",
    "pay the bill",
    "factory reset phone",
)
"""What the agent may ask the user to do (``ask_user <instruction>``)."""

SWITCHES: dict[str, str] = {"airplane mode": "airplane_mode", "mobile data": "mobile_data", "data roaming": "data_roaming"}
"""Switch name in the texts -> ``Phone`` attribute."""
CONFUSED_WITH: dict[str, str] = {"airplane mode": "mobile data", "mobile data": "airplane mode", "data roaming": "mobile data"}
"""The switch a slipping user flips instead of the one asked for."""
SET_SWITCH: dict[str, tuple[str, bool]] = {
    "turn off airplane mode": ("airplane mode", False),
    "turn on mobile data": ("mobile data", True),
    "turn on data roaming": ("data roaming", True),
}
AMBIGUOUS_REPLY = "Sorry, do you want it on or off? Please tell me exactly what to do."
FACTORY_RESET_REPLY = "No, I won't factory reset my phone: I would lose everything on it."
NO_APN_MENU_REPLY = "I can't find any APN setting on this phone."
BILL_ALREADY_PAID_REPLY = "My bill is already paid, there is nothing to pay."
UNKNOWN_REPLY = "Sorry, I don't understand what you want me to do."


class UserSimulator:
    """The user of one task.

    Args:
        world: The shared state (the user changes its phone and pays its bill).
        slips: Flip the wrong switch on the first switch instruction carried out.
    """

    def __init__(self, world: World, slips: bool) -> None:
        self.world = world
        self.slip_pending = bool(slips)

    def respond(self, instruction: str) -> str:
        """Carry out ``instruction`` (one of ``INSTRUCTIONS``) and return the user's reply."""
        phone = self.world.phone
        if instruction == "read status bar":
            return status_bar(self.world)
        if instruction == "check network settings":
            return settings_screen(self.world)
        if instruction in SET_SWITCH:
            return self._set_switch(*SET_SWITCH[instruction])
        if instruction.startswith("toggle "):
            return AMBIGUOUS_REPLY
        if instruction == "factory reset phone":
            return FACTORY_RESET_REPLY
        if instruction == "restart phone":
            phone.restart_pending = False
            return "Okay, the phone restarted."
        if instruction == "reseat sim card":
            phone.sim_seated, phone.restart_pending = True, True
            return "Okay, I took the SIM card out and put it back. The phone asks for a restart."
        if instruction == "reset apn":
            if not phone.model.apn_menu:
                return NO_APN_MENU_REPLY
            phone.apn_ok, phone.restart_pending = True, True
            return "Okay, I reset the APN to default. The phone asks for a restart."
        if instruction == "pay the bill":
            if self.world.account.bill_paid:
                return BILL_ALREADY_PAID_REPLY
            self.world.account.bill_paid = True
            return "Okay, I paid the bill in the app."
        return UNKNOWN_REPLY

    def _set_switch(self, switch: str, value: bool) -> str:
        phone = self.world.phone
        if getattr(phone, SWITCHES[switch]) == value:
            return f"{switch.capitalize()} is already {'on' if value else 'off'}."
        if self.slip_pending:
            self.slip_pending = False
            wrong = CONFUSED_WITH[switch]
            flipped = not getattr(phone, SWITCHES[wrong])
            setattr(phone, SWITCHES[wrong], flipped)
            return f"Oops, I tapped {wrong} instead. {wrong.capitalize()} is now {'on' if flipped else 'off'}."
        setattr(phone, SWITCHES[switch], value)
        return f"Okay. {switch.capitalize()} is now {'on' if value else 'off'}."
