"""The data reference: every table's columns (the data contracts) and every catalog dataset
with the pipelines that write and read it, rendered as markdown from the code.

The columns come from ``hindsight.data.schema`` (the one place that names them) and the
scores table of ``hindsight.training.distillation``; the datasets from
``conf/base/catalog.yml`` and the pipeline registry. ``docs/data.md`` is this output,
committed; ``tests/tools/test_docgen_data.py`` regenerates it and fails when the two
differ, so the reference cannot drift from the code. From the project root::

    python -m tools.docgen.data docs/data.md
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import yaml
from kedro.pipeline import Pipeline

from hindsight.data.schema import (
    EPISODE_SUMMARY_COLUMNS,
    ROLLOUT_COLUMNS,
    SCREENSHOT_COLUMNS,
    SKILLS_TABLE_COLUMNS,
    TRAJECTORY_COLUMNS,
    Column,
)
from hindsight.training.distillation import SCORES_COLUMNS

HEADER = """# Data: the tables and the catalog

<!-- Generated from `src/hindsight/data/schema.py`, `conf/base/catalog.yml` and the pipeline
registry: do not edit. Regenerate with `python -m tools.docgen.data docs/data.md`;
`tests/tools/test_docgen_data.py` fails when this file and the code differ. -->

Every stage reads and writes datasets of the Kedro catalog (`conf/base/catalog.yml`); a
versioned one keeps every run's output under `data/<layer>/<name>/<version>/`, and a stage
run on its own reads the newest version of each input. Tables that enter from outside (a
trajectory file, another process) are checked against their columns on the way in
(`hindsight.data.schema.validate_trajectories`): a wrong value stops the run naming the
file, the row and the field, and nothing is written.
"""

TABLES: tuple[tuple[str, str, dict[str, Column]], ...] = (
    ("Trajectories", "One row per step of an episode (`trajectories`, `expert_trajectories`, ...).", TRAJECTORY_COLUMNS),
    ("Rollouts", "A rollout's rows: the trajectory columns plus what the sampler saw (`skill_rollouts`, `*_last_rollout`).",
     {key: column for key, column in ROLLOUT_COLUMNS.items() if key not in TRAJECTORY_COLUMNS}),
    ("Episode summary", "One row per episode, derived from its steps (`episode_summary`).", EPISODE_SUMMARY_COLUMNS),
    ("Skills", "One row per teacher record (`skills`).", SKILLS_TABLE_COLUMNS),
    ("Screenshots", "One row per step of an environment that renders a screen (`screenshots`; empty for text "
     "environments), keyed by the trajectory rows' `episode_id` and `step`: no other table carries image bytes. "
     "GUI trajectory files, the storage layout and what it costs: [GUI data](gui_data.md).", SCREENSHOT_COLUMNS),
)


def _table(title: str, intro: str, columns: dict[str, Column]) -> list[str]:
    lines = [f"### {title}", "", intro, "", "| column | kind | meaning |", "|---|---|---|"]
    lines += [f"| `{name}` | {column.kind} | {column.meaning} |" for name, column in columns.items()]
    return lines + [""]


def _producers_and_readers(pipelines: Mapping[str, Pipeline]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Dataset -> the stage pipelines that write it / read it (composite pipelines left out)."""
    writers: dict[str, list[str]] = {}
    readers: dict[str, list[str]] = {}
    for name, pipeline in pipelines.items():
        if name == "__default__" or name.startswith(("with_", "training_from_")):
            continue
        for dataset in pipeline.all_outputs():
            writers.setdefault(dataset, []).append(name)
        for dataset in pipeline.inputs():
            readers.setdefault(dataset, []).append(name)
    return writers, readers


def _catalog(project_path: Path, pipelines: Mapping[str, Pipeline]) -> list[str]:
    entries = yaml.safe_load((project_path / "conf" / "base" / "catalog.yml").read_text())
    writers, readers = _producers_and_readers(pipelines)
    lines = [
        "## The catalog", "",
        "Every entry of `conf/base/catalog.yml`, where it lives, and the pipelines that write and read it.", "",
        "| dataset | type | versioned | location | written by | read by |", "|---|---|---|---|---|---|",
    ]
    for name, entry in entries.items():
        if name.startswith("_") or not isinstance(entry, dict):
            continue
        kind = str(entry.get("type", "")).rsplit(".", 1)[-1]
        location = entry.get("filepath") or entry.get("path") or ""
        written = ", ".join(f"`{pipeline}`" for pipeline in sorted(writers.get(name, [])))
        read = ", ".join(f"`{pipeline}`" for pipeline in sorted(readers.get(name, [])))
        lines.append(f"| `{name}` | {kind} | {'yes' if entry.get('versioned') else 'no'} | `{location}` | {written} | {read} |")
    return lines + [""]


def render(project_path: Path, pipelines: Mapping[str, Pipeline]) -> str:
    """The whole page, for the project at ``project_path`` and its registered ``pipelines``."""
    lines = [HEADER, "## The tables (data contracts)", ""]
    for title, intro, columns in TABLES:
        lines += _table(title, intro, columns)
    lines += [
        "### Scores", "",
        "One row per response token of every sample that has a skill (`scores`, the scoring pipeline): "
        + ", ".join(f"`{column}`" for column in SCORES_COLUMNS) + ".", "",
    ]
    lines += _catalog(project_path, pipelines)
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    """Write the page for the project in the working directory (its registered pipelines) to
    the path given as the one argument (Kedro's start-up logs to stdout)."""
    import sys

    from kedro.framework.project import pipelines
    from kedro.framework.startup import bootstrap_project

    bootstrap_project(Path.cwd())
    Path(sys.argv[1]).write_text(render(Path.cwd(), pipelines))


if __name__ == "__main__":
    main()
