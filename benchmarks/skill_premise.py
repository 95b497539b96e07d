"""Does a compact skill the policy writes itself help the policy? (route A; prints figures)

SEED's distillation needs two things from the policy: analyses that parse into a skill, and a
skill that, injected into the prompt, makes the right actions likelier (``l_skill > l_plain``).
This measures both for the compact skill language (``hindsight.skills.compact``):

1. Expert episodes (train fold, the project's games) and random-valid-action failures on the
   same training tasks; one compact skill per episode (``CompactRuleTeacher``'s text).
2. A fresh policy (the project's preset; tokenizer trained on the texts it reads and writes,
   compact prompts and skills included) is fine-tuned on a mixture: plain behaviour cloning,
   skill-conditioned behaviour cloning (every expert step with its own episode's skill
   injected), and analyzer pairs (``compact_analysis_prompt`` -> the written skill), 10% of
   the episodes held out from the analyzer pairs.
3. Reported: held-out analyzer parse rate and exact match under grammar decoding, mean skill
   length in tokens, and THE PREMISE CHECK: the policy plays held-out tasks (train-fold seeds
   from ``environment.seen_seed_offset``, never trained on, T=1), writes its own skill for
   each episode under the grammar, and the teacher gap ``l_skill - l_plain`` is averaged over
   the non-forced action tokens (``StepSample.choice_positions``), with the share of tokens
   where it is positive; also with the rule teacher's skill and with an unrelated skill
   (another episode's, of the other game) as references.

Run from the project root (one torch job at a time; about 5 minutes on 2 cores by default):

    python benchmarks/skill_premise.py
    python benchmarks/skill_premise.py --sft-steps 800 --heldout-tasks 20
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "src"))
sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))
os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

from behaviour_cloning_settings import benchmark_settings  # noqa: E402


def training_examples(bc_examples, episodes, skill_of_episode, held_out):
    """The SFT mixture: plain BC, skill-conditioned BC and analyzer pairs (``kind`` column)."""
    import pandas as pd

    from hindsight.skills.compact import compact_analysis_prompt, written_skill
    from hindsight.policy.skill_injection import inject_skill

    skill_bc = bc_examples.assign(
        prompt=[inject_skill(prompt, skill_of_episode[str(episode_id)])
                for prompt, episode_id in zip(bc_examples["prompt"], bc_examples["episode_id"])],
        kind="skill_bc",
    )
    analyzer = pd.DataFrame(
        [
            {"episode_id": episode.episode_id, "prompt": compact_analysis_prompt(episode),
             "response": written_skill(skill_of_episode[episode.episode_id]), "kind": "analyzer"}
            for episode in episodes
            if episode.episode_id not in held_out
        ]
    )
    return pd.concat([bc_examples, skill_bc, analyzer], ignore_index=True)


def teacher_gaps(policy, samples, skill_of_episode) -> list[float]:
    """``l_skill - l_plain`` of every non-forced response token of samples whose episode has a skill."""
    from hindsight.stage1.premise import teacher_gaps as gaps_by_episode

    return [gap for gaps in gaps_by_episode(policy, samples, skill_of_episode).values() for gap in gaps]


def describe_gaps(label: str, gaps: list[float]) -> str:
    """One printed line: mean gap, share positive, token count."""
    if not gaps:
        return f"  {label:<34} no non-forced tokens"
    mean = sum(gaps) / len(gaps)
    positive = sum(gap > 0 for gap in gaps) / len(gaps)
    return f"  {label:<34} mean gap {mean:+.4f} nats, positive on {100 * positive:5.1f}% of {len(gaps)} tokens"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="override a parameter")
    parser.add_argument("--expert-episodes", type=int, default=60, help="expert episodes per game (train fold)")
    parser.add_argument("--random-episodes", type=int, default=20, help="random-agent failures per game")
    parser.add_argument("--sft-steps", type=int, default=500, help="optimizer steps of the SFT mixture")
    parser.add_argument("--heldout-tasks", type=int, default=10, help="held-out tasks per game for the premise check")
    parser.add_argument("--concrete", action="store_true",
                        help="concrete skills: the episode's own actions, chosen among the episode's actions")
    parser.add_argument("--max-templates", type=int, default=None, help="most templates per skill")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: HINDSIGHT_TORCH_THREADS or all)")
    args = parser.parse_args()

    import dataclasses

    from hindsight.envs import make_env
    from hindsight.pipelines.behaviour_cloning.nodes import behaviour_cloning_examples
    from hindsight.pipelines.ingestion.nodes import collect_expert_trajectories
    from hindsight.policy.model import build_policy
    from hindsight.policy.tokenizer import train_tokenizer
    from hindsight.rollout.engine import run_rollouts
    from hindsight.rollout.random_agent import run_random_agent
    from hindsight.rollout.tasks import seen_tasks, split_tasks
    from hindsight.skills import episodes_from_table, parse_skill_json
    from hindsight.skills.compact import (
        MAX_TEMPLATES, CompactRuleTeacher, compact_analysis_prompt, compact_skill, episode_templates, skill_vocabulary,
        written_skill,
    )
    from hindsight.skills.compact_decoding import grammar_skill_outputs
    from hindsight.skills.sft_set import held_out_episodes as choose_held_out

    experts_only = {"ingestion": {"expert_episodes": {"train": args.expert_episodes, "dev": 0, "test": 0}}}
    settings = benchmark_settings(args.set, args.threads, base=experts_only)
    project, warmup = settings["project"], settings["behaviour_cloning"]
    started = time.perf_counter()

    # 1. Episodes and their compact skills.
    experts, _ = collect_expert_trajectories(project, settings["ingestion"])  # (steps, screenshots)
    training_tasks = [task for spec in project.specs() for task in split_tasks(spec, "train", args.random_episodes)]
    randoms = run_random_agent(make_env, training_tasks, prompt=project.rollout.prompt, seed=project.seed).table
    episodes = episodes_from_table(experts) + episodes_from_table(randoms)
    max_templates = args.max_templates or MAX_TEMPLATES
    records = CompactRuleTeacher(max_templates, concrete=args.concrete).write_skills(episodes)
    skill_of_episode = {record.episode_id: record.skill for record in records}
    shared_vocabulary = skill_vocabulary(episodes, max_templates)

    def vocabulary(chosen):
        return [episode_templates(e) for e in chosen] if args.concrete else shared_vocabulary
    held_out = choose_held_out([episode.episode_id for episode in episodes], 0.1, project.seed)

    # 2. Tokenizer, fresh policy, the SFT mixture.
    bc_examples = behaviour_cloning_examples(experts, project)
    examples = training_examples(bc_examples, episodes, skill_of_episode, held_out)
    texts = bc_examples["prompt"].tolist() + bc_examples["response"].tolist() + examples["prompt"].tolist()
    texts += [written_skill(skill) for skill in skill_of_episode.values()]
    tokenizer = train_tokenizer(texts, vocab_size=warmup.policy.vocab_size)
    policy = build_policy(warmup.policy.preset, tokenizer, seed=project.seeds.model)
    sft = dataclasses.replace(warmup.sft, max_steps=args.sft_steps, time_budget_s=None)
    collected = time.perf_counter()
    from hindsight.training.sft import train_sft

    history = train_sft(policy, examples, sft, seed=project.seeds.examples)
    trained = time.perf_counter()

    # 3a. Held-out analyzer: parse rate and exact match under grammar decoding.
    held_out_episodes = [episode for episode in episodes if episode.episode_id in held_out]
    outputs = grammar_skill_outputs(policy, [compact_analysis_prompt(e) for e in held_out_episodes],
                                    vocabulary(held_out_episodes), max_templates)
    parsed = [parse_skill_json(output) for output in outputs]
    exact = [fields is not None and fields["episode_skill"] == compact_skill(episode, max_templates, args.concrete)
             for fields, episode in zip(parsed, held_out_episodes)]
    skill_tokens = [len(tokenizer(skill)["input_ids"]) for skill in skill_of_episode.values()]
    written_tokens = [len(tokenizer(written_skill(skill))["input_ids"]) + 1 for skill in skill_of_episode.values()]
    prompt_tokens = [len(tokenizer(compact_analysis_prompt(episode))["input_ids"]) for episode in episodes]

    # 3b. The premise check on held-out tasks, with the policy's own skill.
    offset = project.environment.seen_seed_offset
    heldout_tasks = [task for spec in project.specs() for task in seen_tasks(spec, args.heldout_tasks, offset)]
    rollout = run_rollouts(policy, make_env, heldout_tasks, project.rollout_config(group_size=1, sampling={"temperature": 1.0}))
    played = episodes_from_table(rollout.table)
    own_outputs = grammar_skill_outputs(policy, [compact_analysis_prompt(episode) for episode in played],
                                        vocabulary(played), max_templates)
    own_skill = {episode.episode_id: parse_skill_json(output)["episode_skill"] for episode, output in zip(played, own_outputs)}
    rule_skill = {episode.episode_id: compact_skill(episode, max_templates, args.concrete) for episode in played}
    other_game = {}
    for index, episode in enumerate(played):
        others = [other for other in played if other.task_type != episode.task_type] or [o for o in played if o is not episode]
        other_game[episode.episode_id] = rule_skill[others[index % len(others)].episode_id] if others else ""
    won = {episode.episode_id for episode in played if episode.success}
    won_samples = [sample for sample in rollout.samples if sample.episode_id in won]
    lost_samples = [sample for sample in rollout.samples if sample.episode_id not in won]
    evaluated = time.perf_counter()

    mean = lambda values: sum(values) / max(len(values), 1)  # noqa: E731
    print(f"settings: {' '.join(args.set) or '(project parameters)'}; preset {warmup.policy.preset}, "
          f"vocab {len(tokenizer)}, max templates {max_templates}, {'concrete' if args.concrete else 'abstract'} skills")
    print(f"episodes: {len(episodes)} ({sum(e.success for e in episodes)} successes), "
          f"shared vocabulary {len(shared_vocabulary)} templates")
    print(f"SFT examples: {examples['kind'].value_counts().to_dict()}, {args.sft_steps} steps, "
          f"loss (last 5 logs) {history['loss'].tail(5).mean():.3f}; set-up {collected - started:.0f} s, "
          f"SFT {trained - collected:.0f} s, evaluation {evaluated - trained:.0f} s")
    print(f"skill length (rule teacher, tokens): mean {mean(skill_tokens):.1f}, max {max(skill_tokens)}; "
          f"written form + EOS mean {mean(written_tokens):.1f}, max {max(written_tokens)}")
    print(f"compact analysis prompt (tokens): mean {mean(prompt_tokens):.0f}, max {max(prompt_tokens)}")
    print(f"held-out analyzer ({len(held_out_episodes)} episodes): parse rate {mean([p is not None for p in parsed]):.3f}, "
          f"exact match {mean(exact):.3f}")
    own_tokens = [len(tokenizer(skill)["input_ids"]) for skill in own_skill.values()]
    print(f"premise check: {len(played)} held-out episodes ({len(won)} won), own skill mean {mean(own_tokens):.1f} tokens, "
          f"own skill == rule skill on {mean([own_skill[k] == rule_skill[k] for k in own_skill]):.3f}")
    for label, skills, samples in [
        ("own skill, all episodes", own_skill, rollout.samples),
        ("own skill, won episodes", own_skill, won_samples),
        ("own skill, lost episodes", own_skill, lost_samples),
        ("rule-teacher skill, all episodes", rule_skill, rollout.samples),
        ("rule-teacher skill, won episodes", rule_skill, won_samples),
        ("rule-teacher skill, lost episodes", rule_skill, lost_samples),
        ("unrelated skill, all episodes", other_game, rollout.samples),
    ]:
        print(describe_gaps(label, teacher_gaps(policy, samples, skills)))
    for episode in played[:4]:
        print(f"  example: {episode.task_type} {'won' if episode.success else 'lost'}: own [{own_skill[episode.episode_id]}] "
              f"rule [{rule_skill[episode.episode_id]}]")


if __name__ == "__main__":
    main()
