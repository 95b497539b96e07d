"""The data-parallel learner: ``torchrun --nproc-per-node 2`` (gloo, CPU) running the RL
update and SFT through ``hindsight.distributed`` must end with the weights and
metrics of the same command run in one process (same samples, same seeds), within
floating-point tolerance.

The batches are cut into several micro-batches per rank (small token budgets) and the two
mini-batches of the RL update do not split evenly over the ranks, so a rank runs weight-0
filler micro-batches: the balancing and the gradient scaling are exercised, not only the
easy case. The gradient norm before clipping is compared too: with Adam the weights alone
would hide a gradient off by a constant factor.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import warnings
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from hindsight.policy.constrained import ActionTrie
from hindsight.policy.encoding import encode_ids, encode_prompt, encode_response
from hindsight.policy.model import load_policy, save_policy
from hindsight.training.distillation import response_logprobs, skill_augmented_logprobs
from hindsight.distributed import run_rl_update
from hindsight.training.torchrun_jobs import LearnerTimeout, launch, run_sft, save_rollout_batch
from hindsight.training.rl_config import RLConfig
from hindsight.policy.generation import SamplingConfig

pytestmark = pytest.mark.slow  # a multi-process or whole-grid test: `-m slow` (CI runs it)

SRC = Path(__file__).resolve().parents[2] / "src"
RL_CONFIG = RLConfig(
    algorithm="seed", kl_coef=0.0, methods={"seed": {"opd_coef": 0.5}}, learning_rate=1e-3, mini_batch_size=7,
    micro_batch_tokens=400, max_grad_norm=1e9,
)
"""13 samples: mini-batches of 7 and 6, a few samples per micro-batch."""
SFT_SETTINGS = dict(
    learning_rate=1e-3, weight_decay=0.0, batch_size=6, max_steps=3, warmup_ratio=0.0, micro_batch_tokens=400,
    max_length=768, log_every=1, bf16_autocast=False,
)


def torchrun(*args: str) -> subprocess.CompletedProcess:
    """Launch ``hindsight.distributed`` on 2 CPU processes (gloo).

    One of these launches hung once in CI (2 cores shared with the other test worker; the
    3-step SFT that takes ~10 s here never finished in 240 s, and the log held no error).
    A launch that runs past its limit is killed with its ranks and run once more; the stacks
    of the hung processes go to the test's warnings, so the next occurrence says where."""
    env = {"PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    try:
        return launch(args, 2, timeout_s=300, env=env)
    except LearnerTimeout as hung:
        warnings.warn(f"torchrun hung; running it once more. {hung}")
        return launch(args, 2, timeout_s=300, env=env)


def weights(directory: Path) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in load_policy(directory, device="cpu").model.named_parameters()}


def assert_same_weights(single: dict, parallel: dict, start: dict, learning_rate: float, step_fraction: float = 0.05) -> None:
    """Equal up to rounding. Adam divides by sqrt(v): where a gradient is about 0 a rounding
    difference in it can move that one weight by a visible fraction of a step, so a few
    elements may differ by more than 1e-6, never by ``step_fraction`` of a step (a wrong
    gradient would move most weights by a whole step, Adam's steps being about lr in size)."""
    assert single.keys() == parallel.keys()
    moved = max(float((single[name] - start[name]).abs().max()) for name in single)
    assert moved > learning_rate / 2, "the update did not move the weights: nothing was compared"
    differences = torch.cat([(parallel[name] - single[name]).abs().flatten() for name in single])
    assert float((differences > 1e-6).float().mean()) < 1e-3, "more than 0.1% of the weights differ"
    assert float(differences.max()) < step_fraction * learning_rate


@pytest.fixture(scope="module")
def start_dir(tiny_policy, tmp_path_factory) -> Path:
    """The tiny policy saved as an HF directory (both runs load it)."""
    return save_policy(copy.deepcopy(tiny_policy), tmp_path_factory.mktemp("start") / "policy")


