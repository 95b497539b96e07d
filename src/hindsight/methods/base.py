"""The method interface, as method modules import it: ``Method`` (every hook defaults to
GRPO), ``MethodContext``, ``NoSettings`` and ``episode_return_scores``. They are declared
beside the core loop that calls them (``training.method``), so the engine depends on no
method."""

from hindsight.training.method import Method, MethodContext, NoSettings, episode_return_scores

__all__ = ["Method", "MethodContext", "NoSettings", "episode_return_scores"]
