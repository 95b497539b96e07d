"""``health/zero_variance_group_share`` of a rollout (``rollout.stats``), on a hand-made
played table: the share of groups whose episodes all got the same return (all won or all
lost alike; a group of one episode counts), which give a group-relative method no signal."""

from __future__ import annotations

import pandas as pd

from hindsight.rollout.stats import rollout_metrics, zero_variance_group_share


def _played() -> pd.DataFrame:
    """Four groups of two-step episodes: g0 all won, g1 mixed, g2 all lost, g3 one episode;
    g4's two episodes reach the same return by different steps."""
    episodes = {  # episode -> (group, rewards of its steps)
        "a": ("g0", [0.0, 1.0]), "b": ("g0", [0.0, 1.0]),
        "c": ("g1", [0.0, 1.0]), "d": ("g1", [0.0, 0.0]),
        "e": ("g2", [0.0, 0.0]), "f": ("g2", [0.0, 0.0]),
        "g": ("g3", [0.0, 1.0]),
        "h": ("g4", [1.0, 0.0]), "i": ("g4", [0.0, 1.0]),
    }
    rows = []
    for episode, (group, rewards) in episodes.items():
        for step, reward in enumerate(rewards):
            rows.append({"episode_id": episode, "group_id": group, "step": step, "reward": reward, "won": reward > 0,
                         "action_valid": True, "action": "go", "valid_actions": ["go"]})
    return pd.DataFrame(rows)


def test_the_share_of_groups_whose_returns_are_all_equal():
    assert zero_variance_group_share(_played()) == 4 / 5  # g0, g2, g3, g4; only g1 differs


def test_the_rollout_metrics_carry_it_and_the_episode_count():
    metrics = rollout_metrics(_played())
    assert metrics["health/zero_variance_group_share"] == 4 / 5
    assert metrics["rollout/env_episodes"] == 9.0
    assert rollout_metrics(_played(), simulated=True)["rollout/env_episodes"] == 0.0  # WM-R1: not the environment's


def test_a_table_without_groups_or_episodes_gives_none():
    assert zero_variance_group_share(_played().drop(columns="group_id")) is None
    assert zero_variance_group_share(_played().iloc[0:0]) is None
    assert "health/zero_variance_group_share" not in rollout_metrics(_played().drop(columns="group_id"))
