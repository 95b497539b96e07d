"""GRPO: group-relative advantages, no value model.

Each step sample's score is its episode's return; the advantage is that score minus the
mean of its group (the ``group_size`` episodes of one task), divided by the group's std
(``training.rl.std_normalize``). The loss is the core loop's PPO clip and KL. Every
default of ``training.method.Method`` is GRPO's, so this module only names it.
"""

from __future__ import annotations

from hindsight.training.method import Method


class GRPO(Method):
    """Group-relative policy optimisation over episode returns."""

    name = "grpo"
