"""The support policy the agent must follow (shown as the task text of every episode).

Our own short document, in the spirit of tau2-bench's telecom policy: identify the customer
before touching the account, one instruction at a time, ask before a charge, a refuel limit,
transfers, and no change the problem does not need. Tasks where following it decides the
outcome: a quota task whose customer asks for more than ``REFUEL_LIMIT_GB`` (refuelling
what they ask loses); the requests that are not technical (``OUT_OF_SCOPE``), won only by
``transfer_to_human request`` after the identification; technical problems only a human may solve
(``HUMAN_ONLY``: a line suspended because the contract ended, found in the account record; a
SIM locked with a PUK, found on the settings screen), won only by a transfer naming that
cause (``TRANSFER_REASONS``) after the look-up that shows it; a technical problem the customer wraps in a threat to cancel,
dispute or leave (``FRAMINGS``), won only by fixing it; and every setting the customer chose
that the problem does not need, which must stay as it was.
"""

from __future__ import annotations

REFUEL_LIMIT_GB = 2
"""Most data the agent may add by refuels in one conversation."""

OUT_OF_SCOPE: dict[str, str] = {
    "cancel_contract": "I want to cancel my contract.",
    "dispute_charge": "I want to dispute a charge on my last bill.",
    "port_number": "I want to move my number to another carrier.",
}
"""Requests support does not handle (fault family -> what the customer says): transfer."""

TRANSFER_REASONS: tuple[str, ...] = ("request", "contract_ended", "sim_puk")
"""What ``transfer_to_human <reason>`` tells the human agent: a request that is not
technical, or the cause only a human may resolve."""

HUMAN_ONLY: dict[str, str] = {
    "contract_ended": "get_details",
    "sim_puk": "ask_user check network settings",
}
"""Technical causes only a human agent may resolve (fault family -> the look-up that shows
it, which must come before the transfer)."""

FRAMINGS: dict[str, str] = {
    "cancel": "I will cancel my contract if this is not fixed. ",
    "dispute": "I want to dispute my bill: I pay for a service that does not work. ",
    "port": "I am ready to move my number to another carrier. ",
}
"""How a customer may wrap a technical problem in words that sound like a request to
transfer (framing -> the sentence before the problem)."""

POLICY = (
    "You are a telecom support agent. Policy: "
    "(1) Identify the customer (identify_by_phone with their number, or identify_by_name with their name and "
    "date of birth) before reading or changing the account. "
    "(2) Give the customer one instruction at a time. "
    "(3) Before adding data or changing the plan, ask which the customer prefers; refuel at most "
    f"{REFUEL_LIMIT_GB} GB in a conversation (if more is asked, refuel {REFUEL_LIMIT_GB} GB). "
    "(4) Fix technical problems (mobile data, slow data, MMS), even when the customer threatens to cancel, "
    "dispute the bill or leave; transfer a request that is not technical (a cancellation, a billing dispute, "
    "moving a number) to a human once the customer is identified (transfer_to_human request). "
    "(5) Only a human may lift a suspension for anything but an overdue bill (see the account record) or "
    "unlock a SIM that asks for a PUK (see the settings screen): find the cause, then transfer naming it "
    "(transfer_to_human contract_ended, transfer_to_human sim_puk). "
    "(6) Change nothing the problem does not need: settings the customer chose stay as they are; no other "
    "changes or charges. When you think it is fixed, tell the customer; they check and end the conversation."
)
