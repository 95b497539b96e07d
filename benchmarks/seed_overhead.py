"""Wall time of one SEED update versus one GRPO update on the same rollout batch.

SEED adds two things to a GRPO update: the policy writes a skill for every finished
episode (greedy generation of up to ``--analyzer-tokens`` tokens from the analysis prompt)
and re-scores every response under the skill-augmented prompt; its loss adds the gated
distillation term. Both updates here start from the same weights and use the same batch
(one rollout of ``--tasks`` x ``--group`` episodes, played once). The rollout itself is
timed separately and reported, since a whole RL iteration pays it in both methods.

With ``--layout multiturn`` the batch is played in the multi-turn layout and both updates
score whole episodes (one forward pass per episode, ``training.episode_batches``); the same
two updates on the same samples scored step by step (one pass per step sample, as the
step-wise layout's trainer does) are timed too, to show what the whole-episode passes save.

Run from the project root (prints its figures; not a test):

    python benchmarks/seed_overhead.py            # small (~4M) policy, 8 tasks x 4 episodes
    python benchmarks/seed_overhead.py --preset tiny --repeats 1
    python benchmarks/seed_overhead.py --layout multiturn
"""

from __future__ import annotations

GROUP = "run-time"
REPRODUCES = (
    "docs/measurements.md#seeds-update-hindsighttraining",
    "docs/scale.md#multi-turn-layout-token-in--token-out-a-kv-cache-per-episode",
)
MEASURED = (
    "run time not given; one update 12 s step-wise, 57 s multi-turn (small policy, one thread of a shared"
    " 2-core machine, CPU not named)"
)
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/scale.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import copy
import dataclasses
import os
import statistics
import time

import torch

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from hindsight.data.expert import collect_expert_trajectories  # noqa: E402
from hindsight.envs import make_env  # noqa: E402
from hindsight.envs.base import EnvironmentSpec  # noqa: E402
from hindsight.methods import MethodContext, build_method  # noqa: E402
from hindsight.training.checkpoint import frozen_copy  # noqa: E402
from hindsight.policy.model import build_policy  # noqa: E402
from hindsight.policy.prompts import PromptConfig, episode_prompts  # noqa: E402
from hindsight.policy.tokenizer import train_tokenizer  # noqa: E402
from hindsight.rollout.engine import RolloutConfig, run_rollouts  # noqa: E402
from hindsight.rollout.tasks import make_tasks  # noqa: E402
from hindsight.training.distillation import skill_augmented_logprobs  # noqa: E402
from hindsight.config import AnalyzerConfig  # noqa: E402
from hindsight.skills.episode_views import episodes_from_table  # noqa: E402
from hindsight.skills.records import skills_table  # noqa: E402
from hindsight.training.batch import RolloutBatch  # noqa: E402
from hindsight.training.rl_config import RLConfig  # noqa: E402
from hindsight.training.update import update_policy  # noqa: E402
from hindsight.policy.generation import SamplingConfig

SPECS = [
    EnvironmentSpec("textworldexpress", "twc", {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}, max_steps=20),
    EnvironmentSpec(
        "textworldexpress", "cookingworld",
        {"numLocations": 1, "numIngredients": 2, "numDistractorItems": 2, "includeDoors": 0, "limitInventorySize": 0},
        max_steps=20,
    ),
]


def build(preset: str, gold_episodes: int = 20):
    expert = collect_expert_trajectories(SPECS, {"train": gold_episodes})
    texts = []
    for _, episode in expert.groupby("episode_id"):
        texts += episode_prompts(episode["task"].iloc[0], episode["observation"].tolist(), episode["action"].tolist(), episode["valid_actions"].tolist())
        texts += episode["action"].tolist()
    return build_policy(preset, train_tokenizer(texts, vocab_size=2048), seed=0)


