"""The dual-control telecom domain (``hindsight.envs.dual_control``) as an environment: the
gold solver wins every task of each fold, a random valid-action agent rarely does, the
typed tool schema, identification before the account, the policy deciding outcomes (a
solver that skips identification or breaks the policy loses exactly the tasks that need
it), the user ending the conversation after checking, the action checks, the folds and the
"seen" window that never repeats a trained task. The user's rules: test_dual_control_user.py."""

from __future__ import annotations

import random

import pytest

from hindsight.data.expert import play_gold_episode
from hindsight.envs import EnvironmentConfigError, EnvironmentSpec, make_env
from hindsight.envs.dual_control import DualControlEnvironment, listed_actions, make_task, parse_call, play
from hindsight.envs.dual_control.policy import POLICY, REFUEL_LIMIT_GB
from hindsight.envs.dual_control.session import FINAL_MESSAGE, TRANSFER, TelecomSession, final_check
from hindsight.envs.dual_control.tasks import (
    HELD_OUT_PAIRS, HELD_OUT_REQUESTS, INTENTS, PERSONAS, TOP_UP, UNSEEN_MODELS, fault_combinations,
)
from hindsight.envs.dual_control.tools import Seen, ToolCallError

SPEC = EnvironmentSpec("dual_control", "telecom", max_steps=20)
SEEDS_PER_SPLIT = 300


@pytest.fixture()
def env():
    environment = make_env(SPEC)
    yield environment
    environment.close()


def run(env, actions):
    return [env.step(action) for action in actions][-1]


def find_task(split, wanted, count=5000):
    """The first seed of ``split`` whose task satisfies ``wanted(task)``."""
    for seed in make_env(SPEC).seeds(split, count):
        if wanted(make_task(split, seed)):
            return seed
    raise AssertionError("no such task in the window")


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_the_gold_solver_wins_every_task_within_the_step_limit(env, split):
    lengths, kinds = [], set()
    for seed in env.seeds(split, SEEDS_PER_SPLIT):
        _, info = env.reset(seed, split)
        gold = env.gold_actions()
        _, reward, terminated, truncated, info = run(env, gold)
        assert info["won"] and terminated and not truncated and reward == 10.0, (split, seed, gold)
        assert info["score"] == 1.0
        lengths.append(len(gold))
        kinds.add((info["intent"], info["persona"]))
    assert max(lengths) < 16  # the Gymnasium id's step limit
    assert kinds == {(intent, persona) for intent in INTENTS for persona in PERSONAS}


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


# --- the tools: a typed schema, a finite list ------------------------------------------


def test_the_policy_is_the_task_text_and_the_opening_reveals_no_identity(env):
    seed = find_task("train", lambda t: t.persona == "easy" and t.intent == "mobile_data")
    observation, info = env.reset(seed, "train")
    assert info["task"] == POLICY and f"refuel at most {REFUEL_LIMIT_GB} GB" in POLICY
    customer = env.session.world.customer
    assert observation == "Customer: Hi. My problem is that mobile data does not work at all."
    assert customer.phone_number not in observation and not any(a.startswith("identify_by") for a in info["valid_actions"])


def test_the_list_is_finite_and_gains_only_what_the_user_said(env):
    seed = find_task("train", lambda t: t.persona == "easy")
    _, info = env.reset(seed, "train")
    before = info["valid_actions"]
    assert len(before) == len(set(before)) == 37
    _, _, _, _, info = env.step("ask_user what is your phone number")
    number = env.session.world.customer.phone_number
    assert info["valid_actions"] == [f"identify_by_phone {number}"] + before
    assert all(parse_call(action).text == action for action in info["valid_actions"])


