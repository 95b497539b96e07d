"""tau-bench's pass^k estimator C(c, k) / C(n, k): known answers, its edge cases, and that it
is unbiased (the mean over every k-subset of the trials of "all succeeded")."""

from __future__ import annotations

import itertools

import pytest

from hindsight.algorithms import mean_pass_hat_k, pass_hat_curve, pass_hat_k

pytestmark = pytest.mark.unit


def test_known_answer_four_trials_two_successes():
    assert pass_hat_k(2, 4, 1) == pytest.approx(0.5)
    assert pass_hat_k(2, 4, 2) == pytest.approx(1 / 6)
    assert pass_hat_k(2, 4, 3) == 0.0
    assert pass_hat_curve(2, 4) == pytest.approx([0.5, 1 / 6, 0.0, 0.0])


@pytest.mark.parametrize(("successes", "trials"), [(0, 3), (3, 3), (1, 5), (4, 5), (7, 9)])
def test_it_is_the_share_of_k_subsets_that_all_succeeded(successes, trials):
    outcomes = [True] * successes + [False] * (trials - successes)
    for k in range(1, trials + 1):
        subsets = list(itertools.combinations(outcomes, k))
        assert pass_hat_k(successes, trials, k) == pytest.approx(sum(all(s) for s in subsets) / len(subsets))


def test_always_and_never_solved_tasks_and_pass_1_is_the_success_rate():
    assert pass_hat_curve(4, 4) == [1.0] * 4
    assert pass_hat_curve(0, 4) == [0.0] * 4
    assert pass_hat_k(3, 7, 1) == pytest.approx(3 / 7)


def test_the_benchmark_mean_is_over_every_task_and_refuses_unequal_trials():
    counts = [(2, 4), (4, 4), (1, 4)]
    assert mean_pass_hat_k(counts, 1) == pytest.approx((0.5 + 1.0 + 0.25) / 3)
    assert mean_pass_hat_k(counts, 2) == pytest.approx((1 / 6 + 1.0 + 0.0) / 3)
    with pytest.raises(ValueError, match="same number of trials for every task, got trial counts \\[1, 4\\]"):
        mean_pass_hat_k([(2, 4), (1, 1)], 1)  # tau2-bench refuses a task set that shrinks with k
    with pytest.raises(ValueError, match="1 <= k <= trials"):
        mean_pass_hat_k(counts, 5)
    with pytest.raises(ValueError, match="at least one task"):
        mean_pass_hat_k([], 1)


@pytest.mark.parametrize(("successes", "trials", "k"), [(1, 4, 0), (1, 4, 5), (5, 4, 1), (-1, 4, 1), (0, 0, 1)])
def test_out_of_range_arguments_are_refused(successes, trials, k):
    with pytest.raises(ValueError):
        pass_hat_k(successes, trials, k)
