"""One SEED update, top to bottom, in one file: ``python examples/seed_update.py`` (seconds on CPU).

SEED (docs/methods.md, docs/fidelity.md) is GRPO plus a gated distillation of the policy
toward itself with its own hindsight skill in the prompt. The library spreads one update
over the layers every method shares; here it is one function per step, on a toy kitchen
game and a freshly built tiny policy, with the loss written out in full:

  1. rollout: the policy plays ``group_size`` episodes of each task (one group per task);
     each step is one sample with its recorded log-probs ``l_old``;
  2. own skill: the policy reads each finished episode and writes a hindsight skill
     (``do: put apple in fridge``, compact language, under a grammar of the episode's actions);
  3. re-score: every sampled response is scored again with its episode's skill in the
     prompt, ``l_skill``;
  4. advantages: GRPO's, the episode return normalised within its group;
  5. the loss, per chosen token, with ``l`` the current log-prob:
       PPO-clip   ``max(-A r, -A clip(r, 1 - eps_low, 1 + eps_high))``, ``r = exp(l - l_old)``,
                  bounded by ``-A c`` where ``A < 0`` (dual clip);
       distill    ``g (l_skill - l)`` with the gate ``g = sigmoid(beta stopgrad(l_skill - l))``;
       entropy    ``-H`` of the policy's distribution at the token;
       KL         ``exp(d) - d - 1``, ``d = l_ref - l`` (the k3 estimate of KL(pi || pi_ref));
     each a mean over its tokens, summed with the weights ``1, opd_coef, entropy_coef, kl_coef``;
  6. the optimizer steps: ``ppo_epochs`` passes over the batch, each cut into shuffled
     mini-batches (one step each), each mini-batch's gradient accumulated over
     micro-batches of at most ``micro_batch_tokens`` padded tokens.

Steps 1-3 call the library (playing, writing skills and scoring log-probs are not the
subject here); steps 4-6 import nothing of it but the policy's forward pass.
tests/examples/test_seed_update.py holds this file to the library's SEED update: the same
batch gives the same advantages, loss terms and weights after the steps.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import pandas as pd
import torch

from hindsight.envs.base import EnvironmentSpec, ToyEnvironment
from hindsight.policy import Policy
from hindsight.policy.encoding import StepSample, collate
from hindsight.policy.generation import SamplingConfig
from hindsight.policy.logprobs import token_logprobs, token_logprobs_and_entropy
from hindsight.policy.model import build_policy
from hindsight.policy.tokenizer import train_tokenizer
from hindsight.rollout.engine import RolloutConfig, run_rollouts
from hindsight.rollout.tasks import make_tasks
from hindsight.skills.analyzers import AnalyzerConfig, policy_teacher
from hindsight.skills.episode_views import episodes_from_table
from hindsight.skills.records import skills_table
from hindsight.training.distillation import has_skill, skill_augmented_logprobs


@dataclass
class Args:
    """The update's settings; in a run they are ``training.rl`` keys (the name in brackets)."""

    tasks: int = 3  # tasks per update [tasks_per_update]
    group_size: int = 4  # episodes per task, one group
    seed: int = 5  # the rollout's sampling seed: 5 gives every group a win and a loss
    learning_rate: float = 1e-3
    ppo_epochs: int = 2  # passes over the batch
    mini_batch_size: int = 16  # step samples per optimizer step
    micro_batch_tokens: int | None = 512  # padded tokens per forward pass (None: the whole mini-batch)
    clip_low: float = 0.2  # eps_low [ppo.clip_low]
    clip_high: float = 0.2  # eps_high [ppo.clip_high]
    dual_clip: float = 3.0  # c [ppo.dual_clip]
    opd_coef: float = 0.5  # [methods.seed.opd_coef]; the library's default 0.01 is too small to see here
    gate_beta: float = 5.0  # beta [methods.seed.gate_beta]
    entropy_coef: float = 0.0  # the entropy bonus (0: off)
    kl_coef: float = 0.01  # the KL to the reference (0: off, no reference pass)
    max_grad_norm: float = 1.0
    std_eps: float = 1e-6  # added to the group's std