def rollout_batch(policy, gold_examples, path: Path) -> Path:
    """13 constrained step samples of the gold steps, advantages of both signs, and teacher
    log-probs for the samples of "episode-0" (the others have no skill)."""
    tokenizer = policy.tokenizer
    samples = []
    for index, example in enumerate(gold_examples[:13]):
        response = encode_response(tokenizer, example["response"])
        allowed = ActionTrie.from_actions(tokenizer, example["valid_actions"]).allowed_along(response)
        encoded = encode_ids(encode_prompt(tokenizer, example["prompt"]), response, 768, allowed)
        samples.append(dataclasses.replace(encoded, episode_id=f"episode-{index % 3}", group_id="g", step=index, prompt=example["prompt"]))
    old = response_logprobs(policy.model, samples, 8, tokenizer.pad_token_id)
    teacher = skill_augmented_logprobs(policy.model, tokenizer, samples, {"episode-0": "Take the object first."}, 8)
    advantages = torch.linspace(-1.0, 1.0, len(samples))
    return save_rollout_batch(path, samples, advantages, old, teacher, RL_CONFIG, seed=3)


def test_rl_update_under_torchrun_equals_one_process(tiny_policy, gold_examples, start_dir, tmp_path):
    batch = rollout_batch(tiny_policy, gold_examples, tmp_path / "batch.pt")
    single = run_rl_update(start_dir, batch, tmp_path / "single", parallel=None)
    result = torchrun("rl-update", "--policy", str(start_dir), "--batch", str(batch), "--out", str(tmp_path / "ddp"))
    assert "rank 1 of 2" in result.stderr  # two processes really ran
    parallel = json.loads((tmp_path / "ddp" / "metrics.json").read_text())
    assert parallel.keys() == single.keys()
    assert parallel["charts/update_seconds"] > 0
    assert single["losses/opd"] != 0.0 and single["losses/ppo"] != 0.0
    for key in ("losses/ppo", "losses/opd", "losses/total", "losses/grad_norm", "rollout/logprob_gap", "opd/gate_mean"):
        assert parallel[key] == pytest.approx(single[key], rel=1e-4, abs=1e-7), key
    assert_same_weights(weights(tmp_path / "single" / "policy"), weights(tmp_path / "ddp" / "policy"), weights(start_dir), RL_CONFIG.learning_rate)


def test_sft_under_torchrun_equals_one_process(gold_examples, start_dir, tmp_path):
    examples = tmp_path / "examples.parquet"
    pd.DataFrame(gold_examples)[["prompt", "response"]].to_parquet(examples)
    settings = tmp_path / "sft.yml"
    settings.write_text(yaml.safe_dump(SFT_SETTINGS))
    run_sft(start_dir, examples, tmp_path / "single", settings, seed=5, parallel=None)
    torchrun("sft", "--policy", str(start_dir), "--examples", str(examples), "--settings", str(settings),
             "--seed", "5", "--out", str(tmp_path / "ddp"))
    single = pd.read_parquet(tmp_path / "single" / "history.parquet")
    parallel = pd.read_parquet(tmp_path / "ddp" / "history.parquet")
    assert len(single) == len(parallel) == SFT_SETTINGS["max_steps"]
    assert parallel["loss"].tolist() == pytest.approx(single["loss"].tolist(), rel=1e-4)
    assert_same_weights(weights(tmp_path / "single" / "policy"), weights(tmp_path / "ddp" / "policy"), weights(start_dir), SFT_SETTINGS["learning_rate"])


@pytest.fixture(scope="module")
def multiturn_rollout(tiny_policy, twc_tasks):
    """3 tasks x 2 episodes of the tiny policy in the multi-turn layout, contexts short
    enough that some episodes are truncated into chains of several sequences."""
    from hindsight.envs import make_env
    from hindsight.rollout import RolloutConfig, run_rollouts

    config = RolloutConfig(
        sampling=SamplingConfig(temperature=1.0, max_length=320),
        group_size=2,
        max_parallel=6,
        max_steps=6,
        seed=4,
        progress=False,
        layout="multiturn",
    )
    return run_rollouts(tiny_policy, make_env, twc_tasks, config)


