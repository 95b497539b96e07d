"""Ray, imported only where a run asks for it: the experiment grid's executor
(``experiments.ray_grid``) and the asynchronous rollouts' actors (``training.ray_rollouts``).
Nothing else in the project imports Ray, so a run without it does not pay its import time."""

from __future__ import annotations

import os


def import_ray():
    """``ray``, with its usage statistics off (nothing leaves the machine)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    return ray