@pytest.mark.parametrize(
    "call, message",
    [
        ("fix everything", "no tool named 'fix'"),
        ("refuel_data ten", "refuel_data argument gb must be a whole number of GB from 1 to 5, got 'ten'"),
        ("refuel_data 9", "got '9'"),
        ("identify_by_phone 5550142", "phone_number must be a phone number like 555-0142"),
        ("identify_by_name Ana 1990-01-01", "identify_by_name takes <first_name> <last_name> <birth_date>, got 2"),
        ("change_plan gold", "plan must be one of basic, plus, unlimited"),
        ("get_details now", "get_details takes no arguments"),
        ("ask_user sing a song", "instruction must be one of the user instructions"),
    ],
)
def test_a_malformed_call_is_an_invalid_no_op_named_in_the_observation(env, call, message):
    env.reset(0, "train")
    before = repr(env.session.world)
    observation, reward, terminated, _, info = env.step(call)
    assert message in observation and observation.startswith("Invalid tool call")
    assert reward == pytest.approx(-0.1) and not info["action_valid"] and not terminated
    assert repr(env.session.world) == before and env.session.actions == []
    with pytest.raises(ToolCallError, match="Invalid tool call"):
        parse_call(call)


def test_a_well_typed_call_off_the_list_is_played_and_answered(env):
    env.reset(0, "train")
    observation, _, _, _, info = env.step("identify_by_phone 555-99999"[:-1])
    assert info["action_valid"] and observation == "Tool: No customer with phone number 555-9999."


def test_seen_arguments_come_only_from_the_users_own_words():
    seen = Seen()
    seen.take_in("Tool: No customer with phone number 555-1234.")
    seen.take_in("User: My number is 555-0001. I am Ana Silva, born 1990-02-03.")
    assert seen.phone_numbers == ["555-0001"] and seen.names == [("Ana", "Silva", "1990-02-03")]
    assert listed_actions(seen)[:2] == ["identify_by_phone 555-0001", "identify_by_name Ana Silva 1990-02-03"]


# --- identification and the policy ------------------------------------------------------


def test_the_account_is_closed_until_the_customer_is_identified():
    task = make_task("train", find_task("train", lambda t: t.faults == ("suspended",) and t.persona == "hard"))
    session = TelecomSession(task)
    act = lambda text: session.act(parse_call(text))  # noqa: E731
    for tool in ("get_details", "resume_line", "refuel_data 1", "enable_roaming"):
        assert act(tool) == "Tool: Error: identify the customer first (policy 1); nothing was done."
    assert act("ask_user what is your phone number") == "User: I don't know my number by heart."
    customer = task.world.customer
    assert act("identify_by_name Ana Silva 1990-01-01") == "Tool: No customer with that name and date of birth."
    act("ask_user what is your name and date of birth")
    assert act(f"identify_by_name {customer.first_name} {customer.last_name} {customer.birth_date}").startswith("Tool: Customer identified")
    assert act("resume_line") == "Tool: Cannot resume the line: the bill is overdue."
    assert act("ask_user pay the bill") == "User: Okay, I paid the bill in the app."
    assert act("resume_line") == "Tool: The line is active again."


@pytest.mark.parametrize("split", ["train", "test"])
def test_skipping_identification_loses_exactly_the_tasks_that_need_it(split):
    needs = []
    for seed in make_env(SPEC).seeds(split, 400):
        task = make_task(split, seed)
        session = play(task, identify=False)
        assert session.won != task.needs_identification, (seed, task.faults, session.problems)
        needs.append(task.needs_identification)
    assert 0 < sum(needs) < len(needs)


@pytest.mark.parametrize("split", ["train", "test"])
def test_breaking_the_policy_loses_exactly_the_tasks_it_decides(split):
    decided = []
    for seed in make_env(SPEC).seeds(split, 400):
        task = make_task(split, seed)
        needs_policy = task.refuel_over_limit or task.intent == "out_of_scope"
        session = play(task, follow_policy=False)
        assert session.won != needs_policy, (seed, task.faults, session.problems)
        decided.append((task.refuel_over_limit, task.intent == "out_of_scope"))
    assert any(over for over, _ in decided) and any(out for _, out in decided)


def test_an_out_of_scope_request_is_won_only_by_a_transfer_after_identification(env):
    seed = find_task("train", lambda t: t.intent == "out_of_scope" and t.persona == "easy")
    env.reset(seed, "train")
    observation, reward, terminated, _, info = env.step(TRANSFER)
    assert terminated and not info["won"] and "transferred before identifying" in " ".join(env.session.problems)
    env.reset(seed, "train")
    gold = env.gold_actions()
    assert gold[-1] == TRANSFER and gold[-2].startswith("identify_by_phone")
    assert run(env, gold)[4]["won"]
    fixable = find_task("train", lambda t: t.intent == "mobile_data" and t.persona == "easy")
    env.reset(fixable, "train")
    run(env, env.gold_actions()[:-1] + [TRANSFER])
    assert not env.session.won and "transferred a problem support should fix" in env.session.problems


