"""The more-behaviour-cloning control of conf/learning: did cloning longer already give RL's gain?

Reads two evaluation episode tables that ``kedro run --env learning`` wrote
(``data/07_model_output/evaluation_episodes.parquet/<version>/``): the first one's Stage-1
policy is the start; the second's Stage-1 policy is the control, trained with more
behaviour-cloning and Stage-1 steps. Both were played on the same held-out tasks with the same
decodings and evaluation seed, so the report's rule applies to them as to RL
(``hindsight.evaluation.paired_gain``): each policy's decoding picked on seen tasks, then the
control minus the start per unseen task, with a bootstrap interval over tasks.

    kedro run --env learning                      # the start, GRPO (seed 0) and the evaluation
    kedro run --env learning --pipelines behaviour_cloning,skills,stage1 \\
        --params behaviour_cloning.sft.max_steps=800,stage1.sft.max_steps=500
    kedro run --env learning --pipeline evaluation
    python benchmarks/learning_control.py START_VERSION CONTROL_VERSION

A version is a folder name under the dataset's path (a timestamp). It prints the learning-gain
table of the control against the start.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from hindsight.evaluation.paired_gain import learning_gain_markdown, learning_gain_table

EPISODES = Path("data/07_model_output/evaluation_episodes.parquet")


def stage1_episodes(version: str, label: str) -> pd.DataFrame:
    """The Stage-1 policy's episodes of one evaluation, its agents renamed ``<label>-<decoding>``."""
    path = EPISODES / version / "evaluation_episodes.parquet"
    if not path.exists():
        raise SystemExit(f"{path}: no such evaluation (versions: {sorted(p.name for p in EPISODES.glob('*'))})")
    table = pd.read_parquet(path)
    table = table[table["agent"].str.startswith("stage1-")].copy()
    if table.empty:
        raise SystemExit(f"{path}: no Stage-1 episodes (agents stage1-<decoding>)")
    table["agent"] = label + table["agent"].str.removeprefix("stage1")
    table["episode_id"] = label + ":" + table["episode_id"].astype(str)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("start_version", help="evaluation whose Stage-1 policy is the start")
    parser.add_argument("control_version", help="evaluation whose Stage-1 policy is the longer-cloned control")
    args = parser.parse_args()
    episodes = pd.concat(
        [stage1_episodes(args.start_version, "stage1"), stage1_episodes(args.control_version, "control")], ignore_index=True
    )
    table = learning_gain_table(episodes, start_label="stage1", end_label="control")
    print(learning_gain_markdown(table))


if __name__ == "__main__":
    main()
