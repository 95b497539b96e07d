"""The agent's tools with typed arguments: the schema, the check of a call, the listed actions.

A call is the tool's name followed by its arguments, separated by spaces
(``identify_by_phone 555-0142``, ``refuel_data 2``, ``ask_user run speed test``). Each
argument has a type (``ARG_TYPES``); ``parse_call`` checks a call against ``TOOLS`` and
raises ``ToolCallError`` naming the tool, the argument and what it expects: the
environment turns that into an invalid action whose observation is the message.

``listed_actions`` is the finite valid-action list of a state: every call without an open
argument, the enumerable ones (plans, refuel amounts 1-3, the user instructions, the transfer
reasons), and the
identification calls with the arguments the agent has *seen* (a phone number, a name and
date of birth the user gave). A well-typed call off the list (a guessed number) is still
played; the tool answers it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from hindsight.envs.dual_control.domain import PLANS
from hindsight.envs.dual_control.policy import TRANSFER_REASONS
from hindsight.envs.dual_control.user import INSTRUCTIONS

REFUEL_CHOICES = (1, 2, 3)
"""Refuel amounts on the list (the schema accepts 1-5)."""


class ToolCallError(ValueError):
    """A call that does not fit the schema; the message names what is wrong."""


def _enum(values) -> tuple[str, Callable[[str], bool]]:
    values = tuple(values)
    return "one of " + ", ".join(values), lambda text: text in values


ARG_TYPES: dict[str, tuple[str, Callable[[str], bool]]] = {
    "phone": ("a phone number like 555-0142", lambda t: re.fullmatch(r"\d{3}-\d{4}", t) is not None),
    "name": ("a capitalised name", lambda t: re.fullmatch(r"[A-Z][a-z]+", t) is not None),
    "date": ("a date YYYY-MM-DD", lambda t: re.fullmatch(r"(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])", t) is not None),
    "plan": _enum(PLANS),
    "gb": ("a whole number of GB from 1 to 5", lambda t: t.isdigit() and 1 <= int(t) <= 5),
    "instruction": ("one of the user instructions (see the valid actions)", lambda t: t in INSTRUCTIONS),
    "message": _enum(("fixed",)),
    "reason": _enum(TRANSFER_REASONS),
}

TOOLS: dict[str, tuple[tuple[str, str], ...]] = {
    "identify_by_phone": (("phone_number", "phone"),),
    "identify_by_name": (("first_name", "name"), ("last_name", "name"), ("birth_date", "date")),
    "get_details": (),
    "change_plan": (("plan", "plan"),),
    "refuel_data": (("gb", "gb"),),
    "resume_line": (),
    "enable_roaming": (),
    "push_apn_settings": (),
    "ask_user": (("instruction", "instruction"),),
    "tell_user": (("message", "message"),),
    "transfer_to_human": (("reason", "reason"),),
}
"""Tool -> its arguments (name, type); the last argument of ``ask_user`` takes the rest of the line."""
ACCOUNT_TOOLS = ("get_details", "change_plan", "refuel_data", "resume_line", "enable_roaming", "push_apn_settings")
"""Tools that read or change the account: they need an identified customer."""


@dataclass(frozen=True)
class ToolCall:
    """A checked call."""

    tool: str
    args: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return " ".join((self.tool, *self.args))


def parse_call(text: str) -> ToolCall:
    """Check ``text`` against the schema.

    Raises:
        ToolCallError: Unknown tool, wrong number of arguments or an argument of the wrong type.
    """
    words = " ".join(str(text).split()).split(" ")
    tool = words[0] if words else ""
    if tool not in TOOLS:
        raise ToolCallError(f"Invalid tool call: no tool named {tool!r}; the tools are {', '.join(TOOLS)}.")
    schema = TOOLS[tool]
    args = words[1:]
    if tool == "ask_user" and args:
        args = [" ".join(args)]
    if len(args) != len(schema):
        wanted = " ".join(f"<{name}>" for name, _ in schema) or "no arguments"
        raise ToolCallError(f"Invalid tool call: {tool} takes {wanted}, got {len(args)} argument(s).")
    for value, (name, kind) in zip(args, schema):
        description, check = ARG_TYPES[kind]
        if not check(value):
            raise ToolCallError(f"Invalid tool call: {tool} argument {name} must be {description}, got {value!r}.")
    return ToolCall(tool, tuple(args))


@dataclass
class Seen:
    """Identification arguments the agent has read in the conversation (in order)."""

    phone_numbers: list[str] = field(default_factory=list)
    names: list[tuple[str, str, str]] = field(default_factory=list)

    def take_in(self, observation: str) -> None:
        """Collect a number / a name with date of birth the user gave."""
        for number in re.findall(r"[Mm]y (?:phone )?number is (\d{3}-\d{4})", observation):
            if number not in self.phone_numbers:
                self.phone_numbers.append(number)
        for first, last, date in re.findall(r"I am ([A-Z][a-z]+) ([A-Z][a-z]+), born (\d{4}-\d\d-\d\d)", observation):
            if (first, last, date) not in self.names:
                self.names.append((first, last, date))


def listed_actions(seen: Seen) -> list[str]:
    """The valid-action list (see the module docstring)."""
    return [
        *(f"identify_by_phone {number}" for number in seen.phone_numbers),
        *(f"identify_by_name {first} {last} {date}" for first, last, date in seen.names),
        "get_details",
        *(f"change_plan {plan}" for plan in PLANS),
        *(f"refuel_data {gb}" for gb in REFUEL_CHOICES),
        "resume_line",
        "enable_roaming",
        "push_apn_settings",
        *(f"ask_user {instruction}" for instruction in INSTRUCTIONS),
        "tell_user fixed",
        *(f"transfer_to_human {reason}" for reason in TRANSFER_REASONS),
    ]
