"""How SEED scores each step sample before the group statistics (``methods.seed.step_score``).

- ``release`` (the official SEED release): a step sample's score is its episode's task
  reward (the rewards of its valid steps) plus its own invalid-action penalty, if it was
  invalid. The penalty of an invalid step lands on that step's sample only.
- ``episode_return``: every step sample carries its episode's whole return, every
  invalid-action penalty of the episode included (GRPO's score, ``episode_return_scores``).

The two agree on every episode without an invalid action, so under constrained decoding
(the default rollout: only listed actions are played) they give the same scores. An invalid
step's reward is its penalty alone (``envs.reward``: an invalid action leaves the state
unchanged and cannot win), which is what lets the release score be read off the table
without knowing the penalty.
"""

from __future__ import annotations

import pandas as pd
import torch

STEP_SCORES = ("release", "episode_return")


def release_step_scores(table: pd.DataFrame) -> torch.Tensor:
    """Each step sample's release score [N] (rows of ``table``, in order): the sum of the
    rewards of its episode's valid steps, plus its own reward when its action was invalid.

    Args:
        table: Step rows with ``episode_id``, ``reward`` and ``action_valid``.

    Returns:
        Float32 [N].
    """
    valid = table["action_valid"].astype(bool).to_numpy()
    reward = table["reward"].to_numpy(dtype="float64")
    task_reward = pd.Series(reward * valid, index=table.index).groupby(table["episode_id"].to_numpy()).transform("sum")
    own_penalty = reward * ~valid
    return torch.tensor(task_reward.to_numpy() + own_penalty, dtype=torch.float32)
