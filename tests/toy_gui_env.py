"""A small environment that renders a screen (imported by the vision-policy tests): the text
observation never says where the target is, only the screenshot does.

Task ``seed``: a red square sits in one of the four quadrants of a 32 x 32 screen; clicking
its quadrant moves it to another (the seed decides both places); the second hit wins (reward
1). A wrong click changes nothing. The square's place inside its quadrant is jittered by the
seed, so screens of different tasks differ even for the same quadrant.
"""

from __future__ import annotations

import numpy as np

from hindsight.envs.base import EnvironmentSpec

from hindsight.envs.base import ToyEnvironment

ACTIONS = ("click top left", "click top right", "click bottom left", "click bottom right")
"""The valid actions, one per quadrant (row-major)."""
SCREEN = 32
SQUARE = 6
SPEC = EnvironmentSpec("toy_gui", "square", {}, max_steps=4)
TASK = "Your task is to click the red square twice."


class SquareScreen(ToyEnvironment):
    """The toy GUI game of the module docstring."""

    spec = SPEC

    def reset(self, seed, split="train"):
        rng = np.random.default_rng(int(seed))
        first = int(rng.integers(4))
        self.targets = [first, int((first + 1 + rng.integers(3)) % 4)]
        self.offsets = [tuple(int(v) for v in rng.integers(0, SCREEN // 2 - SQUARE + 1, size=2)) for _ in self.targets]
        self.hits = 0
        return "A red square is on the screen.", self._info(won=False, valid=True)

    def step(self, action):
        if self.hits < len(self.targets) and action == ACTIONS[self.targets[self.hits]]:
            self.hits += 1
            won = self.hits == len(self.targets)
            text = "Hit. The square is gone." if won else "Hit. The square moved."
            return text, float(won), won, False, self._info(won=won, valid=True)
        return "Missed.", 0.0, False, False, self._info(won=False, valid=action in ACTIONS)

    def screenshot(self):
        screen = np.full((SCREEN, SCREEN, 3), 200, dtype=np.uint8)
        if self.hits < len(self.targets):
            quadrant, (dy, dx) = self.targets[self.hits], self.offsets[self.hits]
            top, left = (quadrant // 2) * SCREEN // 2 + dy, (quadrant % 2) * SCREEN // 2 + dx
            screen[top : top + SQUARE, left : left + SQUARE] = (220, 20, 20)
        return screen

    def gold_actions(self):
        return [ACTIONS[target] for target in self.targets[self.hits :]]

    def _info(self, won: bool, valid: bool) -> dict:
        return {"task": TASK, "task_type": "square", "valid_actions": list(ACTIONS), "won": won, "action_valid": valid}


def texts() -> list[str]:
    """What a tokenizer for this game should know: the task, the observations, the actions."""
    return [TASK, "A red square is on the screen.", "Hit. The square moved.", "Hit. The square is gone.", "Missed.", *ACTIONS]
