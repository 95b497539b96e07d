"""One micro-batch plan for both layouts (``data_parallel.micro_batch_plan``): step samples
packed within the token budget in the given order, or, in the multi-turn layout, whole
episode chains packed by the length of their last member; under data parallelism each
rank's stripe, with as many micro-batches on every rank."""

from __future__ import annotations

import pytest

from hindsight.training.data_parallel import micro_batch_plan

pytestmark = pytest.mark.unit

LENGTHS = [3, 5, 2, 8, 4, 6, 7]


class TwoRanks:
    """Rank ``rank`` of two, as ``DataParallel`` stripes and balances (no process group)."""

    def __init__(self, rank: int, most: int) -> None:
        self.rank, self.most = rank, most

    def stripe(self, items):
        return list(items)[self.rank :: 2]

    def balanced(self, micro_batches, fallback):
        filler = list(micro_batches[-1]) if micro_batches else list(fallback)[:1]
        return [(list(m), 1.0) for m in micro_batches] + [(filler, 0.0)] * (self.most - len(micro_batches))


def test_step_samples_are_packed_in_the_given_order_within_the_budget():
    index = sorted(range(len(LENGTHS)), key=LENGTHS.__getitem__)  # 2, 0, 4, 1, 5, 6, 3
    assert micro_batch_plan(None, index, LENGTHS, 12) == [([2, 0, 4], 1.0), ([1, 5], 1.0), ([6], 1.0), ([3], 1.0)]
    assert micro_batch_plan(None, index, LENGTHS, None) == [(index, 1.0)]


def test_chains_stay_whole_and_are_packed_by_their_last_members_length():
    chains = [[3], [0, 1, 5], [2, 4]]  # last members' lengths: 8, 6, 4
    plan = micro_batch_plan(None, [0, 1, 2, 3, 4, 5], LENGTHS, 12, chains=chains)
    assert plan == [([2, 4, 0, 1, 5], 1.0), ([3], 1.0)]  # rows are chains: 2 x 6 fits 12, 3 x 8 would not
    assert micro_batch_plan(None, [0, 1, 2, 3, 4, 5], LENGTHS, 100, chains=chains) == [([2, 4, 0, 1, 5, 3], 1.0)]


def test_under_data_parallelism_each_rank_takes_its_stripe_of_whole_units():
    chains = [[3], [0, 1, 5], [2, 4]]  # sorted: [2, 4], [0, 1, 5], [3]
    first = micro_batch_plan(TwoRanks(0, most=2), [0, 1, 2, 3, 4, 5], LENGTHS, 12, chains=chains)
    second = micro_batch_plan(TwoRanks(1, most=2), [0, 1, 2, 3, 4, 5], LENGTHS, 12, chains=chains)
    assert first == [([2, 4], 1.0), ([3], 1.0)] and second == [([0, 1, 5], 1.0), ([0, 1, 5], 0.0)]
    steps = micro_batch_plan(TwoRanks(1, most=1), [2, 0, 4], LENGTHS, 12)
    assert steps == [([0], 1.0)]