def test_multiturn_rl_update_under_torchrun_equals_one_process(tiny_policy, multiturn_rollout, start_dir, tmp_path):
    """Whole episodes (chains) are striped over the ranks: 6 episodes in mini-batches of
    whole episodes, several micro-batches per rank, weight-0 fillers where the chains do
    not split evenly."""
    samples = multiturn_rollout.samples
    tokenizer = tiny_policy.tokenizer
    old = response_logprobs(tiny_policy.model, samples, 8, tokenizer.pad_token_id)
    first = samples[0].episode_id
    teacher = skill_augmented_logprobs(tiny_policy.model, tokenizer, samples, {first: "Take the object first."}, 8)
    config = dataclasses.replace(RL_CONFIG, mini_batch_size=len(samples) // 2, micro_batch_tokens=700)
    batch = save_rollout_batch(tmp_path / "batch.pt", samples, torch.linspace(-1.0, 1.0, len(samples)), old, teacher, config, seed=3)
    single = run_rl_update(start_dir, batch, tmp_path / "single", parallel=None)
    result = torchrun("rl-update", "--policy", str(start_dir), "--batch", str(batch), "--out", str(tmp_path / "ddp"))
    assert "rank 1 of 2" in result.stderr
    parallel = json.loads((tmp_path / "ddp" / "metrics.json").read_text())
    assert single["losses/opd"] != 0.0 and single["losses/ppo"] != 0.0
    for key in ("losses/ppo", "losses/opd", "losses/total", "losses/grad_norm", "rollout/logprob_gap", "opd/gate_mean"):
        assert parallel[key] == pytest.approx(single[key], rel=1e-4, abs=1e-7), key
    # whole episodes (up to 320 tokens) sum more terms per gradient element than single steps:
    # measured, about 30 of 0.6M weights differ by more than 1e-6, the largest by 13% of a step
    assert_same_weights(
        weights(tmp_path / "single" / "policy"), weights(tmp_path / "ddp" / "policy"), weights(start_dir), config.learning_rate,
        step_fraction=0.25,
    )


def test_multiturn_sft_under_torchrun_equals_one_process(multiturn_rollout, gold_examples, start_dir, tmp_path):
    """Multi-turn sequences (behaviour cloning in the multi-turn layout) and (prompt,
    response) pairs in the same batches, each striped over the ranks."""
    from hindsight.policy.prompts import PromptConfig
    from hindsight.training.episode_sft import multiturn_examples

    table = multiturn_rollout.table.sort_values(["episode_id", "step"])
    pairs = pd.DataFrame(gold_examples[:6])[["prompt", "response"]]
    examples = pd.concat([multiturn_examples(table, PromptConfig()), pairs], ignore_index=True)
    path = tmp_path / "examples.parquet"
    examples.to_parquet(path)
    settings = tmp_path / "sft.yml"
    settings.write_text(yaml.safe_dump({**SFT_SETTINGS, "turns": {"max_length": 320, "max_new_tokens": 24, "constrained": True}}))
    run_sft(start_dir, path, tmp_path / "single", settings, seed=5, parallel=None)
    result = torchrun("sft", "--policy", str(start_dir), "--examples", str(path), "--settings", str(settings),
                      "--seed", "5", "--out", str(tmp_path / "ddp"))
    assert "multi-turn SFT" in result.stderr and "rank 1 of 2" in result.stderr
    single = pd.read_parquet(tmp_path / "single" / "history.parquet")
    parallel = pd.read_parquet(tmp_path / "ddp" / "history.parquet")
    assert len(single) == len(parallel) == SFT_SETTINGS["max_steps"]
    assert parallel["loss"].tolist() == pytest.approx(single["loss"].tolist(), rel=1e-4)
    assert_same_weights(weights(tmp_path / "single" / "policy"), weights(tmp_path / "ddp" / "policy"), weights(start_dir), SFT_SETTINGS["learning_rate"])


def test_rollout_batch_file_errors_name_the_field(tiny_policy, gold_examples, tmp_path):
    from hindsight.training.torchrun_jobs import load_rollout_batch

    path = rollout_batch(tiny_policy, gold_examples, tmp_path / "batch.pt")
    content = torch.load(path, weights_only=False)
    content["old_logp"] = content["old_logp"][:-1]
    torch.save(content, path)
    with pytest.raises(ValueError, match="'old_logp' has 12 rows, samples has 13"):
        load_rollout_batch(path)


CONF = Path(__file__).resolve().parents[2] / "conf"
RL_OVERRIDES = ["training.rl.updates=1", "training.rl.tasks_per_update=2", "training.rl.group_size=2", "training.rl.algorithm=grpo"]


def test_rl_loop_under_torchrun_shards_the_rollouts(start_dir, tmp_path):
    """The whole loop (conf/test, GRPO, one update of 2 tasks x 2 episodes): each rank plays
    one task group, rank 0 writes a history and rollout table that hold both, the groups a
    one-process run draws."""
    from hindsight.config import rl_setup
    from hindsight.config.files import check_parameters
    from hindsight.rollout.tasks import sample_update_tasks, training_task_pool
    from hindsight.training.torchrun_jobs import project_parameters

    settings = check_parameters(project_parameters(CONF, "test", RL_OVERRIDES))
    seed, rl = settings["project"].seeds.rollouts, settings["training"].rl
    pool = training_task_pool(rl_setup(settings["project"], settings["training"]).pool, rl.task_fraction, seed)
    expected_groups = {task.group_id for task in sample_update_tasks(pool, rl.tasks_per_update, seed, 0)}
    overrides = [argument for override in RL_OVERRIDES for argument in ("--params", override)]
    result = torchrun("rl", "--policy", str(start_dir), "--conf", str(CONF), "--env", "test", *overrides, "--out", str(tmp_path / "ddp"))
    assert result.stderr.count("Rollouts: 2 episodes") == 2  # two ranks, one group of two each
    history = pd.read_parquet(tmp_path / "ddp" / "history.parquet")
    rollout = pd.read_parquet(tmp_path / "ddp" / "last_rollout.parquet")
    assert len(history) == 1 and rollout["episode_id"].nunique() == 4
    assert set(rollout["group_id"]) == expected_groups  # the same tasks, split over the ranks
    assert history.loc[0, "rollout/env_steps"] == len(rollout)
    assert history.loc[0, "rollout/logprob_gap"] < 1e-4
    assert load_policy(tmp_path / "ddp" / "policy", device="cpu").version == 1


def test_tasks_are_sharded_by_whole_groups(twc_tasks):
    """Rank r plays every world-size-th group, all of a group's tasks; too few groups for the
    ranks is a clear error naming the setting."""
    from hindsight.training.data_parallel import DataParallel
    from hindsight.training.rl_parallel import shard_tasks

    tasks = [twc_tasks[0], twc_tasks[1], twc_tasks[0], twc_tasks[2]]  # group 0 twice
    ranks = [DataParallel(rank=rank, world_size=2, device=torch.device("cpu")) for rank in range(2)]
    shares = [shard_tasks(parallel, tasks) for parallel in ranks]
    assert [t.group_id for t in shares[0]] == [twc_tasks[0].group_id, twc_tasks[0].group_id, twc_tasks[2].group_id]
    assert [t.group_id for t in shares[1]] == [twc_tasks[1].group_id]
    with pytest.raises(ValueError, match="tasks_per_update gives 1 task group"):
        shard_tasks(ranks[0], [twc_tasks[0]])


def test_a_hung_launch_is_killed_with_its_ranks_and_names_their_stacks(tmp_path, monkeypatch):
    """``launch`` past its limit: torchrun and both ranks are gone afterwards, and the error
    holds the ranks' stacks (or why they could not be read) and their output."""
    import psutil

    from hindsight.training import torchrun_jobs as distributed

    script = tmp_path / "hang.py"
    # one write per rank: print() writes its parts separately, and two ranks sharing stderr interleaved them
    script.write_text("import os, time\nos.write(2, ('rank %s started\\n' % os.environ['RANK']).encode())\ntime.sleep(600)\n")
    real_popen = subprocess.Popen

    def popen(command, **kwargs):  # the same torchrun, running a script that never ends
        if "torch.distributed.run" in command:
            command = command[: command.index("-m", 3)] + [str(script)]
        return real_popen(command, **kwargs)

    monkeypatch.setattr(distributed.subprocess, "Popen", popen)
    before = {p.pid for p in psutil.process_iter()}
    with pytest.raises(LearnerTimeout, match="did not finish within 20 s") as hung:
        launch([], 2, timeout_s=20, env={"CUDA_VISIBLE_DEVICES": ""})
    assert "rank 1 started" in str(hung.value) and "--- process" in str(hung.value)
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if p.pid not in before and str(script) in " ".join(p.info["cmdline"] or [])]
    assert not leftovers, f"ranks outlived the launch: {leftovers}"
