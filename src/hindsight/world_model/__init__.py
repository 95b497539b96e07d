"""WM-R1's world model (docs/fidelity.md, WM-R1): the text format of its examples and its
solved marker (``transitions``), the real episodes it learns from by source (``sources``), its
held-out scores (``quality``), its judgement calibrated on the policy's own held-out episodes
(``calibration``) and the environment that steps with it (``environment``:
``WorldModelSimulator``); the RL side is ``hindsight.methods.wmr1``."""

from hindsight.world_model.quality import heldout_quality
from hindsight.world_model.transitions import SOLVED_MARKER, is_solved, transition_examples, transition_prompt

__all__ = ["SOLVED_MARKER", "heldout_quality", "is_solved", "transition_examples", "transition_prompt"]
