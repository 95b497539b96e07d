"""Where the grid's methods start, and the world model WM-R1 cells train inside.

The experiments pipeline trains the stages that the default methods need (ingestion ->
behaviour cloning -> skills -> Stage 1) and starts them from ``base`` or ``stage1``. Two
opt-in methods need the model of a stage it does not run:

    grpo_state2state  the State2State checkpoint  ``state2state_policy``  kedro run --pipeline state2state
    wmr1              WM-R1's world model         ``world_model``         kedro run --pipeline world_model

Those stages are not part of the experiments pipeline. A Kedro pipeline is the same whatever
the preset lists, so composing them in would train a world model and a State2State checkpoint
in every grid run, minutes on the test settings and far more on the base ones, for presets
(the default ones) that use neither. The grid reads their newest versions from the catalog
instead, as the ``wmr1`` and ``training_from_state2state`` pipelines do, through the catalog
entries ``state2state_policy@optional`` and ``world_model@optional`` (the same files; they
load None when the stage never ran). ``catalog_models_for`` runs at the start of the grid run,
before any training: a listed method whose model is missing stops the run with the command
that makes it; a model no listed method needs is not passed on (and is not part of any cell's
key).

Those checkpoints are whatever the catalog held when the grid ran: the State2State stage
trained from the ``base_policy`` of its own run, the world model learnt from the
``trajectories`` and ``skill_rollouts`` of its own. The report's data versions name each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from hindsight.experiments.methods import METHODS


@dataclass(frozen=True)
class CatalogModel:
    """A model the grid reads from the catalog when a listed method needs it."""

    dataset: str
    """Its catalog name."""
    what: str
    """What it is, for messages."""
    command: str
    """The command that makes it."""
    reads: str
    """What that command reads, for messages."""


CATALOG_MODELS = {
    "state2state": CatalogModel(
        "state2state_policy", "the State2State checkpoint", "kedro run --pipeline state2state", "the catalog's base_policy"
    ),
    "world_model": CatalogModel(
        "world_model", "WM-R1's world model", "kedro run --pipeline world_model", "the catalog's trajectories and skill_rollouts"
    ),
}
"""By key: ``state2state`` is a ``GridArm.start_from``, ``world_model`` what ``wmr1`` trains in."""


class MissingGridInput(ValueError):
    """A listed method needs a model the catalog does not hold."""


def needed_catalog_models(methods: Sequence[str]) -> dict[str, list[str]]:
    """``CATALOG_MODELS`` key -> the listed methods that need it (keys no method needs left out)."""
    needs: dict[str, list[str]] = {}
    for name in methods:
        method = METHODS[name]
        if method.start_from in CATALOG_MODELS:
            needs.setdefault(method.start_from, []).append(name)
        if method.rl.get("algorithm") == "wmr1":
            needs.setdefault("world_model", []).append(name)
    return needs


def catalog_models_for(methods: Sequence[str], found: dict[str, Any], where: str) -> dict[str, Any]:
    """The catalog's models that ``methods`` need, the others dropped.

    Args:
        methods: The preset's methods (known names).
        found: ``CATALOG_MODELS`` key -> the loaded model, None when the catalog has none.
        where: Where the methods are listed, for the message.

    Raises:
        MissingGridInput: A needed model is missing; the message names the method, the
            dataset and the command that makes it.
    """
    needs = needed_catalog_models(methods)
    missing = [key for key in needs if found.get(key) is None]
    if missing:
        lines = [
            f"- {', '.join(needs[key])} needs {CATALOG_MODELS[key].what} (catalog dataset "
            f"`{CATALOG_MODELS[key].dataset}`, none written yet): run `{CATALOG_MODELS[key].command}` first "
            f"(it reads {CATALOG_MODELS[key].reads}, e.g. after `kedro run`)"
            for key in missing
        ]
        raise MissingGridInput(
            f"experiments: {where} lists methods that start from a model this pipeline does not train:\n"
            + "\n".join(lines)
            + "\nthen run the grid again, or leave those methods out of the preset."
        )
    return {key: found[key] for key in needs}


@dataclass
class GridStarts:
    """What the grid's cells start from: a policy per ``GridArm.start_from`` and, when a
    ``wmr1`` cell is listed, the world-model environment (``world_model.environment.WorldModelSimulator``)."""

    policies: dict[str, Any] = field(default_factory=dict)
    world_model: Any = None

    def policy(self, start_from: str):
        """The checkpoint a method starts from."""
        if start_from not in self.policies:
            raise MissingGridInput(f"experiments: no {start_from!r} checkpoint was given to the grid (have {sorted(self.policies)})")
        return self.policies[start_from]
