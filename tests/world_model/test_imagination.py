"""Thinking with the world model inside one response (``rollout.imagination``): a tiny policy
on a toy real-like environment consults a world model before it commits; the predictions sit
in the response as forced tokens the loss never sees."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
import torch

from hindsight import algorithms
from hindsight.envs.base import EnvironmentSpec
from hindsight.methods import MethodContext, build_method
from hindsight.methods.wmr1_rewards import wmr1_scores, world_model_metrics
from hindsight.policy.constrained import ActionTrie
from hindsight.policy.encoding import collate
from hindsight.policy.logprobs import token_logprobs
from hindsight.policy.model import build_policy
from hindsight.rollout.engine import RolloutConfig, run_rollouts
from hindsight.rollout.imagination import CALLS_COLUMN, PREDICTION_LAYOUT, Imagination
from hindsight.rollout.tasks import make_tasks
from hindsight.training.rl_config import RLConfig
from hindsight.world_model.environment import IMAGINE_PREFIX, RecordedTasks, WorldModelSettings, WorldModelSimulator
from hindsight.envs.base import ToyEnvironment
from hindsight.policy.generation import SamplingConfig

SPEC = EnvironmentSpec("toy", "box", {}, max_steps=4)
VALID = ["open box", "look"]
PREDICTION = "You open the box."
ROLLOUT = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=512), max_parallel=4, progress=False, group_size=4, seed=3)


class BoxEnv(ToyEnvironment):
    """A real-like environment (no world model inside): opening the box wins."""

    GOLD = ("open box",)

    def __init__(self, spec):
        self.spec = spec
        self.played: list[str] = []

    def reset(self, seed, split="train"):
        return f"Room {seed}: a box.", {"task": "Your task is to open the box.", "valid_actions": list(VALID)}

    def step(self, action):
        self.played.append(action)
        won = action == "open box"
        return "Done." if won else "A room.", 10.0 * won, won, False, {"valid_actions": list(VALID), "won": won}


class ScriptedSimulator(WorldModelSimulator):
    """A world model whose every prediction is ``PREDICTION`` (calls counted as usual)."""

    def predict(self, prompt: str) -> str:
        self.calls += 1
        return PREDICTION


@pytest.fixture(scope="module")
def recorded(tiny_policy):
    return RecordedTasks(run_rollouts(tiny_policy, BoxEnv, make_tasks(SPEC, "train", [0]), dataclasses.replace(ROLLOUT, group_size=1)).table)


@pytest.fixture(scope="module")
def imagined(tiny_policy, recorded):
    simulator = ScriptedSimulator(tiny_policy, recorded)
    played: list[BoxEnv] = []

    def factory(spec):
        played.append(BoxEnv(spec))
        return played[-1]

    config = dataclasses.replace(ROLLOUT, imagination=Imagination(simulator, calls_per_step=2))
    result = run_rollouts(tiny_policy, factory, make_tasks(SPEC, "train", [0, 1, 2]), config)
    return result, simulator, played


def _split(sample, inserted: list[int]) -> list[list[int]]:
    """The response's segments around each inserted prediction (checked to be forced, log-prob 0)."""
    ids, segments, start, position = sample.response_ids, [], 0, 0
    while position <= len(ids) - len(inserted):
        if ids[position : position + len(inserted)] == inserted:
            span = range(position, position + len(inserted))
            assert all(sample.allowed_ids[i] == [ids[i]] and sample.old_logprobs[i].item() == 0.0 for i in span)
            assert not any(sample.choice_positions[i] for i in span)
            segments.append(ids[start:position])
            start = position = position + len(inserted)
        else:
            position += 1
    return segments + [ids[start:]]


def test_a_step_holds_its_predictions_as_forced_tokens_and_only_committed_actions_reach_the_env(tiny_policy, imagined):
    result, simulator, played = imagined
    tokenizer, eos = tiny_policy.tokenizer, tiny_policy.tokenizer.eos_token_id
    table, samples = result.table, result.samples
    assert len(samples) == len(table)  # one sample per committed step
    calls = table[CALLS_COLUMN].tolist()
    assert max(calls) == 2 and min(calls) == 0, "the toy run should both imagine up to the bound and not at all"
    assert simulator.calls == sum(calls)  # the real environment never asked the world model
    assert all(action in VALID for env in played for action in env.played)
    inserted = tokenizer(PREDICTION_LAYOUT.format(PREDICTION), add_special_tokens=False)["input_ids"]
    actions = {tuple(tokenizer(IMAGINE_PREFIX + a, add_special_tokens=False)["input_ids"] + [eos]) for a in VALID}
    for sample, row in zip(samples, table.itertuples(index=False)):
        segments = _split(sample, inserted)
        assert len(segments) == row.imagination_calls + 1
        assert all(tuple(segment) in actions for segment in segments[:-1])  # "imagine: a" + EOS, then its prediction
        assert segments[-1] == tokenizer(row.action, add_special_tokens=False)["input_ids"] + [eos]
        assert len(sample.old_logprobs) == len(sample.response_ids) == len(sample.allowed_ids) == len(row.response_logprobs)


