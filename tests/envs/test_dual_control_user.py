"""The dual-control user (``hindsight.envs.dual_control.user``): every rule of the
rule-based user (toggles that always flip, settings set to a value, pointless requests that
try the customer's patience), the two personas, the phone tools as the only way the phone
changes, the intents beyond mobile data (slow data, MMS), and the ``UserModel`` seam
another user plugs into."""

from __future__ import annotations

import copy

import pytest

from hindsight.envs.dual_control import TelecomSession, make_task, parse_call, play
from hindsight.envs.dual_control import user as rules
from hindsight.envs.dual_control.domain import blockers, download_mbps, mms_blockers
from hindsight.envs.dual_control.folds import split_seeds
from hindsight.envs.dual_control.user import RuleUser, UserTurn


def task_where(wanted, split="train"):
    for seed in split_seeds(split)[:1000]:
        task = make_task(split, seed)
        if wanted(task):
            return task
    raise AssertionError("no such task")


def user_of(task):
    world = copy.deepcopy(task.world)
    return RuleUser(task, world), world


def test_facts_are_said_only_when_asked_and_the_persona_shapes_them():
    easy = task_where(lambda t: t.persona == "easy" and t.intent == "mms" and t.framing is None)
    hard = task_where(lambda t: t.persona == "hard" and t.intent == "mms")
    (easy_user, _), (hard_user, _) = user_of(easy), user_of(hard)
    assert easy_user.opening() == "Customer: Hi. My problem is that I cannot send picture messages (MMS)."
    assert hard_user.opening() == "Customer: Hi, something is wrong with my phone."
    assert hard_user.respond("what is the problem").text == rules.PROBLEMS["mms"]
    assert easy_user.respond("what is your phone number").text == f"My number is {easy.world.customer.phone_number}."
    assert hard_user.respond("what is your phone number").text == "I don't know my number by heart."
    c = hard.world.customer
    assert hard_user.respond("what is your name and date of birth").text == f"I am {c.first_name} {c.last_name}, born {c.birth_date}."


def test_the_preference_is_said_when_asked():
    task = task_where(lambda t: "quota" in t.faults and t.preference == "refuel")
    assert user_of(task)[0].respond("refuel or plan upgrade").text == f"I prefer a refuel of {task.refuel_wanted_gb} GB."
    task = task_where(lambda t: "quota" in t.faults and t.preference != "refuel")
    assert user_of(task)[0].respond("refuel or plan upgrade").text == f"I prefer an upgrade to the {task.preference} plan."


def test_the_user_reads_the_screens_out():
    shown = {"data_roaming", "data_saver", "battery_saver", "vpn", "network_mode", "apn"}  # decoys on the settings screen
    user, _ = user_of(task_where(lambda t: t.faults == ("airplane",) and not t.slips and not shown & set(t.decoys)))
    assert user.respond("check network settings").text == "The settings show: no signal; airplane mode on."
    user.respond("toggle airplane mode")
    assert user.respond("check network settings").text == "The settings show: signal 4 bars; all settings at default."
    user, _ = user_of(task_where(lambda t: t.faults == ("airplane",) and "vpn" in t.decoys and "data_saver" in t.decoys))
    assert "data saver on" in user.respond("check network settings").text and "VPN on" in user.respond("check network settings").text
    user, _ = user_of(task_where(lambda t: set(t.faults) == {"sim", "roaming"} and not shown & set(t.decoys)))
    assert user.respond("check network settings").text == "The settings show: No SIM; SIM not detected."
    task = task_where(lambda t: t.faults == ("permissions",))
    user, world = user_of(task)
    states = ["allowed" if world.phone.sms_permission else "denied", "allowed" if world.phone.storage_permission else "denied"]
    assert "denied" in states
    assert user.respond("check messages app permissions").text == (
        f"The messages app permissions show: SMS {states[0]}, storage {states[1]}.")


def test_a_toggle_always_flips_and_a_set_says_when_nothing_changed():
    user, world = user_of(task_where(lambda t: t.faults == ("airplane",) and not t.slips and t.persona == "easy"
                                     and t.world.phone.network_mode == "auto"))
    assert user.respond("toggle airplane mode").text == "Okay. Airplane mode is now off."
    assert not blockers(world)
    assert user.respond("toggle airplane mode").text == "Okay. Airplane mode is now on."  # a toggle undoes as well as fixes
    assert user.respond("set network mode to 3g only").text == "Okay. Network mode is now 3g only." and download_mbps(world) == 0.0
    user.respond("toggle airplane mode")
    assert 0.0 < download_mbps(world) < 10
    turn = user.respond("set network mode to 3g only")
    assert turn.text == "Network mode is already 3g only." + rules.POINTLESS_REPLY and not turn.ended
    assert user.respond("deny messages sms").text == "Okay, SMS is now denied for the messages app." and not world.phone.sms_permission


