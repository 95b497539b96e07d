"""The speed and memory benchmarks, smoke-run at a tiny size in this process
(``conftest.run_benchmark``): the rollout engine's modes, the learner's FLOP/s, the rollout
weights and backends, the sink-aware attention, the training passes' memory, SEED's update
and the skill-use gap, each on the project's tiny or small policy, the real twc game and the
smallest batch, with its matmul peak (``--peak-sizes``) measured on small matrices. The
figures mean nothing at this size; the scripts' code paths run."""

from __future__ import annotations

import pandas as pd
import pytest

from hindsight.policy.model import save_policy
from hindsight.policy.skill_injection import inject_skill

SMOKE = {
    "rollout_throughput.py": (
        ("--models", "small", "--tasks", "1", "--group-size", "1", "--max-steps", "2", "--rounds", "1", "--parallel", "2",
         "--gold-episodes", "1", "--max-length", "768", "--hf-generate", "--peak-sizes", "32", "--threads", "1"),
        "batched / hf-generate",
    ),
    "learner_mfu.py": (("--models", "small", "--batch", "1", "--length", "16", "--response", "2", "--steps", "1", "--peak-sizes", "32"),
                       "of the bf16 peak"),
    "inference_weights.py": (("--models", "small", "--batch", "1", "--prompt", "8", "--steps", "1"), "log-prob gap bf16 vs fp32"),
    "inference_backends.py": (
        ("--model-dir", "{policy}", "--backends", "torch,ctranslate2:int8", "--tasks", "1", "--group", "1", "--max-steps", "1",
         "--peak-sizes", "32"),
        "| ctranslate2:int8 |",
    ),
    "sink_attention.py": (("--case", "flex", "64", "--heads", "2", "--kv-heads", "1", "--head-dim", "8"), '"peak_mib"'),
    "training_memory.py": (("--tiny", "--steps", "1", "--variant", "rl-whole", "rl-micro", "sft-fp32", "sft-bf16", "sft-bf16-pad64"),
                           '"variant": "sft-bf16-pad64"'),
    "seed_overhead.py": (("--preset", "tiny", "--tasks", "2", "--group", "2", "--analyzer-tokens", "4", "--repeats", "1",
                          "--gold-episodes", "1", "--max-steps", "3", "--max-length", "768"), "SEED / GRPO, update only"),
    "skill_use.py": (("--policy", "{policy}", "--examples", "4", "--data", "{tmp}/data"), "teacher gap"),
}


@pytest.fixture(scope="module")
def policy_dir(tiny_policy, tmp_path_factory):
    """The suite's tiny policy as an HF directory (what ``--model-dir`` and ``--policy`` read)."""
    return save_policy(tiny_policy, tmp_path_factory.mktemp("benchmark_policy") / "policy")


def _stage1_examples(data, gold_steps) -> None:
    """A ``stage1_examples`` version of skill-conditioned expert steps, half of whose actions
    the skill lists (the Stage-1 mixture's ``skill_bc`` rows)."""
    rows = [
        {"prompt": inject_skill(step["prompt"], f"do: {step['action'] if index % 2 else 'look around'}; inventory"),
         "response": step["action"], "kind": "skill_bc", "episode_id": "e0"}
        for index, step in enumerate(gold_steps[:8])
    ]
    folder = data / "05_model_input" / "stage1_examples.parquet" / "2026-01-01T00.00.00.000Z"
    folder.mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(folder / "stage1_examples.parquet")


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_the_script_prints_its_figures_at_a_tiny_size(script, run_benchmark, tmp_path, request):
    values = {}
    if "{policy}" in " ".join(SMOKE[script][0]):
        values["policy"] = request.getfixturevalue("policy_dir")
    if script == "skill_use.py":
        _stage1_examples(tmp_path / "data", request.getfixturevalue("gold_steps"))
    args, expected = SMOKE[script]
    run_benchmark(script, args, expected, **values)