# -- 0. a toy world, a tiny policy ----------------------------------------------------------

OBJECTS = [("apple", "fridge"), ("mug", "cupboard"), ("book", "shelf")]


class Kitchen(ToyEnvironment):
    """Task ``seed``: put object ``OBJECTS[seed % 3]`` in its place. Putting it there wins
    (10); eating it loses; anything else does nothing. Actions share their first words,
    so responses differ in how many tokens the policy chose."""

    def reset(self, seed, split="train"):
        self.thing, self.place = OBJECTS[seed % len(OBJECTS)]
        return f"You are in a kitchen. A {self.thing} lies on the table.", self._info(False)

    def step(self, action):
        if action == f"put {self.thing} in {self.place}":
            return f"The {self.thing} is in the {self.place}.", 10.0, True, False, self._info(True)
        if action.startswith("eat"):
            return "That was not the task.", 0.0, True, False, self._info(False)
        return "Nothing happens.", 0.0, False, False, self._info(False)

    def _info(self, won):
        thing, place = self.thing, self.place
        actions = [f"take {thing}", "take knife", f"put {thing} in {place}", f"put {thing} in sink", f"eat {thing}", "look"]
        return {"task": f"Your task is to put the {thing} in the {place}.", "valid_actions": actions, "won": won}

    def gold_actions(self):
        return [f"put {self.thing} in {self.place}"]


SPEC = EnvironmentSpec("toy", "kitchen", {}, max_steps=6)
ANALYZER = AnalyzerConfig()  # compact skills, written under a grammar: every analysis parses


def tiny_policy(seed: int = 0) -> Policy:
    """A byte-level BPE tokenizer trained on the game's texts and the "tiny" preset (~1M
    parameters), freshly initialised: no behaviour cloning, so its play is near random."""
    env = Kitchen(SPEC)
    texts = []
    for task in range(len(OBJECTS)):
        observation, info = env.reset(task)
        texts += [info["task"], observation, *info["valid_actions"], "do: avoid:"]
    return build_policy("tiny", train_tokenizer(texts * 4, vocab_size=400), seed=seed, device="cpu")


@dataclass
class Batch:
    """What the update trains on: one row of ``table`` per step sample."""

    table: pd.DataFrame  # the played steps (episode_id, group_id, reward, won, ...)
    samples: list[StepSample]  # prompt and response ids, the choice mask, the sampled log-probs
    old: list[torch.Tensor]  # l_old per sample: the policy's log-probs of its response while playing
    skills: pd.DataFrame | None = None  # the skill written for each episode
    teacher: list[torch.Tensor | None] | None = None  # l_skill per sample (None: its episode has no skill)
    advantages: torch.Tensor | None = None  # [N]


# -- 1. rollout -------------------------------------------------------------------------------


def rollout(policy: Policy, args: Args = Args()) -> Batch:
    """The policy plays ``group_size`` episodes of each of ``tasks`` tasks at temperature 1
    under constrained decoding (it can only write valid actions). A token the grammar left
    no choice about is forced: ``choice_positions`` marks the ones the policy chose, and
    only those count in the loss."""
    sampling = RolloutConfig(
        sampling=SamplingConfig(temperature=1.0, max_length=512),
        group_size=args.group_size, max_parallel=12, progress=False, seed=args.seed,
    )
    played = run_rollouts(policy, Kitchen, make_tasks(SPEC, "train", range(args.tasks)), sampling)
    old = [torch.as_tensor(sample.old_logprobs, dtype=torch.float32) for sample in played.samples]
    return Batch(table=played.table, samples=played.samples, old=old)


# -- 2. own skill, 3. re-score ----------------------------------------------------------------


def own_skills(policy: Policy, batch: Batch) -> tuple[dict[str, str], float]:
    """The policy, greedy, writes one skill per finished episode (success and failure
    alike); (skill per episode id, parse rate). An episode whose analysis does not parse
    gets no skill: it keeps its RL loss and gets no distillation."""
    skills = skills_table(policy_teacher(policy, ANALYZER).write_skills(episodes_from_table(batch.table)))
    batch.skills = skills
    own = {episode: skill for episode, skill in zip(skills["episode_id"], skills["skill"]) if has_skill(skill)}
    return own, float(skills["parse_ok"].mean())


