"""benchmarks/profile_run.py attributes py-spy's samples to the Kedro node and the phase they
belong to (the profiler itself needs ptrace rights and a whole run, so the test reads a
recorded profile in py-spy's raw format)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

spec = importlib.util.spec_from_file_location("profile_run", ROOT / "benchmarks" / "profile_run.py")
profile_run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(profile_run)

KEDRO = "<module> (kedro:8);main (kedro/framework/cli/cli.py:269);run (kedro/framework/session/session.py:429)"
NODE = "run (kedro/pipeline/node.py:310);_run_with_one_input (kedro/pipeline/node.py:400)"

RAW = "\n".join(
    [
        # behaviour cloning: a log-prob forward inside an SFT step is the update, not re-scoring
        f"{KEDRO};{NODE};train_base_policy (hindsight/pipelines/behaviour_cloning/nodes.py:40);"
        "train_sft (hindsight/training/sft.py:140);response_nll (hindsight/training/sft.py:70);"
        "token_logprobs (hindsight/policy/logprobs.py:90);forward (torch/nn/modules/module.py:1) 30",
        f"{KEDRO};{NODE};train_base_policy (hindsight/pipelines/behaviour_cloning/nodes.py:40);"
        "train_sft (hindsight/training/sft.py:150);step (torch/optim/adamw.py:200) 5",
        # the validation filter: the environment's step inside a rollout is the environment's
        f"{KEDRO};{NODE};validate_skills (hindsight/pipelines/skills/nodes.py:136);"
        "run_rollouts (hindsight/rollout/engine.py:80);step (hindsight/envs/textworldexpress.py:120) 7",
        f"{KEDRO};{NODE};validate_skills (hindsight/pipelines/skills/nodes.py:136);"
        "run_rollouts (hindsight/rollout/engine.py:80);generate (hindsight/policy/generation.py:150) 11",
        # a node whose function lives outside a pipeline's nodes.py
        f"{KEDRO};{NODE};collect_expert_trajectories (hindsight/data/expert.py:20);"
        "reset (hindsight/envs/textworldexpress.py:90) 2",
        # start-up imports, and a helper thread that must not count
        f"{KEDRO};_find_and_load (<frozen importlib._bootstrap>:1176);<module> (torch/__init__.py:1) 4",
        "_bootstrap (threading.py:1002);run (py4j/java_gateway.py:724) 99",
    ]
)


def test_samples_go_to_their_node_and_phase(tmp_path):
    raw = tmp_path / "profile.raw"
    raw.write_text(RAW + "\n")
    table = profile_run.attribute(profile_run.read_samples(raw))
    assert dict(table["behaviour_cloning.train_base_policy"]) == {"update (forward + backward)": 30, "optimizer": 5}
    assert dict(table["skills.validate_skills"]) == {"environment step": 7, "generation (rollouts, skills)": 11}
    assert dict(table["data.expert.collect_expert_trajectories"]) == {"environment step": 2}
    assert dict(table[profile_run.OUTSIDE]) == {"imports": 4}
    assert sum(sum(counts.values()) for counts in table.values()) == 59  # the py4j thread is left out


def test_the_table_prints_seconds_per_node(tmp_path, capsys):
    raw = tmp_path / "profile.raw"
    raw.write_text(RAW + "\n")
    profile_run.print_table(profile_run.attribute(profile_run.read_samples(raw)), wall_s=2.0, rate=10)
    out = capsys.readouterr().out
    assert "| behaviour_cloning.train_base_policy      |      4 |" in out  # 35 samples at 10 Hz
    assert "CPU:" in out and "wall time of the whole command: 2 s" in out


def test_an_empty_or_missing_profile_is_named(tmp_path, monkeypatch):
    import pytest

    empty = tmp_path / "empty.raw"
    empty.write_text("_bootstrap (threading.py:1002);run (py4j/java_gateway.py:724) 9\n")
    with pytest.raises(SystemExit, match="no sample of the main thread"):
        profile_run.print_table(profile_run.attribute(profile_run.read_samples(empty)), wall_s=None, rate=10)
    monkeypatch.setattr("sys.argv", ["profile_run.py", "--raw", str(tmp_path / "missing.raw")])
    with pytest.raises(SystemExit, match="missing.raw: no such file"):
        profile_run.main()