# --- the end of a conversation, the final and the action checks --------------------------


@pytest.mark.parametrize("persona, patience", [("easy", 3), ("hard", 2)])
def test_a_premature_fixed_never_wins_and_the_user_gives_up(env, persona, patience):
    seed = find_task("train", lambda t: t.intent == "mobile_data" and t.persona == persona)
    env.reset(seed, "train")
    for claim in range(1, patience + 1):
        observation, reward, terminated, _, info = env.step(FINAL_MESSAGE)
        assert "It still doesn't work" in observation and reward == 0.0 and not info["won"]
        assert terminated == (claim == patience) and info["lost"] == (claim == patience)
    assert observation.endswith("I give up. (conversation ended)")


def test_the_user_ends_the_conversation_after_their_own_check(env):
    seed = find_task("train", lambda t: t.intent == "slow_data" and t.faults == ("data_saver",) and not t.slips)
    env.reset(seed, "train")
    gold = env.gold_actions()
    assert gold[-2:] == ["ask_user turn off data saver", FINAL_MESSAGE]
    run(env, gold[:-1])
    observation, reward, terminated, _, info = env.step("ask_user run speed test")
    assert "48.0 Mbps download (fast)" in observation and observation.endswith("(conversation ended)")
    assert terminated and info["won"] and reward == 10.0


def test_fixing_without_any_check_is_not_won(env):
    seed = find_task("train", lambda t: t.intent == "mobile_data" and t.faults == ("airplane",) and not t.slips)
    env.reset(seed, "train")
    gold = env.gold_actions()
    run(env, gold[:-1])
    results = [env.step("ask_user check network settings") for _ in range(SPEC.max_steps - len(gold) + 1)]
    assert results[-1][3] and not results[-1][2] and not results[-1][4]["won"] and sum(r[1] for r in results) == 0.0


def quota_task(preference, wanted_gb=None):
    def wanted(task):
        return task.faults == ("quota",) and (task.preference == TOP_UP) == (preference == TOP_UP) and (
            wanted_gb is None or task.refuel_wanted_gb == wanted_gb)
    return make_task("train", find_task("train", wanted))


def test_the_action_checks_catch_what_the_final_state_cannot():
    task = quota_task(TOP_UP, wanted_gb=2)
    gold = play(task).actions
    assert "ask_user refuel or plan upgrade" in gold and "refuel_data 2" in gold
    for bad, expected in [
        ([a for a in gold if a != "ask_user refuel or plan upgrade"], "'ask_user refuel or plan upgrade' missing"),
        ([b for a in gold for b in (["refuel_data 1", "refuel_data 1"] if a == "refuel_data 2" else [a])], "'refuel_data 2' missing"),
    ]:
        session = TelecomSession(task)
        for action in bad:
            session.act(parse_call(action))
        assert session.finished and not session.won and session.problems == [f"action check: {expected}"]
        assert session.world.account.refuel_gb == 2  # the final state alone would pass


def test_a_refuel_above_the_limit_loses_and_the_limit_wins():
    task = quota_task(TOP_UP, wanted_gb=3)
    assert task.refuel_over_limit and "refuel_data 2" in play(task).actions and play(task).won
    lost = play(task, follow_policy=False)
    assert not lost.won and "3 GB refuelled, 2 GB wanted" in lost.problems


@pytest.mark.parametrize("extra, problem", [("refuel_data 1", "GB refuelled"), ("change_plan unlimited", "plan"),
                                            ("enable_roaming", "roaming add-on")])
def test_an_unwanted_charge_loses_even_when_the_problem_is_solved(extra, problem):
    task = make_task("train", find_task("train", lambda t: t.intent == "mobile_data" and not {"quota", "roaming"} & set(t.faults)
                                        and t.initial_plan != "unlimited"))
    gold = play(task).actions
    session = TelecomSession(task)
    for action in gold[:-1] + [extra, FINAL_MESSAGE]:
        session.act(parse_call(action))
    assert session.finished and not session.won and any(problem in p for p in session.problems)


