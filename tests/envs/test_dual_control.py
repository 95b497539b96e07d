"""The dual-control telecom domain (``hindsight.envs.dual_control``): the gold solver wins
every task of each fold, a random valid-action agent rarely does, every rule of the user
simulator is hit, the final check fails on a wrong state, an unwanted charge and a missing
final message, folds hold out fault pairs and a phone model, and a seed is one episode."""

from __future__ import annotations

import copy
import random

import pytest

from hindsight.data.expert import play_gold_episode
from hindsight.envs import EnvironmentConfigError, EnvironmentSpec, make_env
from hindsight.envs.dual_control import ACTIONS, DualControlEnvironment, make_task, final_check
from hindsight.envs.dual_control import user as user_rules
from hindsight.envs.dual_control.domain import PHONE_MODELS, World, blockers
from hindsight.envs.dual_control.session import FINAL_MESSAGE, TelecomSession
from hindsight.envs.dual_control.tasks import HELD_OUT_PAIRS, TOP_UP, UNSEEN_MODELS, fault_combinations
from hindsight.envs.dual_control.user import UserSimulator

SPEC = EnvironmentSpec("dual_control", "telecom", max_steps=20)
SEEDS_PER_SPLIT = 300


@pytest.fixture()
def env():
    environment = make_env(SPEC)
    yield environment
    environment.close()


def play(env, actions):
    results = [env.step(action) for action in actions]
    return results[-1]


def find_task(split, wanted, count=3000):
    """The first seed of ``split`` whose task satisfies ``wanted(task)``."""
    for seed in make_env(SPEC).seeds(split, count):
        if wanted(make_task(split, seed)):
            return seed
    raise AssertionError("no such task in the window")


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_the_gold_solver_wins_every_task_within_the_step_limit(env, split):
    lengths = []
    for seed in env.seeds(split, SEEDS_PER_SPLIT):
        env.reset(seed, split)
        gold = env.gold_actions()
        _, reward, terminated, truncated, info = play(env, gold)
        assert info["won"] and terminated and not truncated and reward == 10.0, (split, seed, gold)
        assert info["score"] == 1.0
        lengths.append(len(gold))
    assert max(lengths) < SPEC.max_steps


def test_a_random_valid_action_agent_is_a_low_floor(env):
    rng, wins, episodes = random.Random(0), 0, 0
    for split in ("train", "test"):
        for seed in env.seeds(split, 300):
            _, info = env.reset(seed, split)
            done = False
            while not done:
                _, _, terminated, truncated, info = env.step(rng.choice(info["valid_actions"]))
                done = terminated or truncated
            wins += info["won"]
            episodes += 1
    rate = wins / episodes
    print(f"random valid-action win rate: {rate:.4f} over {episodes} episodes")
    assert rate < 0.05


def test_the_action_list_is_fixed_and_an_unknown_action_is_a_penalised_no_op(env):
    observation, info = env.reset(0, "train")
    assert info["valid_actions"] == list(ACTIONS) and len(ACTIONS) == 22
    assert observation.startswith("Customer: My mobile data has stopped working")
    before = copy.deepcopy(env.session.world)
    _, reward, terminated, _, info = env.step("fix everything")
    assert reward == pytest.approx(-0.1) and not info["action_valid"] and not terminated
    assert env.session.world == before


def test_every_seed_is_one_episode(env):
    other = DualControlEnvironment(SPEC)
    for seed in env.seeds("test", 20):
        first, second = env.reset(seed, "test"), other.reset(seed, "test")
        assert first == second and env.gold_actions() == other.gold_actions()
        rng = random.Random(seed)
        for _ in range(8):
            action = rng.choice(ACTIONS[:-2])
            assert env.step(action) == other.step(action)
    worlds = {repr(make_task("train", seed).world) for seed in range(30)}
    assert len(worlds) > 20


def test_folds_hold_out_fault_pairs_and_a_phone_model(env):
    train, test = set(fault_combinations("train")), set(fault_combinations("test"))
    assert set(fault_combinations("dev")) == train and not train & test
    assert {frozenset(pair) for pair in test if len(pair) == 2} == HELD_OUT_PAIRS
    train_models = {make_task("train", seed).world.phone.model.name for seed in env.seeds("train", 300)}
    test_models = {make_task("test", seed).world.phone.model.name for seed in env.seeds("test", 300)}
    assert not train_models & set(UNSEEN_MODELS) and set(UNSEEN_MODELS) <= test_models
    assert not set(env.seeds("train", 100)) & set(env.seeds("test", 100))
    with pytest.raises(EnvironmentConfigError, match="not a test seed"):
        env.reset(env.seeds("train", 1)[0], "test")


def test_bad_settings_name_the_key():
    with pytest.raises(EnvironmentConfigError, match="slip_probability"):
        make_env(EnvironmentSpec("dual_control", "telecom", {"slip_probability": 2.0}))
    with pytest.raises(EnvironmentConfigError, match="environment.games"):
        make_env(EnvironmentSpec("dual_control", "retail"))
    with pytest.raises(EnvironmentConfigError, match="slipprob"):
        make_env(EnvironmentSpec("dual_control", "telecom", {"slipprob": 0.1}))


# --- the user simulator: every rule ---------------------------------------------------


def user_on(faults=(), model="Nexa 5", slips=False):
    task = make_task("train", find_task("train", lambda t: set(t.faults) == set(faults) and t.world.phone.model.name == model))
    world = copy.deepcopy(task.world)
    return UserSimulator(world, slips), world


