"""What the smoke tests of ``benchmarks/`` share: ``run_benchmark`` runs a script in this
process as ``python benchmarks/<script>.py ARGS`` would (``runpy`` with ``__name__`` set to
``"__main__"``, the scripts' folder first on ``sys.path``), checks that its output holds the
expected text and returns it. In
this process, so that a smoke run pays no interpreter start and no torch import of its own.
Each test file declares ``SMOKE``: script -> (arguments, a text its output must hold); an
argument may name ``{tmp}`` (the test's temporary folder) or a value the test passes in.
``tools.docgen.benchmarks`` reads ``SMOKE`` to index which file smoke-runs which script.
"""

from __future__ import annotations

import functools
import runpy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture
def run_benchmark(monkeypatch, capsys, tmp_path):
    """``run(script, args, expected, cwd=None, **values)`` -> the script's standard output,
    which must hold ``expected`` (the figure the script exists for)."""

    def run(script: str, args: tuple[str, ...], expected: str, cwd: Path | None = None, **values) -> str:
        names = {"tmp": tmp_path, **values}
        argv = [functools.reduce(lambda text, name: text.replace(f"{{{name}}}", str(names[name])), names, arg) for arg in args]
        monkeypatch.setattr(sys, "argv", [str(BENCHMARKS / script), *argv])
        monkeypatch.syspath_prepend(str(BENCHMARKS))
        monkeypatch.setenv("KEDRO_DISABLE_TELEMETRY", "1")
        if cwd is not None:
            monkeypatch.chdir(cwd)
        try:
            runpy.run_path(str(BENCHMARKS / script), run_name="__main__")
        except SystemExit as exit:
            assert exit.code in (None, 0), f"{script} {' '.join(argv)} exited with {exit.code}"
        output = capsys.readouterr().out
        assert expected in output, f"{script} printed no {expected!r}:\n{output[-3000:]}"
        return output

    return run

