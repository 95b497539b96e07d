"""``notebooks/walkthrough.ipynb`` executed headless (nbclient, an ipykernel of this
interpreter) on the trained ``conf/test`` project: every cell runs without error and shows
what each stage wrote.

The kernel starts in the project's root, with ``HINDSIGHT_PROJECT_PATH`` and ``KEDRO_ENV=test``
set as a user would set them to point the notebook at a project and environment.
"""

from __future__ import annotations

import re
import sys

import nbformat
import pytest
from nbclient import NotebookClient

from kedro_project import PROJECT_ROOT

pytestmark = pytest.mark.pipeline


NOTEBOOK = PROJECT_ROOT / "notebooks" / "walkthrough.ipynb"
AGENTS = ("stage1-sampled", "stage1-greedy", "rl-sampled", "rl-greedy", "random")
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def text_of(cell) -> str:
    """What a code cell printed (stdout) and its result's plain text, colours stripped; not the
    log records that Kedro's rich handler shows as display data."""
    parts = []
    for output in cell.outputs:
        if output.output_type == "stream" and output.name == "stdout":
            parts.append(output.text)
        elif output.output_type == "execute_result":
            parts.append(output.data.get("text/plain", ""))
    return ANSI_ESCAPE.sub("", "".join(parts))


@pytest.fixture(scope="module")
def executed(trained_project):
    """The notebook after a headless run, its cells by id, plus a last cell that prints the
    kernel's interpreter."""
    project, _ = trained_project
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell("import sys\nprint(sys.executable)", id="interpreter"))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HINDSIGHT_PROJECT_PATH", str(project.path))
        env.setenv("KEDRO_ENV", "test")
        env.setenv("OMP_NUM_THREADS", "1")  # the kernel is a process of its own; see tests/conftest.py
        client = NotebookClient(
            notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(project.path)}}
        )
        client.execute()  # raises CellExecutionError, with the cell and traceback, if any cell fails
    return {cell.id: cell for cell in notebook.cells}


def test_every_cell_ran_without_error(executed):
    code_cells = [cell for cell in executed.values() if cell.cell_type == "code"]
    assert len(code_cells) == 7
    for cell in code_cells:
        assert cell.execution_count is not None, cell.id
        assert not [o for o in cell.outputs if o.output_type == "error"], cell.id


def test_kernel_is_this_interpreter(executed):
    assert text_of(executed["interpreter"]).strip() == sys.executable


def test_setup_found_the_project_and_env(executed, trained_project):
    project, _ = trained_project
    assert text_of(executed["setup"]).strip() == f"project {project.path.resolve()} | env test"


def test_stages_show_their_outputs(executed):
    assert re.match(r"[1-9]\d* steps, [1-9]\d* episodes\n", text_of(executed["trajectories"]))
    assert "expert" in text_of(executed["trajectories"])  # the per-task-type, per-source table
    assert re.search(r"^accepted +[\d.]+$", text_of(executed["skills"]), re.M)
    curves = text_of(executed["curves"])
    for phase in ("bc", "stage1"):
        assert re.search(rf"^{phase} +[\d.]+ +[\d.]+$", curves, re.M), phase
    assert "rollout/success_rate" in curves and "kl/ref" in curves
    assert "..." not in curves  # pandas elides rows or columns past its display limits
    summary = text_of(executed["evaluation"])
    for agent in AGENTS:
        assert re.search(rf"^\d+ +{agent} +seen +all ", summary, re.M), agent
    assert "success_rate" in summary


def test_policy_cell_prints_parameters(executed):
    lines = text_of(executed["policy"]).splitlines()
    assert re.fullmatch(r"\w+ [1-9]\d* parameters", lines[0]), lines[0]
    assert "wardrobe" in lines[1]
