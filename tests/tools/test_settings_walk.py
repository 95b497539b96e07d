"""The settings walk's counts (``tools.settings_walk``) on walks whose figures are known, and
its two walks (the calls carrying the settings, the paths to a field read) on the project's own code."""

from __future__ import annotations


import pytest

from tools.settings_walk import SOURCE, Visit, figures, floors, read_walk, trace_walk

pytestmark = pytest.mark.unit


def _visit(file: str, floor: int, caller_floor: int | None) -> Visit:
    return Visit(str(SOURCE / file), "f", floor, caller_floor)


def test_stays_climbs_and_returns_are_counted_as_defined():
    walk = [
        _visit("pipelines/training/nodes.py", 1, None),
        _visit("config/rl.py", 2, 1),
        _visit("runs/rl_run.py", 3, 2),
        _visit("runs/rl_run.py", 3, 3),  # same file: one stay
        _visit("training/schedule.py", 4, 3),
        _visit("methods/seed.py", 3, 4),  # a climb: training calls a method's hook
        _visit("training/schedule.py", 4, 3),  # a return to a file already left
    ]
    assert figures(walk) == {"calls": 7, "stays": 6, "files": 5, "climbs": 1, "rises": 1, "returns": 1, "climbs_back_up": 2}
    walk.append(_visit("runs/rl_run.py", 3, None))  # back up after training/schedule.py returned: a rise, no climb
    assert figures(walk) == {"calls": 8, "stays": 7, "files": 5, "climbs": 1, "rises": 2, "returns": 2, "climbs_back_up": 3}


def test_the_floors_are_the_import_contracts_layers():
    table = floors()
    assert table["pipelines"] < table["config"] < table["runs"] < table["methods"] < table["training"] < table["policy"] < table["params"]
    assert table["training"] == table["rollout"] and table["methods"] == table["skills"]


def test_the_tracer_follows_a_settings_object_through_the_projects_calls():
    from hindsight.params import build
    from hindsight.training.rl_config import RLConfig

    config = build(RLConfig, {"updates": 2}, "training.rl")
    visits = trace_walk(lambda: build(RLConfig, {"updates": 3}, "training.rl", defaults=config), (RLConfig,))
    names = [visit.function for visit in visits]
    assert names[0] == "build" and visits[0].floor == floors()["params"]  # the defaults carry the settings
    assert len(names) == len(set(names))  # each function once (build's recursive calls are not repeated)
    assert all(visit.file.startswith(str(SOURCE)) for visit in visits)


def test_the_read_walk_joins_the_stack_at_each_field_read_and_restores_the_classes():
    from hindsight.params import as_dict, build
    from hindsight.training.rl_config import RLConfig

    config = build(RLConfig, {"updates": 2}, "training.rl")
    visits = read_walk(lambda: as_dict(config), (RLConfig,))
    assert [visit.function for visit in visits][:1] == ["as_dict"] and visits[0].floor == floors()["params"]
    assert "__getattribute__" not in RLConfig.__dict__ and as_dict(config)["updates"] == 2  # put back as it was
    assert read_walk(lambda: config.learning_rate, (RLConfig,)) == []  # a read from no project function: no walk