def test_past_the_bound_only_committed_actions_are_offered(tiny_policy, imagined):
    result, _, _ = imagined
    first_imagine = set(ActionTrie.from_actions(tiny_policy.tokenizer, [IMAGINE_PREFIX + a for a in VALID]).root)
    first_valid = set(ActionTrie.from_actions(tiny_policy.tokenizer, VALID).root)
    assert not first_imagine & first_valid
    inserted = tiny_policy.tokenizer(PREDICTION_LAYOUT.format(PREDICTION), add_special_tokens=False)["input_ids"]
    for sample, calls in zip(result.samples, result.table[CALLS_COLUMN]):
        starts = [0]
        for segment in _split(sample, inserted)[:-1]:
            starts.append(starts[-1] + len(segment) + len(inserted))
        for call, start in enumerate(starts):
            offered = set(sample.allowed_ids[start])
            assert offered == (first_valid | first_imagine if call < 2 else first_valid), (calls, call)


def test_learner_logprobs_equal_behaviour_and_predictions_get_no_gradient(tiny_policy, imagined):
    result, _, _ = imagined
    samples = [sample for sample, calls in zip(result.samples, result.table[CALLS_COLUMN]) if calls > 0]
    batch = collate(samples, tiny_policy.tokenizer.pad_token_id)
    model = tiny_policy.model
    model.zero_grad()
    logp = token_logprobs(model, batch)[:, -batch.response_width :]
    forced = torch.zeros_like(logp, dtype=torch.bool)
    for row, sample in enumerate(samples):
        width = len(sample.response_ids)
        assert torch.allclose(logp[row, -width:].detach(), sample.old_logprobs, atol=1e-5)
        forced[row, -width:] = torch.tensor([not choice for choice in sample.choice_positions])
        ratio = torch.exp(logp[row, -width:].detach() - sample.old_logprobs)
        assert (ratio[forced[row, -width:]] == 1.0).all()  # PPO ratio exactly 1 on the predictions
    assert int(forced.sum()) > 0
    assert not batch.choice_mask[:, -batch.response_width :][forced].any()  # out of loss denominators
    logp[forced].sum().backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.count_nonzero(g) == 0 for g in grads)
    model.zero_grad()
    chosen = batch.choice_mask[:, -batch.response_width :].bool()
    logp2 = token_logprobs(model, batch)[:, -batch.response_width :]
    logp2[chosen].sum().backward()  # the policy's own tokens do carry gradient
    assert any(torch.count_nonzero(p.grad) > 0 for p in model.parameters() if p.grad is not None)
    model.zero_grad()


def test_a_real_tiny_world_model_predicts_inside_the_response(tiny_policy, tokenizer, recorded):
    simulator = WorldModelSimulator(build_policy("tiny", tokenizer, seed=1, device="cpu"), recorded, WorldModelSettings(history=1, max_new_tokens=6))
    config = dataclasses.replace(ROLLOUT, imagination=Imagination(simulator, calls_per_step=1), seed=4)
    result = run_rollouts(tiny_policy, BoxEnv, make_tasks(SPEC, "train", [0, 1]), config)
    assert simulator.calls == result.table[CALLS_COLUMN].sum() > 0
    assert result.table[CALLS_COLUMN].max() <= 1
    assert result.table["action"].isin(VALID).all()


def test_free_generation_and_the_multiturn_layout_are_refused(tiny_policy, recorded):
    imagination = Imagination(ScriptedSimulator(tiny_policy, recorded))
    with pytest.raises(ValueError, match=r"rollout\.sampling\.constrained: true"):
        run_rollouts(tiny_policy, BoxEnv, make_tasks(SPEC, "train", [0]), dataclasses.replace(ROLLOUT, sampling=dataclasses.replace(ROLLOUT.sampling, constrained=False), imagination=imagination))
    with pytest.raises(ValueError, match=r"rollout\.layout: stepwise"):
        run_rollouts(tiny_policy, BoxEnv, make_tasks(SPEC, "train", [0]), dataclasses.replace(ROLLOUT, layout="multiturn", imagination=imagination))
    with pytest.raises(ValueError, match="calls_per_step must be >= 1"):
        Imagination(imagination.simulator, calls_per_step=0)