def rescore(policy: Policy, batch: Batch, skill_of: dict[str, str], args: Args = Args()) -> float:
    """``l_skill``: each sampled response scored with its episode's skill injected into the
    prompt. Returns the teacher gap ``l_skill - l_old`` over the tokens the policy chose
    (SEED's premise: > 0 where the skill makes the played action likelier)."""
    batch.teacher = skill_augmented_logprobs(policy.model, policy.tokenizer, batch.samples, skill_of, args.mini_batch_size)
    gaps = [
        (teacher - old)[torch.tensor(sample.choice_positions)]
        for sample, teacher, old in zip(batch.samples, batch.teacher, batch.old)
        if teacher is not None
    ]
    return float(torch.cat(gaps).mean()) if gaps else float("nan")


# -- 4. advantages ----------------------------------------------------------------------------


def grpo_advantages(batch: Batch, args: Args = Args()) -> torch.Tensor:
    """``A = (S - mean_g) / (std_g + eps)``: ``S`` the sample's episode return, mean and
    (unbiased) std over every step sample of its group, so an episode of T steps counts T
    times; 0 where the group has one sample or no spread. (SEED's release step score is the
    same here: under constrained decoding no action is invalid, so no step has a penalty.)"""
    table = batch.table
    score = table.groupby("episode_id")["reward"].transform("sum").astype("float64")
    group = table["group_id"]
    mean = score.groupby(group).transform("mean")
    std = score.groupby(group).transform("std").fillna(0.0)  # ddof 1; NaN for a group of one
    advantage = ((score - mean) / (std + args.std_eps)).where(std > 0, 0.0)
    batch.advantages = torch.tensor(advantage.to_numpy(), dtype=torch.float32)
    return batch.advantages


# -- 5. the loss ------------------------------------------------------------------------------


def right_aligned(rows: list[torch.Tensor], width: int) -> torch.Tensor:
    """[B, width] with each row at the right end, zeros before it. The prompts are
    left-padded, so every response ends at the last column: this lines a recorded row up
    with the forward pass's response columns."""
    out = torch.zeros(len(rows), width)
    for i, row in enumerate(rows):
        if len(row):
            out[i, width - len(row):] = row
    return out


