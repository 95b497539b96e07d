"""Stage 1 beyond the analyzer SFT set: the skill-use examples that teach the policy to read
a skill (``counterfactual``: swapped, reordered and unrelated skills), the teacher fit on the
policy's own won episodes (``teacher_fit``), and the measurement of SEED's premise on the
Stage-1 checkpoint (``premise``: does the policy's own skill make it a better teacher?).
The stage's nodes: ``hindsight.pipelines.stage1``."""
