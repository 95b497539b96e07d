"""WM-R1's world model (ALGORITHMS.md section 4): the text format of its examples and its
solved marker (``transitions``) and its held-out scores (``quality``). The environment that
steps with it is ``hindsight.envs.world_model``; the RL side is ``hindsight.training.wmr1``."""

from hindsight.world_model.quality import heldout_quality
from hindsight.world_model.transitions import SOLVED_MARKER, is_solved, transition_examples, transition_prompt

__all__ = ["SOLVED_MARKER", "heldout_quality", "is_solved", "transition_examples", "transition_prompt"]
