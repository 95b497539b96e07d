"""Trajectory tables recorded from real
TextWorldExpress episodes (the JVM starts once per session): the
``recorded_tables`` fixture of the skills and Stage-1 tests (their conftest files import it)."""

from __future__ import annotations

import pandas as pd
import pytest

TWC_PARAMS = "numLocations=1,numItemsToPutAway=2,includeDoors=0"
COOKING_PARAMS = "numLocations=1,numIngredients=2,numDistractorItems=2,includeDoors=0"


def play_episode(env, game: str, params: str, seed: int, actions: list[str] | None, episode_id: str) -> list[dict]:
    """Play ``actions`` (the gold path when None) in a real TextWorldExpress game and return
    the trajectory-table rows, stopping at the win."""
    env.load(gameName=game, gameParams=params)
    observation, info = env.reset(seed=seed, gameFold="train", generateGoldPath=True)
    task = info["taskDescription"]
    if actions is None:
        actions = env.getGoldActionSequence()
    rows = []
    for step, action in enumerate(actions):
        valid_actions = list(info["validActions"])
        next_observation, _, done, next_info = env.step(action)
        won = bool(next_info["tasksuccess"])
        valid = action in valid_actions
        rows.append(
            {
                "episode_id": episode_id, "group_id": f"textworldexpress/{game}/train/{seed}",
                "env": "textworldexpress", "task_type": game, "task": task, "split": "train",
                "seed": seed, "step": step, "observation": observation, "anchor_observation": observation,
                "valid_actions": valid_actions, "action": action, "response": action,
                "reward": 10.0 * won - 0.1 * (not valid), "score": float(next_info["score"]),
                "done": bool(done or won), "won": won, "action_valid": valid,
                "source": "expert", "policy_version": -1,
            }
        )
        observation, info = next_observation, next_info
        if won:
            break
    return rows


@pytest.fixture(scope="session")
def recorded_tables() -> dict[str, pd.DataFrame]:
    """Real episodes: twc gold (success), cookingworld gold (success) and a twc failure with
    invalid actions and a "look around" loop."""
    from textworld_express import TextWorldExpressEnv

    env = TextWorldExpressEnv(envStepLimit=100)
    try:
        twc_gold = play_episode(env, "twc", TWC_PARAMS, 3, None, "twc-gold")
        cooking_gold = play_episode(env, "cookingworld", COOKING_PARAMS, 3, None, "cooking-gold")
        env.load(gameName="twc", gameParams=TWC_PARAMS)
        env.reset(seed=3, gameFold="train", generateGoldPath=True)
        first_take = env.getGoldActionSequence()[1]
        failing_actions = ["look around", first_take, "eat the moon", "take unicorn", "eat the moon",
                           "look around", "look around", "look around", "look around"]
        twc_failure = play_episode(env, "twc", TWC_PARAMS, 3, failing_actions, "twc-failure")
    finally:
        env.close()
    return {
        "twc_gold": pd.DataFrame(twc_gold),
        "cooking_gold": pd.DataFrame(cooking_gold),
        "twc_failure": pd.DataFrame(twc_failure),
    }
