"""Evaluation: play the Stage-1 and the RL checkpoints and the random-valid-action floor on
held-out tasks (seen / unseen), and on the dual-control domain the gold solver too
(``hindsight.evaluation.gold_floor``); success tables with 95% intervals and a plot, and pass^k with
bootstrap intervals (by task type, and by intent, persona and fault where the environment
names them) when every task is played several times."""

from hindsight.pipelines.evaluation.pipeline import create_pipeline

__all__ = ["create_pipeline"]