def micro_batch_loss(
    policy: Policy, reference_model, batch: Batch, rows: list[int], counts: dict[str, float], args: Args
) -> tuple[torch.Tensor, dict[str, float]]:
    """The loss of the samples ``rows`` as their share of the mini-batch's loss: every term
    a sum over this micro-batch's tokens divided by the term's token count over the whole
    mini-batch (``counts``), so the micro-batches' gradients add up to the mini-batch's.
    Returns (the weighted total, each figure's share)."""
    samples = [batch.samples[i] for i in rows]
    tokens = collate(samples, policy.tokenizer.pad_token_id)
    width = tokens.response_width
    if args.entropy_coef:
        logp, entropy = token_logprobs_and_entropy(policy.model, tokens)  # l and H, from one forward pass
        entropy = entropy[:, -width:]
    else:
        logp = token_logprobs(policy.model, tokens)
    logp = logp[:, -width:]  # l: [B, R], with gradient
    mask = tokens.choice_mask[:, -width:].float()  # the tokens the policy chose
    old = right_aligned([batch.old[i] for i in rows], width)
    advantage = batch.advantages[rows].unsqueeze(-1)  # [B, 1]: one per sample, on each of its tokens

    # PPO-clip with the dual clip
    ratio = torch.exp(logp - old)
    unclipped = -advantage * ratio
    clipped = -advantage * torch.clamp(ratio, 1.0 - args.clip_low, 1.0 + args.clip_high)
    ppo = torch.maximum(unclipped, clipped)
    ppo = torch.where(advantage < 0, torch.minimum(ppo, -advantage * args.dual_clip), ppo)

    # the gated distillation: g = sigmoid(beta * stopgrad(l_skill - l)) on the tokens of samples
    # with a skill; the gradient of g * (l_skill - l) with respect to l is -g: l is pulled up by
    # g, hard where the skill makes the token likelier (g > 0.5), weakly where it does not
    has_skill_row = torch.tensor([[batch.teacher[i] is not None] for i in rows], dtype=torch.float32)
    teacher = right_aligned([batch.teacher[i] if batch.teacher[i] is not None else torch.zeros(0) for i in rows], width)
    distilled = mask * has_skill_row
    gap = (teacher - logp).detach()
    gate = torch.sigmoid(args.gate_beta * gap)
    distill = gate * (teacher - logp)

    def share(values: torch.Tensor, where: torch.Tensor, count: float) -> torch.Tensor:  # this part of a token mean
        return (values * where).sum() / max(count, 1.0)

    terms, weights = {"losses/ppo": share(ppo, mask, counts["all"])}, {"losses/ppo": 1.0}
    if counts["distilled"]:
        terms["losses/opd"], weights["losses/opd"] = share(distill, distilled, counts["distilled"]), args.opd_coef
    if args.entropy_coef:  # a bonus: the loss falls as the entropy rises
        terms["losses/entropy"], weights["losses/entropy"] = share(entropy, mask, counts["all"]), -args.entropy_coef
    if args.kl_coef:
        with torch.no_grad():
            reference = token_logprobs(reference_model, tokens)[:, -width:]
        d = torch.clamp(reference - logp, -20.0, 20.0)  # clamped before exp: a finite gradient
        kl = torch.clamp(torch.exp(d) - d - 1.0, -10.0, 10.0)
        terms["kl/ref"], weights["kl/ref"] = share(kl, mask, counts["all"]), args.kl_coef
    total = sum(weights[name] * value for name, value in terms.items())
    with torch.no_grad():
        figures = {name: float(value) for name, value in terms.items()}
        figures["ppo/clipfrac"] = float(share((clipped > unclipped).float(), mask, counts["all"]))
        if counts["distilled"]:
            figures["opd/gate_mean"] = float(share(gate, distilled, counts["distilled"]))
            figures["opd/gate_active_ratio"] = float(share((gap > 0).float(), distilled, counts["distilled"]))
    return total, figures


# -- 6. the optimizer steps -------------------------------------------------------------------


def micro_batches(batch: Batch, rows: list[int], budget: int | None) -> list[list[int]]:
    """The rows sorted by length (little padding), cut so that rows x longest <= budget."""
    chunks: list[list[int]] = []
    for i in sorted(rows, key=lambda i: len(batch.samples[i].input_ids)):
        if chunks and (budget is None or (len(chunks[-1]) + 1) * len(batch.samples[i].input_ids) <= budget):
            chunks[-1].append(i)
        else:
            chunks.append([i])
    return chunks


def token_counts(batch: Batch, rows: list[int]) -> dict[str, float]:
    """How many chosen tokens the mini-batch has: all, and those of samples with a skill."""
    chosen = {i: float(sum(batch.samples[i].choice_positions)) for i in rows}
    return {"all": sum(chosen.values()), "distilled": sum(n for i, n in chosen.items() if batch.teacher[i] is not None)}


