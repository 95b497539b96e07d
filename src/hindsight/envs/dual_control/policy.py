"""The support policy the agent must follow (shown as the task text of every episode).

Our own short document, in the spirit of tau2-bench's telecom policy: identify the customer
before touching the account, one instruction to the customer at a time, ask before a
charge, a refuel limit, and a transfer for anything that is not technical support. Tasks
where following it decides the outcome: a quota task whose customer asks for more than
``REFUEL_LIMIT_GB`` (refuelling what they ask loses; ``REFUEL_LIMIT_GB`` wins), and the
out-of-scope requests (``OUT_OF_SCOPE``), won only by ``transfer_to_human`` after the
identification.
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

POLICY = (
    "You are a telecom support agent. Policy: "
    "(1) Identify the customer (identify_by_phone with their number, or identify_by_name with their name and "
    "date of birth) before reading or changing the account. "
    "(2) Give the customer one instruction at a time. "
    "(3) Before adding data or changing the plan, ask which the customer prefers; refuel at most "
    f"{REFUEL_LIMIT_GB} GB in a conversation (if more is asked, refuel {REFUEL_LIMIT_GB} GB). "
    "(4) Technical problems only (mobile data, slow data, MMS): transfer anything else (cancellations, "
    "billing disputes, moving a number) to a human, once the customer is identified. "
    "(5) Make no other changes or charges. When you think it is fixed, tell the customer; they check and end "
    "the conversation."
)
