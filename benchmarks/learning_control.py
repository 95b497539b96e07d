"""The more-behaviour-cloning control of conf/learning: did cloning longer already give RL's gain?

Reads two evaluation episode tables that ``kedro run --env learning`` wrote
(``data/07_model_output/evaluation_episodes.parquet/<version>/``): the first one's Stage-1
policy is the start; the second's Stage-1 policy is the control, trained with more
behaviour-cloning and Stage-1 steps. Both were played on the same held-out tasks with the same
decodings and evaluation seed, so the report's rule applies to them as to RL
(``hindsight.evaluation.paired_gain``): each policy's decoding picked on seen tasks, then the
control minus the start per unseen task, with a bootstrap interval over tasks.

    kedro run --env learning                      # the start, GRPO (seed 0) and the evaluation
    kedro run --env learning --pipelines ingestion,behaviour_cloning,skills,stage1 \\
        --params behaviour_cloning.sft.max_steps=800,stage1.sft.max_steps=500   # in a copy of the project
    python benchmarks/learning_control.py --evaluate control_episodes.parquet     # there: the control alone
    python benchmarks/learning_control.py START_VERSION control_episodes.parquet

``--evaluate`` plays the project's newest Stage-1 checkpoint with the configuration's
``evaluation`` settings (the evaluation pipeline's own node, without the RL policy) and
writes its episodes. An argument is a version of the evaluation dataset (a folder name under
its path, a timestamp) or an episodes file. It prints the learning-gain table of the control
against the start.
"""

from __future__ import annotations

GROUP = "methods"
REPRODUCES = ("docs/learning.md#the-more-behaviour-cloning-control",)
MEASURED = "`--evaluate`: 8.9 min on one core (CPU not named); the comparison itself: seconds"
LAST_RUN = "by 2026-12-07 (git: the figure's lines in docs/learning.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
from pathlib import Path

import pandas as pd

from hindsight.evaluation.paired_gain import learning_gain_markdown, learning_gain_table

EPISODES = Path("data/07_model_output/evaluation_episodes.parquet")


def stage1_episodes(version: str, label: str) -> pd.DataFrame:
    """The Stage-1 policy's episodes of one evaluation (a version of the dataset or a file),
    its agents renamed ``<label>-<decoding>``."""
    path = Path(version) if version.endswith(".parquet") else EPISODES / version / "evaluation_episodes.parquet"
    if not path.exists():
        raise SystemExit(f"{path}: no such evaluation (versions: {sorted(p.name for p in EPISODES.glob('*'))})")
    table = pd.read_parquet(path)
    table = table[table["agent"].str.startswith("stage1-")].copy()
    if table.empty:
        raise SystemExit(f"{path}: no Stage-1 episodes (agents stage1-<decoding>)")
    table["agent"] = label + table["agent"].str.removeprefix("stage1")
    table["episode_id"] = label + ":" + table["episode_id"].astype(str)
    return table


def evaluate_newest_stage1(env: str, out: Path) -> None:
    """Play the catalog's newest Stage-1 checkpoint on the configuration's held-out tasks
    (``evaluate_stage1_policy``, the evaluation pipeline's node) and write its episodes."""
    from kedro.framework.session import KedroSession
    from kedro.framework.startup import bootstrap_project

    from hindsight.config import check_parameters
    from hindsight.pipelines.evaluation.nodes import evaluate_stage1_policy

    bootstrap_project(Path.cwd())
    with KedroSession.create(env=env) as session:
        context = session.load_context()
        settings = check_parameters(context.params)
        episodes = evaluate_stage1_policy(context.catalog.load("stage1_policy"), settings["project"], settings["evaluation"])
    episodes.to_parquet(out)
    print(f"wrote {out}: {len(episodes)} steps")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("start_version", nargs="?", help="evaluation whose Stage-1 policy is the start")
    parser.add_argument("control_version", nargs="?", help="evaluation whose Stage-1 policy is the longer-cloned control")
    parser.add_argument("--evaluate", type=Path, help="play the newest Stage-1 checkpoint and write its episodes here")
    parser.add_argument("--env", default="learning", help="configuration environment of --evaluate")
    args = parser.parse_args()
    if args.evaluate:
        evaluate_newest_stage1(args.env, args.evaluate)
        return
    if not (args.start_version and args.control_version):
        parser.error("give the start's and the control's evaluations, or --evaluate FILE")
    episodes = pd.concat(
        [stage1_episodes(args.start_version, "stage1"), stage1_episodes(args.control_version, "control")], ignore_index=True
    )
    table = learning_gain_table(episodes, start_label="stage1", end_label="control")
    print(learning_gain_markdown(table))


if __name__ == "__main__":
    main()