def seed_update(
    policy: Policy, reference_model, batch: Batch, optimizer, generator: torch.Generator, args: Args = Args()
) -> dict[str, float]:
    """``ppo_epochs`` passes; each a fresh shuffle of the samples cut into mini-batches of
    ``mini_batch_size``; one optimizer step per mini-batch (gradient clipped to
    ``max_grad_norm``). Returns each figure's mean over the mini-batches that have it."""
    trainable = [p for p in policy.model.parameters() if p.requires_grad]
    sums: dict[str, float] = {}
    seen: dict[str, int] = {}
    policy.model.train()
    for _ in range(args.ppo_epochs):
        order = torch.randperm(len(batch.samples), generator=generator).tolist()
        for start in range(0, len(order), args.mini_batch_size):
            rows = order[start : start + args.mini_batch_size]
            counts = token_counts(batch, rows)
            optimizer.zero_grad(set_to_none=True)
            step: dict[str, float] = {}
            for micro in micro_batches(batch, rows, args.micro_batch_tokens):
                loss, figures = micro_batch_loss(policy, reference_model, batch, micro, counts, args)
                loss.backward()  # the gradients add up over the micro-batches
                for name, value in figures.items():
                    step[name] = step.get(name, 0.0) + value
            step["losses/total"] = step["losses/ppo"] + args.opd_coef * step.get("losses/opd", 0.0) + (
                -args.entropy_coef * step.get("losses/entropy", 0.0) + args.kl_coef * step.get("kl/ref", 0.0)
            )
            step["losses/grad_norm"] = float(torch.nn.utils.clip_grad_norm_(trainable, args.max_grad_norm))
            optimizer.step()
            for name, value in step.items():
                sums[name] = sums.get(name, 0.0) + value
                seen[name] = seen.get(name, 0) + 1
    policy.model.eval()
    return {name: sums[name] / seen[name] for name in sums}


def prepared_batch(policy: Policy, args: Args = Args()) -> tuple[Batch, dict[str, float]]:
    """Steps 1-4: the batch the loss trains on, and the figures of how it was made."""
    batch = rollout(policy, args)
    skill_of, parse_rate = own_skills(policy, batch)
    gap = rescore(policy, batch, skill_of, args)
    advantages = grpo_advantages(batch, args)
    won = batch.table.groupby("episode_id")["won"].any()
    return batch, {
        "rollout/episodes": float(len(won)), "rollout/success_rate": float(won.mean()),
        "rollout/samples": float(len(batch.samples)), "opd/skill_parse_rate": parse_rate, "opd/teacher_gap_mean": gap,
        "opd/distilled_sample_ratio": sum(t is not None for t in batch.teacher) / len(batch.samples),
        "advantages/nonzero_share": float((advantages != 0).float().mean()),
    }


def main(args: Args = Args()) -> None:
    torch.manual_seed(0)
    policy = tiny_policy()
    reference = copy.deepcopy(policy.model).eval().requires_grad_(False)  # the KL reference: the start
    batch, figures = prepared_batch(policy, args)
    skill = next(s for s in batch.skills["skill"] if has_skill(s))
    print(f"1. rollout      {figures['rollout/episodes']:.0f} episodes, {figures['rollout/samples']:.0f} step samples, "
          f"success {figures['rollout/success_rate']:.2f}")
    print(f"2. own skill    parse rate {figures['opd/skill_parse_rate']:.2f}; e.g. {skill!r}")
    print(f"3. re-score     teacher gap l_skill - l_old {figures['opd/teacher_gap_mean']:+.4f}, "
          f"distilled samples {figures['opd/distilled_sample_ratio']:.2f}")
    print(f"4. advantages   non-zero on {figures['advantages/nonzero_share']:.2f} of the samples")
    optimizer = torch.optim.AdamW([p for p in policy.model.parameters() if p.requires_grad], lr=args.learning_rate)
    step = seed_update(policy, reference, batch, optimizer, torch.Generator().manual_seed(0), args)
    print(f"5. gate         mean g {step['opd/gate_mean']:.4f}, share with g > 0.5 {step['opd/gate_active_ratio']:.2f}")
    print(f"   loss         ppo {step['losses/ppo']:+.6f} + {args.opd_coef} x opd {step['losses/opd']:+.5f} "
          f"+ {args.kl_coef} x kl {step['kl/ref']:.5f} = {step['losses/total']:+.5f} (means over the steps)")
    print(f"6. steps        {args.ppo_epochs} epochs of mini-batches of {args.mini_batch_size}: "
          f"clipped tokens {step['ppo/clipfrac']:.3f}, gradient norm {step['losses/grad_norm']:.4f} "
          f"(clipped to {args.max_grad_norm})")


if __name__ == "__main__":
    main()
