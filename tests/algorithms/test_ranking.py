"""AUROC (pooled and within strata), its cluster-bootstrap intervals, SEED's gate push and the
intervals' coverage by simulation."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from hindsight.algorithms import (
    INTERVAL_METHODS,
    auroc,
    auroc_interval_coverage,
    cluster_bootstrap_auroc,
    gate_push,
    paired_cluster_bootstrap_auroc_difference,
)
from hindsight.algorithms.ranking import _ClusterTallies, _codes, _student_quantile

pytestmark = pytest.mark.unit


def brute_force_auroc(scores, labels, strata=None) -> float:
    """Every positive-negative pair (within one stratum when given), ties counting 1/2."""
    wins = pairs = 0.0
    for i, (score_i, label_i) in enumerate(zip(scores, labels)):
        for j, (score_j, label_j) in enumerate(zip(scores, labels)):
            if label_i and not label_j and (strata is None or strata[i] == strata[j]):
                pairs += 1
                wins += (score_i > score_j) + 0.5 * (score_i == score_j)
    return wins / pairs if pairs else float("nan")


def clustered_data(seed: int, clusters: int = 20, items: int = 10, separation: float = 1.0, cluster_sd: float = 1.0):
    """Scores ``u_c + e + separation * label`` with strata (cluster, item // 4)."""
    rng = np.random.default_rng(seed)
    cluster = np.repeat(np.arange(clusters), items)
    labels = rng.random(len(cluster)) < 0.3
    scores = rng.normal(0.0, cluster_sd, clusters)[cluster] + rng.normal(size=len(cluster)) + separation * labels
    strata = [(int(c), position // 4) for c, position in zip(cluster, np.tile(np.arange(items), clusters))]
    return scores, labels, cluster, strata


@pytest.mark.parametrize("seed", range(4))
def test_auroc_equals_the_brute_force_pair_count_with_ties_half(seed):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 6, 150).astype(float)  # many ties
    labels = rng.random(150) < 0.4
    strata = [(int(a), int(b)) for a, b in zip(rng.integers(0, 8, 150), rng.integers(0, 3, 150))]
    assert auroc(scores, labels) == pytest.approx(brute_force_auroc(scores, labels), abs=1e-12)
    assert auroc(scores, labels, strata) == pytest.approx(brute_force_auroc(scores, labels, strata), abs=1e-12)


def test_perfect_reversed_tied_and_pairless_cases():
    labels = [1, 1, 0, 0, 0]
    assert auroc([5, 4, 3, 2, 1], labels) == 1.0
    assert auroc([1, 2, 3, 4, 5], labels) == 0.0
    assert auroc([7] * 5, labels) == 0.5
    assert math.isnan(auroc([1, 2], [1, 1]))
    assert math.isnan(auroc([1, 2, 3, 4], [1, 1, 0, 0], strata=["a", "a", "b", "b"]))  # no mixed stratum


def test_strata_leave_out_cross_stratum_pairs():
    # stratum a: positive 1 over negative 0; stratum b: positive 3 over negative 2. Pooled, the
    # positive 1 also meets the negative 2 and loses: 3 wins of 4 pairs.
    scores, labels, strata = [1, 0, 3, 2], [1, 0, 1, 0], ["a", "a", "b", "b"]
    assert auroc(scores, labels) == 0.75
    assert auroc(scores, labels, strata) == 1.0


def test_the_bootstrap_is_seeded_and_covers_its_estimate():
    scores, labels, cluster, strata = clustered_data(0)
    for within in (None, strata):
        first = cluster_bootstrap_auroc(scores, labels, cluster, within, resamples=500, seed=7)
        assert first == cluster_bootstrap_auroc(scores, labels, cluster, within, resamples=500, seed=7)
        assert first.low != cluster_bootstrap_auroc(scores, labels, cluster, within, resamples=500, seed=8).low
        assert first.estimate == pytest.approx(auroc(scores, labels, within))
        assert first.low < first.estimate < first.high and first.method == "bca"
        assert (first.clusters, first.positives + first.negatives, first.dropped) == (20, 200, 0)
    assert first.pairs == sum(
        sum(labels[i] and not labels[j] and strata[i] == strata[j] for j in range(200)) for i in range(200)
    )


@pytest.mark.parametrize("seed", range(3))
def test_a_resample_is_the_auroc_of_the_copied_clusters_with_strata_kept_apart(seed):
    scores, labels, cluster, strata = clustered_data(seed, clusters=6, items=5)
    multiplicity = np.random.default_rng(seed).multinomial(6, [1 / 6] * 6)
    copies = [(copy, int(c)) for c in range(6) for copy in range(multiplicity[c])]
    rows = [np.flatnonzero(cluster == c) for _, c in copies]
    copied = np.concatenate(rows)
    fresh_strata = [(copy, *strata[i]) for (copy, _), row in zip(copies, rows) for i in row]
    for within, expected in ((None, auroc(scores[copied], labels[copied])),
                             (strata, auroc(scores[copied], labels[copied], fresh_strata))):
        codes = None if within is None else _codes(within, len(scores), "strata")
        wins, pairs = _ClusterTallies(scores, labels, cluster, codes).resampled(multiplicity[None, :].astype(float))
        assert wins[0] / pairs[0] == pytest.approx(expected, abs=1e-12)


def test_a_cluster_drawn_twice_pairs_with_the_other_cluster_not_with_its_own_copy():
    # cluster 0: one stratum, positive above negative (1 of 1); cluster 1: positive below (0 of 1).
    # Drawn (2, 1): copies kept apart give 2 wins of 3 pairs; merged strata would give 4 of 5.
    scores, labels, cluster, strata = [1.0, 0.0, 0.0, 1.0], [1, 0, 1, 0], [0, 0, 1, 1], [0, 0, 1, 1]
    tallies = _ClusterTallies(np.array(scores), np.array(labels, bool), np.array(cluster), np.array(strata))
    wins, pairs = tallies.resampled(np.array([[2.0, 1.0]]))
    assert (wins[0], pairs[0]) == (2.0, 3.0)


def test_the_paired_difference_of_a_source_with_itself_is_a_point_at_zero():
    scores, labels, cluster, strata = clustered_data(1)
    for method in INTERVAL_METHODS:
        same = paired_cluster_bootstrap_auroc_difference(scores, scores, labels, cluster, strata, resamples=300, method=method)
        assert (same.estimate, same.low, same.high) == (0.0, 0.0, 0.0)
    shifted = paired_cluster_bootstrap_auroc_difference(scores, -scores, labels, cluster, resamples=300)
    assert shifted.estimate == pytest.approx(2 * auroc(scores, labels) - 1) and shifted.low > 0


def test_bca_and_percentile_agree_on_large_symmetric_data_and_expansion_widens():
    scores, labels, cluster, _ = clustered_data(2, clusters=300, items=10, separation=0.0)
    percentile = cluster_bootstrap_auroc(scores, labels, cluster, resamples=2000, method="percentile")
    bca = cluster_bootstrap_auroc(scores, labels, cluster, resamples=2000, method="bca")
    assert bca.low == pytest.approx(percentile.low, abs=0.01) and bca.high == pytest.approx(percentile.high, abs=0.01)
    few = clustered_data(3, clusters=11)
    plain = cluster_bootstrap_auroc(*few[:3], resamples=500, method="percentile")
    expanded = cluster_bootstrap_auroc(*few[:3], resamples=500, method="expanded_percentile")
    assert expanded.low < plain.low and expanded.high > plain.high


def test_clusters_without_pairs_are_dropped_and_counted():
    # one positive cluster among 20: a resample misses it with chance (19/20)^20 ~ 0.36
    cluster = np.repeat(np.arange(20), 3)
    labels = cluster == 0
    result = cluster_bootstrap_auroc(np.arange(60.0), labels, cluster, resamples=2000, method="percentile")
    assert 0.3 < result.dropped / 2000 < 0.42 and math.isfinite(result.low)


def test_gate_push_by_hand():
    # sigmoid(0) = 1/2, sigmoid(ln 3) = 3/4, sigmoid(-ln 3) = 1/4: 2 * ((1/2 + 3/4) / 2 - 1/4) = 3/4
    assert gate_push([0.0, math.log(3)], [-math.log(3)], gate_beta=1.0, coefficient=2.0) == pytest.approx(0.75)
    assert gate_push([1.0], [1.0], gate_beta=5.0, coefficient=3.0) == 0.0
    assert math.isnan(gate_push([], [0.3], gate_beta=1.0, coefficient=1.0))


def test_the_closed_form_targets_match_a_large_sample():
    scores, labels, cluster, strata = clustered_data(4, clusters=4000, items=10, separation=1.0, cluster_sd=1.0)
    assert auroc(scores, labels) == pytest.approx(NormalDist().cdf(1.0 / 2.0), abs=0.01)  # sqrt(2 + 2 * 1)
    assert auroc(scores, labels, strata) == pytest.approx(NormalDist().cdf(1.0 / math.sqrt(2.0)), abs=0.01)


def test_student_quantiles_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 3, 5, 10, 19, 59):
        assert _student_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), rel=2e-3)