def test_in_response_calls_reach_r_wm_and_the_metrics():
    rows = []
    # x (won): 2 steps, 3 + 1 in-response calls; y (lost): 3 steps, none; z: a replayed stored success
    for episode_id, calls, won, source in (("x", [3, 1], True, "world_model"), ("y", [0, 0, 0], False, "world_model"), ("z", [0, 0], True, "replay")):
        for step, n in enumerate(calls):
            rows.append({"episode_id": episode_id, "group_id": "g", "step": step, "won": won and step == len(calls) - 1, "reward": 0.0,
                         "action_valid": True, "source": source, "action": "open box", CALLS_COLUMN: n})
    table = pd.DataFrame(rows)
    scores = wmr1_scores(table, max_steps=8, progress=0.5, mask_replayed_calls=True)  # z: an expert episode
    # the in-response calls only (a committed step's transition is no call), priced against n_wm_max 5
    expected = algorithms.wm_r1_rewards([2, 3, 2], [True, False, True], [4, 0, 0], ["g"] * 3, max_length=8, max_calls=5,
                                        progress=0.5, imagined=[True, True, False])
    assert [scores["x"], scores["y"], scores["z"]] == pytest.approx(expected.tolist(), abs=1e-6)
    without = wmr1_scores(table.drop(columns=[CALLS_COLUMN]), max_steps=8, progress=0.5, mask_replayed_calls=True)
    assert without["x"] != pytest.approx(scores["x"])  # the calls count
    simulated = table[table["source"] != "replay"]
    assert world_model_metrics(simulated, 0, 9)["world_model/calls_per_step"] == pytest.approx(4 / 5)


def test_wmr1_thinks_in_imaginary_turns_by_default_and_in_response_as_a_reading(tiny_policy, recorded):
    simulator = ScriptedSimulator(tiny_policy, recorded)
    default = build_method(RLConfig(algorithm="wmr1"), MethodContext(world_model=simulator))
    assert default.settings.thinking == "imaginary_turn"
    assert default.rollout_settings(ROLLOUT, heldout=False).imagination is None  # no forced tokens
    assert default.rollout_settings(ROLLOUT, heldout=True).imagination is None
    assert default.transitions(None)(SPEC).imaginary_turns == 5  # n_wm_max per episode
    method = build_method(RLConfig(algorithm="wmr1", methods={"wmr1": {"thinking": "in_response"}}), MethodContext(world_model=simulator))
    training = method.rollout_settings(ROLLOUT, heldout=False)
    assert training.imagination.calls_per_step == 5 and training.imagination.simulator is simulator
    assert method.rollout_settings(ROLLOUT, heldout=True).imagination is not None
    assert method.transitions(None)(SPEC).imaginary_turns == 0
    assert ROLLOUT.imagination is None  # the shared settings stay as they are
    off = build_method(RLConfig(algorithm="wmr1", methods={"wmr1": {"thinking": "none"}}), MethodContext(world_model=simulator))
    assert off.rollout_settings(ROLLOUT, heldout=False).imagination is None
    assert off.transitions(None)(SPEC).offered_actions() == []  # nothing offered before reset
    real_only = build_method(RLConfig(algorithm="wmr1", methods={"wmr1": {"thinking": "in_response", "heldout_imagination": False}}),
                             MethodContext(world_model=simulator))
    assert real_only.rollout_settings(ROLLOUT, heldout=True).imagination is None
    with pytest.raises(ValueError, match=r"thinking must be one of"):
        build_method(RLConfig(algorithm="wmr1", methods={"wmr1": {"thinking": "dream"}}))
    with pytest.raises(ValueError, match=r"calls_per_step must be >= 1 \(thinking: none"):
        build_method(RLConfig(algorithm="wmr1", methods={"wmr1": {"calls_per_step": 0}}))


def test_a_state_without_valid_actions_is_decoded_freely_without_imagination(tiny_policy, recorded):
    class NoListEnv(BoxEnv):
        def reset(self, seed, split="train"):
            observation, info = super().reset(seed, split)
            return observation, {**info, "valid_actions": []}

    simulator = ScriptedSimulator(tiny_policy, recorded)
    config = dataclasses.replace(ROLLOUT, imagination=Imagination(simulator, calls_per_step=2), group_size=2, max_steps=1)
    result = run_rollouts(tiny_policy, NoListEnv, make_tasks(SPEC, "train", [0]), config)
    assert simulator.calls == 0 and (result.table[CALLS_COLUMN] == 0).all()
    assert all(sample.allowed_ids is None and sample.prompt for sample in result.samples)  # its prompt text kept
