"""WM-R1's official thinking, the imaginary turn (``thinking: imaginary_turn``, the default): a
response ``imagine: <a>`` is a world-model call whose prediction returns as the next
observation; the turn is left out of the step limit, the world model's state advances along
the imagined action, an episode makes at most ``n_wm_max`` of them, and the prediction is
prompt text (never in the loss) while the ``imagine:`` response is trained."""

from __future__ import annotations

import dataclasses

import gymnasium
import pytest

from hindsight.envs.base import EnvironmentSpec
from hindsight.methods import MethodContext, build_method
from hindsight.methods.wmr1_rewards import imagined_turns, wmr1_scores, world_model_calls, world_model_metrics
from hindsight.rollout.engine import RolloutConfig, run_rollouts
from hindsight.rollout.tasks import make_tasks
from hindsight.training.rl_config import RLConfig
from hindsight.envs.base import EnvironmentConfigError
from hindsight.world_model.environment import IMAGINARY_LAYOUT, IMAGINE_PREFIX, RecordedTasks, WorldModelSimulator
from hindsight.world_model.transitions import SOLVED_MARKER
from hindsight.envs.base import ToyEnvironment
from hindsight.policy.generation import SamplingConfig

SPEC = EnvironmentSpec("toy", "box", {}, max_steps=2)
VALID = ["open box", "look"]
ROLLOUT = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=768), max_parallel=8, progress=False, group_size=8, seed=5)


class BoxEnv(ToyEnvironment):
    """The recorded real game: nothing wins (the episodes run to the step limit)."""

    def __init__(self, spec):
        self.spec = spec

    def reset(self, seed, split="train"):
        return f"Room {seed}: a box.", {"task": "Your task is to open the box.", "valid_actions": list(VALID)}

    def step(self, action):
        return "A room.", 0.0, False, False, {"valid_actions": list(VALID), "won": False}


class CountingSimulator(WorldModelSimulator):
    """A world model answering ``state <k>`` for its k-th call, keeping every prompt it read."""

    prompts: list[str]

    def predict(self, prompt: str) -> str:
        self.calls += 1
        self.prompts = [*getattr(self, "prompts", []), prompt]
        return f"state {self.calls}"


@pytest.fixture(scope="module")
def simulator(tiny_policy):
    recorded = run_rollouts(tiny_policy, BoxEnv, make_tasks(SPEC, "train", [0, 1]), dataclasses.replace(ROLLOUT, group_size=1))
    return CountingSimulator(tiny_policy, RecordedTasks(recorded.table))


def test_an_imaginary_turn_advances_the_world_model_and_is_capped_per_episode(simulator):
    env = simulator.make_env(SPEC, imaginary_turns=2)
    observation, info = env.reset(0, "train")
    assert info["valid_actions"] == VALID + [IMAGINE_PREFIX + a for a in VALID]
    calls = simulator.calls
    shown, reward, won, _, info = env.step(IMAGINE_PREFIX + "look")
    predicted = f"state {calls + 1}"
    assert shown == IMAGINARY_LAYOUT.format(predicted) and info["imaginary"] and info["action_valid"] and not won
    assert env.observation == predicted and env.history == [(observation, "look")]  # the state advanced
    env.step("open box")  # a committed action does not give the budget back (per episode, not per step)
    assert f"Action: look" in simulator.prompts[-1] and predicted in simulator.prompts[-1]  # from the imagined state
    _, _, _, _, info = env.step(IMAGINE_PREFIX + "open box")
    assert info["imaginary"] and simulator.calls == calls + 3
    assert info["valid_actions"] == VALID  # the cap is reached: no more offered
    _, reward, _, _, info = env.step(IMAGINE_PREFIX + "look")  # asked all the same: refused, no call
    assert not info["action_valid"] and "imaginary" not in info and simulator.calls == calls + 3
    assert reward == -SPEC.reward.invalid_penalty
    _, info = env.reset(1, "train")
    assert IMAGINE_PREFIX + "look" in info["valid_actions"]  # a new episode, a new budget
    with pytest.raises(ValueError, match="exclusive"):
        simulator.make_env(SPEC, imagined_turns=1, imaginary_turns=1)


