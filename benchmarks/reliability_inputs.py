"""Bad input, measured: what an ingestion run does with each malformed trajectory file.

In a fresh isolated copy of the project (``tests/pipelines/kedro_project.py``, conf env
``test``) ingestion first runs once with a good external file. Then every file of
``tests/data/malformed`` goes through a Kedro session of its own (from the external-file
node on; one file per format also through the whole ingestion pipeline), next to the good
file, exactly as ``tests/reliability/test_bad_input_catalog.py`` does. Reported:

- files tried: the corpus files (and the whole-pipeline runs among them);
- rejected with file + line/row + field named: the run failed with a message naming the
  file, the line / item / row (unless the whole file is wrong), the field (where one
  applies) and the corpus's expected wording (``tests/data/test_data_external.py``);
- dataset versions written on bad input: new version folders under ``data/`` after all
  the failed runs (must be 0);
- previous version loadable: a fresh session's ``catalog.load`` of every ingestion output
  returns the good run's tables;
- seconds per rejected run: the median wall time of one failed session.

``measure()`` returns the figures as (name, text) pairs; run from the project root
(about a minute on 2 CPU cores):

    python benchmarks/reliability_inputs.py
"""

from __future__ import annotations

GROUP = "reliability"
REPRODUCES = ("docs/reliability.md#reliability",)
MEASURED = "about a minute on 2 cores (the docstring; CPU not named)"
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/reliability.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "src"))
sys.path.insert(0, str(PROJECT_ROOT / "tests" / "reliability"))
os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")


def measure(files: int | None = None) -> list[tuple[str, str]]:
    """Run the malformed corpus (its first ``files`` by name, and as many whole-pipeline runs,
    when given) through ingestion sessions; the figures as (name, value)."""
    import pandas as pd

    from test_bad_input_catalog import (
        EXPECTED_ERRORS,
        GOOD_FILE,
        MALFORMED,
        VERSIONED,
        WHOLE_PIPELINE,
        KedroProject,
        ingest,
        load_newest,
        names_the_problem,
        version_dirs,
    )

    tried, whole_runs = sorted(EXPECTED_ERRORS)[:files], sorted(WHOLE_PIPELINE)[:files]
    runs = [(name, False) for name in tried] + [(name, True) for name in whole_runs]
    previous_level = logging.root.manager.disable
    logging.disable(logging.CRITICAL)  # the sessions' own logs would bury the figures
    try:
        with tempfile.TemporaryDirectory(prefix="reliability_inputs_") as folder:
            project = KedroProject(Path(folder))
            good = ingest(project, [GOOD_FILE], whole=True)
            versions = version_dirs(project)
            named, accepted, seconds = 0, [], []
            for name, whole in runs:
                start = time.perf_counter()
                try:
                    ingest(project, [GOOD_FILE, MALFORMED / name], whole=whole)
                    accepted.append(name)
                except Exception as error:  # noqa: BLE001 - any failure counts as a rejection
                    named += names_the_problem(name, str(error))
                seconds.append(time.perf_counter() - start)
            written = version_dirs(project) - versions
            loaded = load_newest(project, VERSIONED)
            loadable = all(
                loaded[dataset].equals(pd.read_parquet(good.outputs[folder_name]))
                for dataset, folder_name in VERSIONED.items()
            )
    finally:
        logging.disable(previous_level)
    figures = [
        ("malformed files tried", f"{len(tried)} of {len(EXPECTED_ERRORS)} (+{len(whole_runs)} through the whole pipeline)"),
        ("rejected with file + line/row + field named", f"{named}/{len(runs)}"),
        ("accepted although malformed", ", ".join(accepted) or "none"),
        ("dataset versions written on bad input", str(len(written))),
        ("previous version loadable", "yes" if loadable else "no"),
        ("seconds per rejected run (median)", f"{statistics.median(seconds):.2f}"),
    ]
    return figures


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, help="only the first N corpus files by name (and N whole-pipeline runs)")
    files = parser.parse_args().files
    if files is not None and files < 1:
        parser.error(f"--files must be at least 1 (got {files})")
    for name, value in measure(files):
        print(f"{name}: {value}")


if __name__ == "__main__":
    main()
