"""The rollout modes ``rollout_throughput.py`` times, and the timing itself (see that
script's docstring). Not a benchmark itself.
"""

from __future__ import annotations

USED_BY = ("rollout_throughput.py", "inference_backends.py")
"""The scripts that import this module (the index, ``benchmarks/README.md``)."""

import time
from typing import Callable

import torch

from hindsight.data.expert import play_gold_episode
from hindsight.envs import make_env
from hindsight.envs.base import EnvironmentSpec
from hindsight.policy.constrained import ActionTrie
from hindsight.policy.encoding import encode_prompt
from hindsight.policy.model import Policy
from hindsight.policy.prompts import PromptConfig, episode_prompts
from hindsight.rollout import RolloutConfig, run_rollouts
from hindsight.rollout.live_episode import Episode
from hindsight.rollout.tasks import TaskRef

from rollout_flops import ModelShape, TokenCounter, rollout_flops

Run = Callable[[Policy, list[TaskRef], RolloutConfig], dict[str, float]]


def twc_spec(max_steps: int) -> EnvironmentSpec:
    """TextWorldExpress twc, one room, two items to put away, no doors."""
    return EnvironmentSpec("textworldexpress", "twc", {"numLocations": 1, "numItemsToPutAway": 2, "includeDoors": 0}, max_steps=max_steps)


def gold_texts(spec: EnvironmentSpec, episodes: int, prompt: PromptConfig) -> list[str]:
    """Prompts and actions of ``episodes`` gold episodes (the tokenizers' training text)."""
    env = make_env(spec)
    texts = []
    try:
        for seed in env.seeds("train", episodes):
            rows = play_gold_episode(env, spec, "train", seed)
            actions = [row["action"] for row in rows]
            prompts = episode_prompts(
                rows[0]["task"], [row["observation"] for row in rows], actions, [row["valid_actions"] for row in rows], prompt
            )
            texts += [text for pair in zip(prompts, actions) for text in pair]
    finally:
        env.close()
    return texts


def run_engine(policy: Policy, tasks: list[TaskRef], config: RolloutConfig) -> dict[str, float]:
    """Play the tasks with the engine: env steps, generated tokens, mean context tokens per
    step, contexts re-read after truncation, seconds generating and in the environment."""
    stats = run_rollouts(policy, make_env, tasks, config).stats
    return {
        "steps": stats["steps"],
        "tokens": stats["generated_tokens"],
        "context": stats["mean_prompt_tokens"],
        "reprefills": stats["context_reprefills"],
        "generation_seconds": stats["generation_seconds"],
        "env_seconds": stats["env_seconds"],
    }


def run_hf_generate(policy: Policy, tasks: list[TaskRef], config: RolloutConfig) -> dict[str, float]:
    """The textbook loop: one episode at a time, ``model.generate`` per step restricted by
    ``prefix_allowed_tokens_fn`` to the same action trie (records no log-probs)."""
    model, tokenizer = policy.model, policy.tokenizer
    steps = tokens = 0
    for task in tasks:
        for member in range(config.group_size):
            env = make_env(task.spec)
            episode = Episode(f"hf/{task.group_id}/{member}", task, env, config.max_steps, config.prompt)
            episode.start()
            while not episode.done:
                trie = ActionTrie.from_actions(tokenizer, episode.valid_actions)
                prompt_ids = torch.tensor([encode_prompt(tokenizer, episode.prompt())])
                start = prompt_ids.shape[1]
                with torch.no_grad():
                    output = model.generate(
                        prompt_ids,
                        attention_mask=torch.ones_like(prompt_ids),
                        max_new_tokens=trie.depth,
                        do_sample=True,
                        temperature=config.sampling.temperature,
                        top_k=0,
                        prefix_allowed_tokens_fn=lambda _, ids: trie.allowed(ids[start:].tolist()) or [tokenizer.eos_token_id],
                        eos_token_id=tokenizer.eos_token_id,
                        pad_token_id=tokenizer.pad_token_id,
                    )
                response = output[0, start:].tolist()
                action = trie.action_for(response) or tokenizer.decode(response, skip_special_tokens=True)
                episode.play(action, action, source="rollout", policy_version=0)
                steps += 1
                tokens += len(response)
            env.close()
    return {"steps": steps, "tokens": tokens}


def timed(run: Run, policy: Policy, tasks: list[TaskRef], config: RolloutConfig, shape: ModelShape) -> dict[str, float]:
    """Run one mode; return its figures plus env steps/s, generated tokens/s, wall seconds,
    CPU share, env steps per CPU second and the model FLOPs (``rollout_flops``)."""
    with TokenCounter(policy.model) as counter:
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        stats = run(policy, tasks, config)
        wall, cpu = time.perf_counter() - wall_start, time.process_time() - cpu_start
    steps, counts = stats["steps"], counter.counts
    flops = rollout_flops(shape, counts, int(stats["tokens"]))
    stats.update(
        steps_per_s=steps / wall,
        tokens_per_s=stats["tokens"] / wall,
        wall=wall,
        cpu=cpu / (wall * torch.get_num_threads()),
        steps_per_cpu_s=steps / cpu,
        flops_per_s=flops / wall,
        flops_per_step=flops / steps,
        positions_per_step=counts.real / steps,
        padding=counts.fed / max(counts.real, 1) - 1,
    )
    if stats.get("generation_seconds"):
        stats["generation_flops_per_s"] = flops / stats["generation_seconds"]
    return stats