def test_the_user_reads_the_screens_out():
    user, world = user_on(("airplane",))
    assert user.respond("read status bar") == "The status bar shows: airplane mode on, no signal, no data icon."
    assert "mobile data on, data roaming off, APN default, SIM ready, restart required no" in user.respond(
        "check network settings"
    )


def test_the_user_performs_what_it_can_and_says_the_result():
    user, world = user_on(("airplane",))
    assert user.respond("turn off airplane mode") == "Okay. Airplane mode is now off."
    assert user.respond("turn off airplane mode") == "Airplane mode is already off."
    assert not world.phone.airplane_mode and not blockers(world)
    assert "put it back" in user.respond("reseat sim card") and world.phone.restart_pending
    assert user.respond("restart phone") == "Okay, the phone restarted." and not world.phone.restart_pending


def test_a_slipping_user_flips_the_wrong_switch_once():
    user, world = user_on(("airplane",), slips=True)
    assert user.respond("turn off airplane mode") == "Oops, I tapped mobile data instead. Mobile data is now off."
    assert world.phone.airplane_mode and not world.phone.mobile_data
    assert user.respond("turn off airplane mode") == "Okay. Airplane mode is now off."
    assert user.respond("turn on mobile data") == "Okay. Mobile data is now on."
    assert not blockers(world)


def test_an_ambiguous_instruction_is_asked_back_and_changes_nothing():
    user, world = user_on(("data_off",))
    before = copy.deepcopy(world)
    for instruction in ("toggle airplane mode", "toggle mobile data"):
        assert user.respond(instruction) == user_rules.AMBIGUOUS_REPLY
    assert world == before


def test_the_user_refuses_what_it_will_not_or_cannot_do():
    user, world = user_on(("apn",), model="Orbit X")
    before = copy.deepcopy(world)
    assert user.respond("factory reset phone") == user_rules.FACTORY_RESET_REPLY
    assert user.respond("reset apn") == user_rules.NO_APN_MENU_REPLY
    assert user.respond("pay the bill") == user_rules.BILL_ALREADY_PAID_REPLY
    assert user.respond("sing a song") == user_rules.UNKNOWN_REPLY
    assert world == before and not world.phone.apn_ok
    editable, world = user_on(("apn",), model="Nexa 5")
    assert "reset the APN" in editable.respond("reset apn") and world.phone.apn_ok and world.phone.restart_pending


def test_the_line_resumes_only_after_the_user_pays():
    session = TelecomSession(make_task("train", find_task("train", lambda t: t.faults == ("suspended",))))
    assert session.act("resume_line") == "Tool: Cannot resume the line: the bill is overdue."
    assert session.act("ask_user pay the bill") == "User: Okay, I paid the bill in the app."
    assert session.act("resume_line") == "Tool: The line is active again."
    assert not blockers(session.world)


def test_the_gold_solver_recovers_from_a_slip(env):
    seed = find_task("test", lambda t: t.slips and "airplane" in t.faults)
    env.reset(seed, "test")
    gold = env.gold_actions()
    assert gold.count("ask_user turn off airplane mode") == 2
    assert play(env, gold)[4]["won"]


# --- the final check --------------------------------------------------------------------


def test_saying_fixed_too_early_loses(env):
    env.reset(3, "train")
    observation, reward, terminated, truncated, info = env.step(FINAL_MESSAGE)
    assert terminated and not truncated and reward == 0.0 and not info["won"] and info["lost"]
    assert "still blocked" in observation


def test_fixing_without_saying_so_is_not_won(env):
    env.reset(3, "train")
    gold = env.gold_actions()
    play(env, gold[:-1])
    assert not blockers(env.session.world)
    results = [env.step("ask_user read status bar") for _ in range(SPEC.max_steps - len(gold) + 1)]
    _, reward, terminated, truncated, info = results[-1]
    assert truncated and not terminated and not info["won"] and sum(r[1] for r in results) == 0.0


@pytest.mark.parametrize(
    "extra, problem",
    [("refuel_data", "top-up"), ("change_plan unlimited", "plan"), ("enable_roaming", "roaming add-on")],
)
def test_an_unwanted_charge_loses_even_when_data_works(env, extra, problem):
    seed = find_task("train", lambda t: "quota" not in t.faults and "roaming" not in t.faults and t.initial_plan != "unlimited")
    env.reset(seed, "train")
    gold = env.gold_actions()
    play(env, gold[:-1] + [extra])
    observation, reward, terminated, _, info = env.step(FINAL_MESSAGE)
    assert not blockers(env.session.world) and terminated and reward == 0.0 and not info["won"]
    assert problem in observation


def test_the_quota_fix_must_follow_the_customers_wish():
    task = make_task("train", find_task("train", lambda t: t.faults == ("quota",) and t.preference != TOP_UP))
    world = copy.deepcopy(task.world)
    world.account.top_up_gb, world.account.top_ups = 1.0, 1  # a top-up instead of the upgrade
    assert not blockers(world) and any("top-up" in p for p in final_check(task, world))
    world = copy.deepcopy(task.world)
    world.account.plan, world.account.plan_changes = task.preference, 1
    assert final_check(task, world) == []


def test_expert_collection_plays_it_through_the_registry():
    env = make_env(SPEC)
    rows = play_gold_episode(env, SPEC, "dev", env.seeds("dev", 1)[0])
    assert rows[-1]["won"] and rows[-1]["done"] and rows[0]["valid_actions"] == list(ACTIONS)
    assert rows[-1]["action"] == FINAL_MESSAGE and rows[0]["action"] == "lookup_account"
    assert isinstance(env.session.world, World) and set(PHONE_MODELS) >= {"Nexa 5", "Orbit X", "Lumen Flip"}
