"""The bootstrap interval of a weighted mean over units (the premise's intervals)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hindsight.algorithms import bootstrap_weighted_mean_interval, weighted_mean

pytestmark = pytest.mark.unit


def test_the_weighted_mean_weights_each_unit_and_skips_empty_ones():
    assert weighted_mean([1.0, -2.0, float("nan")], [3, 1, 5]) == pytest.approx(0.25)
    assert weighted_mean([4.0], [0]) != weighted_mean([4.0], [0])  # NaN: no weight left


def test_identical_units_give_a_point_and_one_unit_its_own_mean():
    assert bootstrap_weighted_mean_interval([0.3] * 10, [2] * 10) == pytest.approx((0.3, 0.3))
    assert bootstrap_weighted_mean_interval([-0.7], [5]) == pytest.approx((-0.7, -0.7))
    low, high = bootstrap_weighted_mean_interval([], [])
    assert math.isnan(low) and math.isnan(high)


def test_the_interval_covers_the_mean_narrows_with_units_and_is_seeded():
    rng = np.random.default_rng(1)
    few = rng.normal(0.2, 1.0, 20)
    many = rng.normal(0.2, 1.0, 400)
    low, high = bootstrap_weighted_mean_interval(few, [1] * 20, seed=3)
    assert low < weighted_mean(few, [1] * 20) < high
    many_low, many_high = bootstrap_weighted_mean_interval(many, [1] * 400, seed=3)
    assert many_high - many_low < (high - low) / 2  # ~ 1/sqrt(n): 20x the units, ~4.5x narrower
    assert many_low < 0.2 < many_high
    assert bootstrap_weighted_mean_interval(few, [1] * 20, seed=3) == (low, high)


def test_a_heavy_unit_pulls_the_interval_towards_it():
    means, light, heavy = [0.0, 1.0] * 10, [1, 1] * 10, [1, 9] * 10
    assert bootstrap_weighted_mean_interval(means, heavy)[0] > bootstrap_weighted_mean_interval(means, light)[0]


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="level"):
        bootstrap_weighted_mean_interval([1.0], [1], level=1.0)
    with pytest.raises(ValueError, match="differ in length"):
        bootstrap_weighted_mean_interval([1.0, 2.0], [1])
