"""EMPO: the policy trained on replayed expert trajectories with no live environment
(``kedro run --pipeline empo``), then scored by semi-online success on held-out ones."""

from hindsight.pipelines.empo.pipeline import create_pipeline

__all__ = ["create_pipeline"]
