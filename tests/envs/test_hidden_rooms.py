"""conf/hidden_rooms is partially observable: the coin starts out of view behind doors.

The configuration's point (docs/hidden_information.md) is that at the start of most tasks
the state does not show where the coin is, so a hindsight skill can tell what the state
does not; this checks it on the real game (TextWorldExpress coin, the configuration's own
parameters) rather than trusting the parameter names.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from hindsight.envs import make_env
from hindsight.envs.base import EnvironmentSpec

CONF = Path(__file__).resolve().parents[2] / "conf" / "hidden_rooms" / "parameters.yml"


def test_the_coin_starts_out_of_view_and_the_gold_path_walks_to_it():
    environment = yaml.safe_load(CONF.read_text())["environment"]
    (game,) = environment["games"]
    spec = EnvironmentSpec(env=environment["env"], game=game["game"], params=game["params"], max_steps=environment["max_steps"])
    env = make_env(spec)
    try:
        seeds = env.seeds("train", 12)
        hidden, walks = 0, 0
        for seed in seeds:
            observation, _ = env.reset(seed, "train")
            hidden += "coin" not in observation.lower()
            walks += any(action.startswith(("move", "open door")) for action in env.gold_actions())
    finally:
        env.close()
    assert hidden >= 9, f"the coin was in view at the start of {len(seeds) - hidden} of {len(seeds)} tasks"
    assert walks >= 9
