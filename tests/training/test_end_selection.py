"""``training.rl.end_policy: best_seen``: the run ends with the held-out point best on the
seen split (the start included), never chosen by the unseen split, kept on disk so that a
resumed run still ends with it; ``last`` leaves the run as it was."""

from __future__ import annotations

import copy

import pytest
import torch

from hindsight.training.end_selection import BestSeenKeeper, check_end_policy, seen_score
from hindsight.training.rl_config import RLConfig


def point(seen_greedy: float, seen_sampled: float, unseen: float = 0.0) -> dict[str, float]:
    return {
        "heldout/seen/greedy/success_rate": seen_greedy, "heldout/seen/sampled/success_rate": seen_sampled,
        "heldout/seen/greedy/ci_low": 0.0, "heldout/unseen/greedy/success_rate": unseen,
    }


def shift(policy, by: float) -> None:
    with torch.no_grad():
        for parameter in policy.model.parameters():
            parameter.add_(by)


def weights(policy) -> dict[str, torch.Tensor]:
    return {name: tensor.clone() for name, tensor in policy.model.state_dict().items()}


def same(policy, kept: dict[str, torch.Tensor]) -> bool:
    return all(torch.equal(tensor, kept[name]) for name, tensor in policy.model.state_dict().items())


def test_seen_score_is_the_mean_over_decodings_of_the_seen_split_only():
    assert seen_score(point(0.25, 0.75, unseen=1.0)) == pytest.approx(0.5)
    assert seen_score({"heldout/unseen/greedy/success_rate": 1.0, "rollout/success_rate": 1.0}) is None


def test_keeper_ends_with_the_best_seen_point_and_ignores_the_unseen_split(tiny_policy, tmp_path):
    policy = copy.deepcopy(tiny_policy)
    keeper = BestSeenKeeper(tmp_path)
    assert keeper.observe(policy, 0, point(0.30, 0.30, unseen=0.9))
    start = weights(policy)
    shift(policy, 0.01)
    assert keeper.observe(policy, 10, point(0.40, 0.44, unseen=0.1))  # best on seen, worst on unseen
    best = weights(policy)
    shift(policy, 0.01)
    assert not keeper.observe(policy, 20, point(0.42, 0.42, unseen=0.9))  # a tie on seen keeps the earlier point
    shift(policy, 0.01)
    assert not keeper.observe(policy, 30, point(0.20, 0.20, unseen=1.0))
    chosen = keeper.restore(policy)
    assert (chosen.update, chosen.seen_score) == (10, pytest.approx(0.42))
    assert same(policy, best) and not same(policy, start)


def test_a_resumed_run_reads_its_best_point_back_from_disk(tiny_policy, tmp_path):
    policy = copy.deepcopy(tiny_policy)
    BestSeenKeeper(tmp_path).observe(policy, 20, point(0.5, 0.5))
    best = weights(policy)
    shift(policy, 0.05)
    resumed = BestSeenKeeper(tmp_path)  # a new process: nothing in memory
    assert resumed.best.update == 20
    assert not resumed.observe(policy, 30, point(0.4, 0.4))
    assert resumed.restore(policy).update == 20 and same(policy, best)
    assert not list(tmp_path.glob(".best_seen.partial-*"))


def test_the_start_is_kept_when_no_update_beats_it(tiny_policy):
    policy = copy.deepcopy(tiny_policy)
    keeper = BestSeenKeeper(None)  # no checkpoint directory: kept in memory
    keeper.observe(policy, 0, point(0.5, 0.5))
    start = weights(policy)
    shift(policy, 0.01)
    keeper.observe(policy, 10, point(0.1, 0.1))
    assert keeper.restore(policy).update == 0 and same(policy, start)


def test_best_seen_without_seen_points_is_refused_by_name():
    check_end_policy("best_seen", 10, ["seen", "unseen"])
    check_end_policy("last", 0, ["unseen"])
    with pytest.raises(ValueError, match="eval_every"):
        check_end_policy("best_seen", 0, ["seen"])
    with pytest.raises(ValueError, match="'seen' in training.heldout.splits"):
        check_end_policy("best_seen", 10, ["unseen"])
    with pytest.raises(ValueError, match="training.rl.end_policy must be one of"):
        RLConfig(end_policy="best")
    with pytest.raises(ValueError, match="no held-out point scored the seen split"):
        BestSeenKeeper(None).restore(None)


def test_run_rl_ends_with_the_best_seen_point_and_marks_it(warm_policy, twc_spec, twc_tasks, tmp_path):
    """A real run: two updates at a high learning rate, a point at the start and after each
    update; the run's policy is the chosen point's, the history marks its row."""
    from hindsight.config import AnalyzerConfig
    from hindsight.evaluation.heldout import HeldoutConfig, HeldoutPlay
    from hindsight.runs.rl_run import run_rl
    from hindsight.training.run_setup import RLSetup
    from hindsight.policy.generation import SamplingConfig
    from hindsight.rollout.engine import RolloutConfig

    rollout = RolloutConfig(sampling=SamplingConfig(temperature=1.0, max_length=768), progress=False)
    heldout = HeldoutConfig(play=HeldoutPlay(episodes_per_game=2, splits=["seen"], decodings={"greedy": {"temperature": 0.0}}))
    setup = RLSetup(specs=[twc_spec], rollout=rollout, heldout=heldout, pool=list(twc_tasks), analyzer=AnalyzerConfig())
    config = RLConfig(
        algorithm="grpo", updates=2, tasks_per_update=2, group_size=2, learning_rate=1e-2, mini_batch_size=16,
        eval_every=1, end_policy="best_seen",
    )
    logged: list[tuple[dict, int]] = []
    result = run_rl(warm_policy, config, setup, tmp_path, seed=0, evaluate_start=True, log_metrics=lambda m, s: logged.append((m, s)))
    history = result.history
    scores = history.set_index("update")["heldout/seen/greedy/success_rate"]
    chosen = int(history.loc[history["end/selected"] == 1.0, "update"].item())
    assert scores[chosen] == scores.max() and chosen == int(scores.idxmax())  # the first best
    assert (tmp_path / "best_seen" / "point.json").exists()
    assert logged[-1] == ({"end/selected_update": float(chosen), "end/selected_seen_score": pytest.approx(scores[chosen])}, 2)
    if chosen == 0:  # the start's weights
        assert same(result.policy, weights(warm_policy))
