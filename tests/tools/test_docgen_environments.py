"""docs/configuration.md lists every configuration environment, the folders of conf/ but
base and local, each with the first sentence of its parameters.yml's opening comment
(``tools.docgen.environments``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.docgen.environments import TITLE, description, environments, render

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"


def test_the_reference_lists_every_environment_as_generated():
    page = (ROOT / "docs" / "configuration.md").read_text()
    section = render(CONF)
    assert section in page, (
        "docs/configuration.md's configuration environments differ from conf/; regenerate it with "
        "`python -m tools.docgen.configuration > docs/configuration.md`"
    )
    names = environments(CONF)
    assert {"test", "learning", "miniwob", "hidden_rooms", "hidden_rooms_135m", "seed_release"} <= set(names)
    assert not {"base", "local"} & set(names)
    listed = [line.split("`")[1] for line in section.splitlines() if line.startswith("- `")]
    assert listed == names


def test_the_description_is_the_first_sentence_of_the_opening_comment(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "parameters.yml").write_text(
        "# conf/mine: a job on another world (docs/gui.md), sized for\n# 2 cores. More detail.\n#\n#   kedro run --env mine\nseed: 0\n"
    )
    assert description(tmp_path, "mine") == "a job on another world ([gui.md](gui.md)), sized for 2 cores."
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "parameters.yml").write_text("seed: 0\n")
    with pytest.raises(ValueError, match="does not open with a comment"):
        description(tmp_path, "bare")
    (tmp_path / "bare" / "parameters.yml").write_text("# conf/bare: tiny.\nseed: 0\n")
    (tmp_path / "base").mkdir()
    section = render(tmp_path)
    assert section.startswith(TITLE) and "- `bare`: tiny.\n- `mine`: a job" in section and "`base`:" not in section
