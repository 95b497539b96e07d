"""The Gymnasium ids this package registers (``register_builtin_gym_envs``, run when
``hindsight.envs`` is imported): one per environment family and game, built by the factories of
``gym_wrapper`` (MiniWoB++'s by ``miniwob.gym_env``, named by its entry point so that
registering imports neither Selenium nor the browser code). docs/gymnasium.md lists them."""

from __future__ import annotations

from typing import Any, Callable

import gymnasium

from hindsight.envs.gym_wrapper import make_expert_replay_gym, make_family_gym, make_world_model_gym
from hindsight.envs.miniwob.tasks import REAL_TIME_TASKS, task_names

TWX_GAMES = ("twc", "cookingworld", "coin", "mapreader", "arithmetic", "sorting", "simonsays", "peckingorder")
"""TextWorldExpress's games (``textworldexpress.GAME_PARAMETERS``; kept here so that
registering does not import the simulator)."""
TWX_DEFAULT_PARAMS: dict[str, dict[str, int]] = {
    "twc": {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0},
    "cookingworld": {"numLocations": 1, "numIngredients": 1, "numDistractorItems": 0, "includeDoors": 0, "limitInventorySize": 0},
}
"""The project's default games' parameters; the other games start from the simulator's own."""

MINIWOB_GYM_TASKS = (
    "click-test", "click-button", "click-link", "enter-text", "login-user", "click-checkboxes", "click-dialog",
    "focus-text", "enter-password", "click-option", "click-button-sequence", "focus-text-2",
)
"""The MiniWoB++ tasks with a gold solver (``hindsight.envs.miniwob.solvers.SOLVERS``; kept
here so that registering starts no browser). Every task the ``miniwob`` package ships has an
id, ``hindsight/miniwob-<task>-v0`` (``miniwob_gym_tasks``): the playable ones build, the
others (``hindsight.envs.miniwob.tasks.MISSING_ACTIONS``) refuse, naming the action they
need. ``hindsight/miniwob-v0`` plays any playable task (``game=``, default click-test)."""


MINIWOB_ENTRY_POINT = "hindsight.envs.miniwob.gym_env:make_miniwob_gym"
"""The MiniWoB ids' factory, named for Gymnasium to import when an id is made: registering
imports neither Selenium nor the browser code (and this module does not import the module
that builds on it)."""


def miniwob_gym_tasks() -> list[str]:
    """The tasks with an id: the solved ones, then every other task the package ships."""
    return list(dict.fromkeys([*MINIWOB_GYM_TASKS, *task_names()]))


def builtin_gym_ids() -> dict[str, tuple[Callable[..., gymnasium.Env] | str, dict[str, Any]]]:
    """Id -> (factory, or its ``module:name`` entry point, default kwargs) of every environment
    this package registers."""
    ids: dict[str, tuple[Callable[..., gymnasium.Env] | str, dict[str, Any]]] = {
        f"hindsight/twx-{game}-v0": (
            make_family_gym, {"env": "textworldexpress", "game": game, "params": TWX_DEFAULT_PARAMS.get(game, {})}
        )
        for game in TWX_GAMES
    }
    ids["hindsight/scienceworld-v0"] = (make_family_gym, {"env": "scienceworld", "game": "find-animal", "max_steps": 100})
    ids["hindsight/textworld-v0"] = (
        make_family_gym, {"env": "textworld", "game": "custom", "params": {"world_size": 1, "nb_objects": 3, "quest_length": 2}}
    )
    ids["hindsight/alfworld-v0"] = (make_family_gym, {"env": "alfworld", "game": "pick_and_place_simple", "max_steps": 50})
    ids["hindsight/dual-control-telecom-v0"] = (make_family_gym, {"env": "dual_control", "game": "telecom", "max_steps": 20})
    ids["hindsight/miniwob-v0"] = (MINIWOB_ENTRY_POINT, {"game": "click-test", "max_steps": 10})
    for task in miniwob_gym_tasks():
        ids[f"hindsight/miniwob-{task}-v0"] = (MINIWOB_ENTRY_POINT, {"game": task, "max_steps": 10})
    ids["hindsight/expert-replay-v0"] = (make_expert_replay_gym, {})
    ids["hindsight/world-model-v0"] = (make_world_model_gym, {})
    return ids


def register_gym_env(
    env_id: str, factory: Callable[..., gymnasium.Env] | str, *, nondeterministic: bool = False, **default_kwargs: Any
) -> None:
    """Register ``factory`` (keyword arguments -> ``gymnasium.Env``, or its ``module:name``) under ``env_id``, so that
    ``gymnasium.make(env_id, **kwargs)`` builds it with ``default_kwargs`` updated by
    ``kwargs``; ``nondeterministic``: the same seed and actions need not give the same steps
    (Gymnasium's spec flag; ``check_env`` then skips its step-determinism check). Registering
    an id again replaces it (a module imported twice)."""
    gymnasium.registry.pop(env_id, None)
    gymnasium.register(id=env_id, entry_point=factory, nondeterministic=nondeterministic, kwargs=dict(default_kwargs))


def register_builtin_gym_envs() -> list[str]:
    """Register every id of ``builtin_gym_ids``; return them."""
    ids = builtin_gym_ids()
    real_time = {f"hindsight/miniwob-{task}-v0" for task in REAL_TIME_TASKS}
    for env_id, (factory, defaults) in ids.items():
        register_gym_env(env_id, factory, nondeterministic=env_id in real_time, **defaults)
    return list(ids)