def test_the_user_performs_what_it_can_and_says_the_result():
    user, world = user_of(task_where(lambda t: t.faults == ("sim",) and t.persona == "easy"))
    assert "put it back. The phone asks for a restart" in user.respond("reseat sim card").text and world.phone.restart_pending
    assert user.respond("restart phone").text == "Okay, the phone restarted." and not world.phone.restart_pending
    assert world.phone.sim == "ready" and "sim" not in " ".join(blockers(world))
    turn = user.respond("reseat sim card")  # the SIM was fine now: nothing changes
    assert turn.text.startswith("Okay, I took the SIM card out and put it back. Nothing changed.") and not world.phone.restart_pending
    turn = user.respond("restart phone")
    assert turn.ended and turn.gave_up and turn.text.endswith(rules.GIVE_UP_POINTLESS + rules.ENDED)  # the second pointless one


def test_a_slipping_hard_user_flips_the_wrong_switch_once():
    task = task_where(lambda t: t.faults == ("airplane",) and t.slips)
    assert task.persona == "hard"
    user, world = user_of(task)
    assert user.respond("toggle airplane mode").text == "Oops, I tapped mobile data instead. Mobile data is now off."
    assert world.phone.airplane_mode and not world.phone.mobile_data
    assert user.respond("toggle airplane mode").text == "Okay. Airplane mode is now off."
    actions = play(task).actions
    assert actions.count("ask_user toggle airplane mode") == 2 and actions.count("ask_user toggle mobile data") == 1
    assert play(task).won
    assert not any(t.slips for t in (make_task("train", s) for s in range(400)) if t.persona == "easy")


@pytest.mark.parametrize("instruction", ["reseat sim card and restart phone", "reset apn and restart phone",
                                         "toggle data saver and toggle vpn"])
def test_two_instructions_at_once_are_refused(instruction):
    user, world = user_of(task_where(lambda t: {"data_saver", "vpn"} <= set(t.faults), split="test"))
    before = copy.deepcopy(world)
    assert user.respond(instruction).text == rules.ONE_AT_A_TIME_REPLY and world == before


def test_refused_instructions_change_nothing_and_cost_no_patience():
    user, world = user_of(task_where(lambda t: t.faults == ("apn",) and t.world.phone.model.name == "Orbit X" and t.persona == "hard"))
    before = copy.deepcopy(world)
    for instruction, reply in [("factory reset phone", rules.FACTORY_RESET_REPLY), ("reset apn", rules.NO_APN_MENU_REPLY),
                               ("factory reset phone", rules.FACTORY_RESET_REPLY)]:
        assert user.respond(instruction) == UserTurn(reply)
    assert world == before and world.phone.apn == "edited"
    turn = user.respond("pay the bill")  # a paid bill: pointless, and the hard customer's first is the last
    assert turn.ended and turn.gave_up and turn.text.startswith("My bill is already paid.")


def test_slow_data_is_a_speed_problem_the_user_measures():
    task = task_where(lambda t: t.intent == "slow_data" and t.faults == ("vpn", "network_mode") and not t.slips)
    user, world = user_of(task)
    assert not blockers(world) and 0 < download_mbps(world) < 10
    assert "(slow)" in user.respond("run speed test").text and not user.respond("run speed test").ended
    user.respond("toggle vpn")
    assert user.respond("set network mode to auto").text == "Okay. Network mode is now auto."
    turn = user.respond("run speed test")
    assert turn.ended and turn.text.startswith("The speed test says: 48.0 Mbps download (fast).")


def test_mms_needs_data_the_mms_apn_and_the_app_permissions():
    task = task_where(lambda t: t.intent == "mms" and set(t.faults) == {"mms_apn", "permissions"}, split="test")
    user, world = user_of(task)
    denied = [name for name in ("sms", "storage") if not getattr(world.phone, f"{name}_permission")]
    assert mms_blockers(world) == ["mms apn"] + [f"{name} permission" for name in denied] and not blockers(world)
    assert user.respond("send test mms").text == "The MMS failed to send."
    assert not user.respond("run speed test").ended  # data works, but that is not the customer's check
    for name in denied:
        user.respond(f"allow messages {name}")
    if world.phone.model.apn_menu:
        user.respond("reset apn")
        user.respond("restart phone")
    else:
        assert user.respond("reset apn").text == rules.NO_APN_MENU_REPLY
        world.phone.apn = "carrier"  # what push_apn_settings does from the agent's side
    assert user.respond("send test mms") == UserTurn("The MMS was sent. It works now, thank you!" + rules.ENDED, True)


def test_another_user_model_plugs_into_the_session():
    class PoliteLogger:
        """A stand-in for an LLM user: delegates to the rules, records every instruction."""

        def __init__(self, task, world):
            self.inner, self.heard = RuleUser(task, world), []

        def opening(self):
            return self.inner.opening()

        def respond(self, instruction):
            self.heard.append(instruction)
            turn = self.inner.respond(instruction)
            return UserTurn("Certainly. " + turn.text, turn.ended)

        def told_fixed(self):
            return self.inner.told_fixed()

    task = task_where(lambda t: t.intent == "mobile_data" and t.outcome == "fix" and t.persona == "easy")
    session = TelecomSession(task, user_factory=PoliteLogger)
    session.opening()
    for action in play(task).actions:
        observation = session.act(parse_call(action))
    assert session.won and session.user.heard and observation.startswith("User: I checked")
    assert any(reply for reply in session.user.heard if reply == "what is your phone number")