def test_coverage_is_a_share_and_sane_with_60_clusters():
    small = auroc_interval_coverage(5, 4, simulations=20, resamples=100, method="percentile", seed=1)
    assert 0.0 <= small.coverage <= 1.0 and small.simulations == 20
    within = auroc_interval_coverage(11, stratum_size=4, simulations=50, resamples=100, seed=2)
    assert 0.0 <= within.coverage <= 1.0 and within.target == pytest.approx(NormalDist().cdf(1.0 / math.sqrt(2.0)))
    # measured 0.965 with 400 simulations x 500 resamples; 0.85 is far below it at 200 simulations
    sixty = auroc_interval_coverage(60, simulations=200, resamples=300, method="bca", seed=3)
    assert sixty.coverage >= 0.85 and sixty.undefined == 0


def test_invalid_inputs_are_refused():
    with pytest.raises(ValueError, match="differ in length"):
        auroc([1.0, 2.0], [1])
    with pytest.raises(ValueError, match="finite"):
        auroc([1.0, float("nan")], [1, 0])
    with pytest.raises(ValueError, match="0/1"):
        auroc([1.0, 2.0], [2, 0])
    with pytest.raises(ValueError, match="method"):
        cluster_bootstrap_auroc([1.0, 2.0], [1, 0], [0, 1], method="normal")
    with pytest.raises(ValueError, match="spans several clusters"):
        cluster_bootstrap_auroc([1.0, 2.0], [1, 0], [0, 1], strata=["s", "s"])
    with pytest.raises(ValueError, match="level"):
        cluster_bootstrap_auroc([1.0, 2.0], [1, 0], [0, 1], level=1.0)


@pytest.mark.parametrize("method", ["expanded_percentile", "expanded_bca"])
def test_two_or_three_clusters_give_the_extremes_at_expanded_levels_not_an_error(method):
    """With 2 clusters the expanded tail underflows to 0; the bounds are then the resamples' extremes."""
    scores = [0.9, 0.1, 0.8, 0.3, 0.7, 0.2]
    labels = [1, 0, 1, 0, 0, 1]
    for clusters in (["a", "a", "a", "b", "b", "b"], ["a", "a", "b", "b", "c", "c"]):
        found = cluster_bootstrap_auroc(scores, labels, clusters, resamples=200, seed=1, method=method)
        assert found.low <= found.estimate <= found.high
