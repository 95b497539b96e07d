"""EMPO on replayed expert trajectories: the advantage of a known table, and a short run of
the tiny behaviour-cloned policy on real TextWorldExpress gold episodes with no live
environment (the replay is the only transition source)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from hindsight.config import EmpoConfig
from hindsight.data.expert import collect_expert_trajectories
from hindsight.envs.expert_replay import replay_env_factory
from hindsight.evaluation.semi_online import evaluate_semi_online, semi_online_metrics
from hindsight.rollout.engine import RolloutConfig, run_rollouts
from hindsight.rollout.tasks import make_tasks
from hindsight.methods import build_method
from hindsight.runs.empo_run import EmpoSource, run_empo, semi_online_table
from hindsight.training.batch import RolloutBatch
from hindsight.training.rl_config import RLConfig
from hindsight.policy.generation import SamplingConfig


def test_empo_advantage_of_a_known_table():
    # task g, two rollouts of 2 steps. Rollout a: matched (r=1), matched (r=1): G = [1.5, 1].
    # Rollout b: patched (r=0.55, break), matched (r=1): G = [0.55, 1]. Returns 2 vs 1.55.
    table = pd.DataFrame(
        {
            "episode_id": ["a", "a", "b", "b"], "group_id": ["g"] * 4, "step": [0, 1, 0, 1],
            "reward": [1.0, 1.0, 0.55, 1.0], "won": [False, True, False, False],
            "action_valid": [True, True, False, True], "source": ["rollout", "rollout", "patched", "rollout"],
        }
    )
    config = RLConfig(algorithm="empo", methods={"empo": {"gamma": 0.5}})
    advantages = build_method(config).advantages(RolloutBatch(table=table, samples=[], played=table), config, max_steps=2)
    episode = 0.5 * math.sqrt(3.0)  # scores [2, 2, 1.55, 1.55]: +-0.225 / std(0.2598)
    step0 = 1 / math.sqrt(2)  # 1.5 vs 0.55 at step 0; 1 vs 1 at step 1
    expected = torch.tensor([episode + step0, episode, -episode - step0, -episode])
    assert torch.allclose(advantages, expected, atol=1e-4)


@pytest.fixture(scope="module")
def expert_table(twc_spec):
    """Eight real gold twc episodes (train fold)."""
    return collect_expert_trajectories([twc_spec], {"train": 8})


def test_semi_online_stops_at_first_mismatch(warm_policy, expert_table):
    source = EmpoSource.from_table(expert_table, EmpoConfig(heldout_fraction=0.25), seed=0)
    rollout = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=1024), progress=False, seed=3)
    metrics = evaluate_semi_online(warm_policy, source.replay, rollout)
    assert metrics["semi_online/trajectories"] == 2.0
    assert 0.0 <= metrics["semi_online/success_rate"] <= metrics["semi_online/mean_progress"] <= 1.0
    # the same rollout, played by hand: every episode ends at its first mismatch
    tasks = make_tasks(source.replay.spec(), "test", range(2))
    settings = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=1024), group_size=1, progress=False, seed=3)
    table = run_rollouts(warm_policy, replay_env_factory(source.replay, patch_threshold=0), tasks, settings).table
    assert not table["source"].eq("patched").any()
    for _, rows in table.groupby("episode_id"):
        assert rows["action_valid"].iloc[:-1].all()  # only the last step may be a mismatch
    assert semi_online_metrics(table) == metrics


def test_empo_run_trains_from_replay_only(warm_policy, expert_table, tmp_path):
    rl = RLConfig(
        algorithm="empo", updates=2, tasks_per_update=3, group_size=3, learning_rate=1e-3, mini_batch_size=16,
        eval_every=1, kl_coef=0.0,
    )
    empo = EmpoConfig(rl=rl)
    source = EmpoSource.from_table(expert_table, empo, seed=0)
    logged = []
    before = {n: p.detach().clone() for n, p in warm_policy.model.named_parameters()}
    rollout = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=1024), progress=False)
    result = run_empo(warm_policy, source, rollout, tmp_path / "ckpt", seed=0, log_metrics=lambda m, s: logged.append(s))
    history = result.history
    assert history["update"].tolist() == [0, 1, 2] and logged[0] == 0
    trained = history.iloc[1:]
    assert (trained["empo/match_rate"] + trained["empo/patch_rate"] <= 1.0 + 1e-9).all()
    assert (trained["empo/match_rate"] > 0).any() or (trained["empo/patch_rate"] > 0).any()
    assert trained["losses/total"].map(math.isfinite).all()
    assert set(result.last_rollout["env"]) == {"expert_replay"}
    assert set(result.last_rollout["source"]) <= {"rollout", "patched"}
    assert len(semi_online_table(history)) == 3
    changed = any(not torch.equal(before[n], p) for n, p in result.policy.model.named_parameters())
    unchanged_start = all(torch.equal(before[n], p) for n, p in warm_policy.model.named_parameters())
    assert changed and unchanged_start


def test_grid_cell_replays_the_training_tasks_gold_episodes_and_evaluates_online(warm_policy, twc_spec, twc_tasks):
    from hindsight.config import AnalyzerConfig
    from hindsight.evaluation.heldout import HeldoutConfig, HeldoutPlay
    from hindsight.experiments.grid import Cell, cell_rl_config
    from hindsight.runs.empo_run import empo_grid_setup
    from hindsight.runs.rl_run import run_rl
    from hindsight.training.run_setup import RLSetup

    rollout = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=1024), progress=False)
    heldout = HeldoutConfig(play=HeldoutPlay(episodes_per_game=1, splits=["seen"], decodings={"sampled": {"temperature": 1.0}}))
    setup = RLSetup(specs=[twc_spec], rollout=rollout, heldout=heldout, pool=list(twc_tasks), analyzer=AnalyzerConfig())
    cell_setup, recorded_steps = empo_grid_setup(setup, EmpoConfig(), seed=0)
    assert [task.spec.env for task in cell_setup.pool] == ["expert_replay"] * len(twc_tasks)
    assert recorded_steps > 0 and setup.env_factory is None  # the grid's own setup is untouched
    base = RLConfig(updates=1, tasks_per_update=2, group_size=2, learning_rate=1e-3, mini_batch_size=16, eval_every=1)
    start_from, config = cell_rl_config(base, Cell("empo", 0, 1.0))
    assert (start_from, config.algorithm) == ("base", "empo")
    result = run_rl(warm_policy, config, cell_setup, None, seed=0)
    final = result.history.iloc[-1]
    assert final["eval/seen/twc/episodes"] == 1.0  # held-out success measured on the real environment
    assert final["empo/match_rate"] + final["empo/patch_rate"] > 0