def one_update(policy, reference, rollout, config: RLConfig, analyzer_tokens: int, max_steps: int) -> tuple[float, float]:
    """Wall and process CPU seconds of one update (everything after the rollout) of ``config.algorithm``."""
    started, cpu_started = time.perf_counter(), time.process_time()
    samples = rollout.samples
    method = build_method(config, MethodContext(analyzer=AnalyzerConfig(max_new_tokens=analyzer_tokens), skill_bank={}))
    method.start(policy)  # SEED: the policy itself writes the skills
    batch = RolloutBatch(table=rollout.table, samples=samples, played=rollout.table)
    batch.record_old_logprobs()
    batch.advantages = method.advantages(batch, config, max_steps)
    if method.uses_skills:
        skills = skills_table(method.teacher.write_skills(episodes_from_table(rollout.table)))
        skill_of = dict(zip(skills["episode_id"], skills["skill"]))
        # An untrained analyzer rarely writes valid JSON; score every episode under its raw
        # output anyway so the timing includes re-scoring the whole batch (the worst case).
        fallback = "take each object to its usual place before anything else"
        skill_of = {e: (s or fallback) for e, s in skill_of.items()}
        batch.teacher_logp = skill_augmented_logprobs(policy.model, policy.tokenizer, samples, skill_of, config.mini_batch_size)
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=config.learning_rate)
    update_policy(policy, reference, optimizer, batch, config, method, torch.Generator().manual_seed(0))
    return time.perf_counter() - started, time.process_time() - cpu_started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="small")
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--analyzer-tokens", type=int, default=96)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gold-episodes", type=int, default=20, help="gold episodes per game for the tokenizer")
    parser.add_argument("--max-steps", type=int, default=SPECS[0].max_steps, help="steps per rollout episode")
    parser.add_argument("--layout", default="stepwise", choices=["stepwise", "multiturn"])
    parser.add_argument("--max-length", type=int, default=1024, help="context + response tokens")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    torch.manual_seed(0)
    policy = build(args.preset, args.gold_episodes)
    reference = frozen_copy(policy.model)
    specs = [dataclasses.replace(spec, max_steps=args.max_steps) for spec in SPECS]
    tasks = [t for spec in specs for t in make_tasks(spec, "train", range(args.tasks // len(specs)))]
    settings = RolloutConfig(
        sampling=SamplingConfig(max_length=args.max_length),
        group_size=args.group,
        progress=False,
        prompt=PromptConfig(),
        layout=args.layout,
    )
    started = time.perf_counter()
    rollout = run_rollouts(policy, make_env, tasks, settings)
    rollout_seconds = time.perf_counter() - started
    grpo = RLConfig(algorithm="grpo", mini_batch_size=64)
    seed = RLConfig(algorithm="seed", mini_batch_size=64)
    runs = [("grpo", grpo, rollout), ("seed", seed, rollout)]
    if args.layout == "multiturn":  # the same samples scored one pass per step
        per_step = dataclasses.replace(rollout, samples=[dataclasses.replace(s, header_length=None) for s in rollout.samples])
        runs += [("grpo per step", grpo, per_step), ("seed per step", seed, per_step)]
    times = {name: [] for name, _, _ in runs}
    cpu = {name: [] for name, _, _ in runs}
    for _ in range(args.repeats):  # interleaved, each from the same starting weights
        for name, config, batch in runs:
            wall, cpu_seconds = one_update(copy.deepcopy(policy), reference, batch, config, args.analyzer_tokens, args.max_steps)
            times[name].append(wall)
            cpu[name].append(cpu_seconds)
    grpo_s, seed_s = statistics.median(times["grpo"]), statistics.median(times["seed"])
    print(
        f"batch: {len(rollout.table)} step samples from {int(rollout.stats['episodes'])} episodes ({args.preset} policy, "
        f"{args.layout} layout, {rollout.stats['mean_prompt_tokens']:.0f} context tokens per step, torch threads "
        f"{torch.get_num_threads()})"
    )
    print(f"rollout (shared by both): {rollout_seconds:.2f} s")
    if args.layout == "multiturn":
        for method in ("grpo", "seed"):
            step_s = statistics.median(times[f"{method} per step"])
            print(
                f"{method.upper()} update scored per step: {step_s:.2f} s; whole episodes: "
                f"{statistics.median(times[method]):.2f} s ({step_s / statistics.median(times[method]):.2f}x faster)"
            )
    print(f"GRPO update: {grpo_s:.2f} s   SEED update: {seed_s:.2f} s   (medians of {args.repeats})")
    print(f"SEED / GRPO, update only:        {seed_s / grpo_s:.2f}x")
    print(f"SEED / GRPO, rollout + update:   {(rollout_seconds + seed_s) / (rollout_seconds + grpo_s):.2f}x  (target <= 1.3x)")
    # process CPU time: what the update computes, less what a shared machine's other jobs add to the wall clock
    grpo_cpu, seed_cpu = statistics.median(cpu["grpo"]), statistics.median(cpu["seed"])
    print(f"CPU time: GRPO update {grpo_cpu:.2f} s   SEED update {seed_cpu:.2f} s   SEED / GRPO {seed_cpu / grpo_cpu:.2f}x")


if __name__ == "__main__":
    main()