def test_imaginary_turns_are_left_out_of_the_step_limit_and_their_predictions_out_of_the_loss(tiny_policy, simulator):
    method = build_method(RLConfig(algorithm="wmr1", methods={"wmr1": {"n_wm_max": 3}}), MethodContext(world_model=simulator))
    result = run_rollouts(tiny_policy, method.transitions(None), make_tasks(SPEC, "train", [0, 1]), ROLLOUT)
    table = result.table.reset_index(drop=True)
    imagined = imagined_turns(table)
    assert imagined.any(), "the policy never chose an offered imaginary turn"
    for _, episode in table.groupby("episode_id"):
        flags = imagined_turns(episode)
        assert (~flags).sum() == SPEC.max_steps  # nothing wins: exactly the step limit of committed actions
        assert flags.sum() <= 3  # n_wm_max per episode
    assert (table.groupby("episode_id").size() > SPEC.max_steps).any()  # imaginary turns did not use up the limit
    assert table["action_valid"].all()  # constrained decoding never asks past the cap
    samples = result.samples
    for row, sample, after in zip(table.itertuples(), samples, samples[1:]):
        if not row.action.startswith(IMAGINE_PREFIX) or after.episode_id != sample.episode_id:
            continue
        prediction = str(table.loc[row.Index + 1, "observation"])
        assert prediction.startswith("[imagined] state ")
        assert prediction in after.prompt  # the prediction is the next turn's prompt text ...
        response = tiny_policy.tokenizer.decode(after.response_ids)
        assert "state" not in response  # ... never a response token, so never in the loss
        assert any(len(allowed) > 1 for allowed in sample.allowed_ids)  # the imagine: response is a real choice, trained
    # R_wm counts the imaginary calls, R_len the committed actions only
    calls = world_model_calls(table).groupby(table["episode_id"]).sum()
    assert calls.equals(imagined.groupby(table["episode_id"]).sum())
    scores = wmr1_scores(table, max_steps=SPEC.max_steps)
    assert scores.nunique() > 1  # same outcome and length: only the calls tell episodes apart
    metrics = world_model_metrics(table, 0, simulator.calls)
    assert metrics["world_model/calls_per_step"] == pytest.approx(imagined.sum() / (~imagined).sum())


class WinningSimulator(WorldModelSimulator):
    """A world model that says every action solves the task."""

    def predict(self, prompt: str) -> str:
        self.calls += 1
        return SOLVED_MARKER


def test_an_imaginary_turn_never_ends_the_episode(tiny_policy, simulator):
    winning = WinningSimulator(tiny_policy, simulator.tasks)
    env = winning.make_env(SPEC, imaginary_turns=2)
    observation, _ = env.reset(0, "train")
    shown, reward, won, truncated, info = env.step(IMAGINE_PREFIX + "open box")
    assert shown == IMAGINARY_LAYOUT.format(SOLVED_MARKER) and info["imaginary"]  # the prediction, shown
    assert not won and not truncated and not info["won"] and reward == 0.0  # ... is no win
    assert env.observation == observation and env.history == [] and env.valid == VALID  # a win is not stepped into
    _, reward, won, _, info = env.step("open box")  # only a committed action is judged
    assert won and info["won"] and reward == SPEC.reward.success_reward
    # played by the method's rollout: every episode ends on a committed action, none won with 0 of them
    method = build_method(RLConfig(algorithm="wmr1", methods={"wmr1": {"n_wm_max": 3}}), MethodContext(world_model=winning))
    table = run_rollouts(tiny_policy, method.transitions(None), make_tasks(SPEC, "train", [0, 1]), ROLLOUT).table
    assert imagined_turns(table).any(), "the policy never chose an offered imaginary turn"
    for _, episode in table.sort_values("step").groupby("episode_id"):
        committed = ~imagined_turns(episode)
        assert committed.sum() == 1 and committed.iloc[-1] and episode["won"].iloc[-1]
        assert not episode["won"][~committed].any()


def test_the_gymnasium_id_takes_the_thinking_mode_and_the_imaginary_turn_budget(simulator):
    env = gymnasium.make("hindsight/world-model-v0", simulator=simulator, env="toy", game="box", max_steps=2,
                         thinking="imaginary_turn", imaginary_turns=1)
    _, info = env.reset(seed=0)
    assert IMAGINE_PREFIX + "look" in info["valid_actions"]
    calls = simulator.calls
    shown, _, terminated, truncated, info = env.step(IMAGINE_PREFIX + "look")
    assert shown.startswith("[imagined] state ") and info["imaginary"] and simulator.calls == calls + 1
    assert not terminated and not truncated
    assert info["valid_actions"] == VALID  # the budget of 1 is spent
    env.close()
    default = gymnasium.make("hindsight/world-model-v0", simulator=simulator, env="toy", game="box", thinking="imaginary_turn")
    assert default.unwrapped.environment.imaginary_turns == 5  # n_wm_max's default
    for thinking, turns in (("none", (0, 0)), ("imagined_turns", (1, 0))):
        built = gymnasium.make("hindsight/world-model-v0", simulator=simulator, env="toy", game="box", thinking=thinking).unwrapped.environment
        assert (built.imagined_turns, built.imaginary_turns) == turns
    for kwargs, error in (
        ({"thinking": "in_response"}, "not one of"),
        ({"thinking": "imaginary_turn", "imagined_turns": 2}, "takes no imagined_turns=2"),
        ({"thinking": "none", "imaginary_turns": 2}, "takes no imaginary_turns=2"),
        ({"thinking": "imaginary_turn", "imaginary_turns": 0}, "needs imaginary_turns >= 1"),
    ):
        with pytest.raises(EnvironmentConfigError, match=error):
            gymnasium.make("hindsight/world-model-v0", simulator=simulator, env="toy", game="box", **kwargs)
