"""``parameters_empo.yml``: EMPO, expert trajectories as the environment (``kedro run
--pipeline empo``); the settings live beside the run they configure (``methods.empo_run``)."""

from hindsight.methods.empo_run import EmpoConfig

__all__ = ["EmpoConfig"]
