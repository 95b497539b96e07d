"""SEED's step score (``methods.seed.step_score``) on a hand-made group with one invalid step.

One task, two episodes. e1: a valid step (0), an invalid one (-0.1), the winning step (10);
e2: two valid steps without a win. The release puts the -0.1 on e1's invalid step only:
scores [10, 9.9, 10, 0, 0]; the episode return gives every e1 step 9.9. GRPO's statistics run
over the five step samples (mean 5.98, unbiased std 5.45912)."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from hindsight.methods import build_method
from hindsight.training.batch import RolloutBatch
from hindsight.training.rl_config import RLConfig

pytestmark = pytest.mark.unit

TABLE = pd.DataFrame(
    {
        "episode_id": ["e1", "e1", "e1", "e2", "e2"],
        "group_id": ["g"] * 5,
        "step": [0, 1, 2, 0, 1],
        "reward": [0.0, -0.1, 10.0, 0.0, 0.0],
        "won": [False, False, True, False, False],
        "action_valid": [True, False, True, True, True],
    }
)


def seed(**settings) -> tuple:
    rl = RLConfig(algorithm="seed", methods={"seed": settings})
    return build_method(rl), rl


def batch() -> RolloutBatch:
    return RolloutBatch(table=TABLE, samples=[], played=TABLE)


def test_the_release_score_puts_the_penalty_on_the_invalid_step_only():
    method, rl = seed()
    assert method.settings.step_score == "release"  # the default
    scores = method.episode_scores(batch(), rl, max_steps=20)
    torch.testing.assert_close(scores, torch.tensor([10.0, 9.9, 10.0, 0.0, 0.0]))
    advantages = method.advantages(batch(), rl, max_steps=20)
    torch.testing.assert_close(advantages, torch.tensor([0.7364, 0.7181, 0.7364, -1.0954, -1.0954]), rtol=0, atol=1e-4)


def test_the_episode_return_gives_every_step_the_whole_return():
    method, rl = seed(step_score="episode_return")
    scores = method.episode_scores(batch(), rl, max_steps=20)
    torch.testing.assert_close(scores, torch.tensor([9.9, 9.9, 9.9, 0.0, 0.0]))


def test_the_two_agree_without_invalid_actions():
    valid = TABLE.assign(action_valid=True, reward=[0.0, 0.0, 10.0, 0.0, 0.0])
    release, rl = seed()
    whole, _ = seed(step_score="episode_return")
    same = RolloutBatch(table=valid, samples=[], played=valid)
    torch.testing.assert_close(release.episode_scores(same, rl, 20), whole.episode_scores(same, rl, 20))


def test_a_step_level_score_refuses_stepo_balance_and_a_wrong_name():
    method, _ = seed()
    with pytest.raises(ValueError, match="step_score"):
        method.check(RLConfig(algorithm="seed", schedulers={"stepo": {"step_weights": True}}), parallel=False)
    seed(step_score="episode_return")[0].check(RLConfig(algorithm="seed", schedulers={"stepo": {"step_weights": True}}), parallel=False)
    with pytest.raises(Exception, match="step_score"):
        seed(step_score="per_step")