def test_the_upgrade_must_be_the_named_plan():
    task = quota_task("upgrade")
    assert play(task).won and f"change_plan {task.preference}" in play(task).actions
    world = play(task).world
    assert final_check(task, world, ["ask_user refuel or plan upgrade", "refuel_data 1"], False) != []


# --- folds, seeds and the "seen" window -------------------------------------------------------


def test_every_seed_is_one_episode(env):
    other = DualControlEnvironment(SPEC)
    for seed in env.seeds("test", 20):
        first, second = env.reset(seed, "test"), other.reset(seed, "test")
        assert first == second and env.gold_actions() == other.gold_actions()
        rng = random.Random(seed)
        for _ in range(8):
            action = rng.choice(first[1]["valid_actions"][:-2])
            assert env.step(action) == other.step(action)


def test_folds_hold_out_fault_pairs_a_request_and_a_phone_model(env):
    for intent in INTENTS:
        train, test = set(fault_combinations("train", intent)), set(fault_combinations("test", intent))
        assert set(fault_combinations("dev", intent)) == train and train and test and not train & test
    held = {frozenset(pair) for intent in INTENTS for pair in fault_combinations("test", intent) if len(pair) == 2}
    assert held == HELD_OUT_PAIRS
    assert {task[0] for task in fault_combinations("test", "out_of_scope")} == set(HELD_OUT_REQUESTS)
    train_models = {make_task("train", seed).world.phone.model.name for seed in env.seeds("train", 300)}
    test_models = {make_task("test", seed).world.phone.model.name for seed in env.seeds("test", 300)}
    assert not train_models & set(UNSEEN_MODELS) and set(UNSEEN_MODELS) <= test_models
    assert not set(env.seeds("train", 100)) & set(env.seeds("test", 100))
    with pytest.raises(EnvironmentConfigError, match="not a test seed"):
        env.reset(env.seeds("train", 1)[0], "test")


def test_the_seen_window_never_repeats_a_task_below_it(env):
    trained = {make_task("train", seed).signature() for seed in env.seeds("train", 500)}
    seen = env.seeds("train", 25, 500)
    signatures = [make_task("train", seed).signature() for seed in seen]
    assert len(set(signatures)) == 25 and not set(signatures) & trained
    assert seen[0] >= 500 and seen != list(range(500, 525))  # some identical tasks were skipped
    assert env.seeds("train", 5) == [0, 1, 2, 3, 4] and env.seeds("dev", 2, 3) == [1_000_003, 1_000_004]


def test_bad_settings_name_the_key():
    with pytest.raises(EnvironmentConfigError, match="slip_probability"):
        make_env(EnvironmentSpec("dual_control", "telecom", {"slip_probability": 2.0}))
    with pytest.raises(EnvironmentConfigError, match="environment.games"):
        make_env(EnvironmentSpec("dual_control", "retail"))
    with pytest.raises(EnvironmentConfigError, match="slipprob"):
        make_env(EnvironmentSpec("dual_control", "telecom", {"slipprob": 0.1}))


def test_expert_collection_plays_it_through_the_registry():
    env = make_env(SPEC)
    rows = play_gold_episode(env, SPEC, "dev", env.seeds("dev", 1)[0])
    assert rows[-1]["won"] and rows[-1]["done"]
    assert all(row["action"] in row["valid_actions"] for row in rows)


def test_the_account_record_says_when_the_data_is_used_up():
    task = quota_task(TOP_UP, wanted_gb=1)
    session = TelecomSession(task)
    customer = task.world.customer
    session.act(parse_call(f"identify_by_name {customer.first_name} {customer.last_name} {customer.birth_date}"))
    limit = {"basic": 2.0, "plus": 10.0}[task.initial_plan]
    assert f"data {limit:.1f} of {limit:.1f} GB used (none left)" in session.act(parse_call("get_details"))
    session.act(parse_call("refuel_data 1"))
    assert f"of {limit + 1:.1f} GB used," in session.act(parse_call("get_details"))


def test_a_window_far_up_the_train_fold_is_plain_and_quick(env):
    import time

    started = time.perf_counter()
    assert env.seeds("train", 2, 50_000) == [50_000, 50_001]
    assert time.perf_counter() - started < 1.0
