"""One SEED update, top to bottom, in one file: ``python examples/seed_update.py`` (seconds on CPU).

The library runs this update in layers, so that every method and scheduler shares them
(``training.rl.train_rl`` -> ``train_on_batch`` -> ``rl_update.update_policy`` ->
``minibatch_step`` -> ``micro_batch_loss_terms`` -> ``methods.seed.SEED.extra_loss_terms`` ->
``algorithms.opd_loss``). Here the same update is one function per step, calling the same
library functions, on a toy kitchen game and a freshly built tiny policy:

  1. rollout: the policy plays ``group_size`` episodes of each task (one group per task);
  2. own skill: the policy reads each finished episode and writes a hindsight skill
     (``do: put apple in fridge``, compact language, under a grammar of the episode's actions);
  3. re-score: every sampled response is scored again with its episode's skill in the
     prompt: ``l_skill`` beside the recorded ``l_old``; the gap ``l_skill - l_old``;
  4. advantages: GRPO's, the episode return normalised within its group;
  5. the gate and the loss: per chosen token, ``g = sigmoid(gate_beta * stopgrad(l_skill - l))``;
     ``PPO-clip + opd_coef * (-g * l) + kl_coef * KL(reference)``, token means;
  6. one optimizer step (AdamW, gradient clipped), as the loop takes it.

It is the library's update in one mini-batch of one pass (``ppo_epochs: 1``, the whole
batch in one mini-batch, ``micro_batch_tokens: null``): tests/examples/test_seed_update.py
checks that the loss here equals ``update_policy``'s for the same batch, and that steps 2-4
equal ``SEED.analyze`` and ``SEED.advantages``.
"""

from __future__ import annotations

import copy

import torch

from hindsight import algorithms
from hindsight.envs.base import EnvironmentSpec, TextEnvironment
from hindsight.methods.seed import SEEDSettings
from hindsight.policy import Policy
from hindsight.policy.encoding import collate
from hindsight.policy.logprobs import token_logprobs
from hindsight.policy.model import build_policy
from hindsight.policy.tokenizer import train_tokenizer
from hindsight.rollout.engine import RolloutConfig, run_rollouts
from hindsight.rollout.tasks import make_tasks
from hindsight.skills.analyzers import AnalyzerConfig, policy_teacher
from hindsight.skills.episode_views import episodes_from_table
from hindsight.skills.records import skills_table
from hindsight.training.batch import RolloutBatch
from hindsight.training.distillation import has_skill, response_logprobs, skill_augmented_logprobs
from hindsight.training.response_tensors import pad_right_aligned
from hindsight.training.method import episode_return_scores
from hindsight.training.rl_config import RLConfig
from hindsight.policy.generation import SamplingConfig

# -- 0. a toy world, the settings, a tiny policy ------------------------------------------

OBJECTS = [("apple", "fridge"), ("mug", "cupboard"), ("book", "shelf")]


class Kitchen(TextEnvironment):
    """Task ``seed``: put object ``OBJECTS[seed % 3]`` in its place. Putting it there wins
    (10); eating it loses; anything else does nothing. Actions share their
    first words, so responses differ in how many tokens the policy chose."""

    def __init__(self, spec: EnvironmentSpec) -> None:
        self.spec = spec

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
        return {"task": f"Your task is to put the {self.thing} in the {self.place}.", "valid_actions": actions, "won": won}

    def gold_actions(self):
        return [f"put {self.thing} in {self.place}"]

    def seeds(self, split, count, offset=0):
        return list(range(offset, offset + count))

    def restart(self):
        pass

    def close(self):
        pass


SPEC = EnvironmentSpec("toy", "kitchen", {}, max_steps=6)
CONFIG = RLConfig(
    algorithm="seed", tasks_per_update=3, group_size=4, learning_rate=1e-3, ppo_epochs=1, mini_batch_size=64,
    micro_batch_tokens=None, kl_coef=0.01, methods={"seed": {"opd_coef": 0.5}},
)
"""One mini-batch of the whole batch, one pass; a larger ``opd_coef`` than the default
(0.01) so the distillation term is visible beside PPO in the printed figures."""
ROLLOUT = RolloutConfig(
    sampling=SamplingConfig(temperature=1.0, max_length=512),
    group_size=CONFIG.group_size,
    max_parallel=12,
    progress=False,
    seed=5,
)
"""Sampled at T = 1; seed 5 gives every group a win and a loss (non-zero advantages)."""
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


# -- 1. rollout ---------------------------------------------------------------------------


def rollout(policy: Policy, config: RLConfig = CONFIG) -> RolloutBatch:
    """The policy plays ``group_size`` episodes of each of ``tasks_per_update`` tasks. Each
    step is one ``StepSample``: prompt and response ids, the decoding mask (which tokens the
    policy chose; forced ones are left out of every loss) and the sampled log-probs ``l_old``."""
    tasks = make_tasks(SPEC, "train", range(config.tasks_per_update))
    played = run_rollouts(policy, Kitchen, tasks, ROLLOUT)
    batch = RolloutBatch(table=played.table, samples=played.samples, played=played.table)
    batch.record_old_logprobs()  # l_old per sample; no teacher yet
    return batch


# -- 2. own skill, 3. re-score ------------------------------------------------------------


def own_skills(policy: Policy, batch: RolloutBatch) -> tuple[dict[str, str], float]:
    """The policy, greedy, writes one skill per finished episode (success and failure
    alike); (skill per episode id, parse rate). An episode whose analysis does not parse
    gets no skill: it keeps its RL loss and gets no distillation."""
    teacher = policy_teacher(policy, ANALYZER)
    skills = skills_table(teacher.write_skills(episodes_from_table(batch.table)))
    batch.skills = skills
    own = {episode: skill for episode, skill in zip(skills["episode_id"], skills["skill"]) if has_skill(skill)}
    return own, float(skills["parse_ok"].mean())


def rescore(policy: Policy, batch: RolloutBatch, skill_of: dict[str, str], config: RLConfig = CONFIG) -> float:
    """``l_skill``: each sampled response scored with its episode's skill injected into the
    prompt (``batch.teacher_logp``; None without a skill). Returns the teacher gap
    ``l_skill - l_old`` over the tokens the policy chose (SEED's premise: > 0 where the
    skill makes the played action likelier)."""
    batch.teacher_logp = skill_augmented_logprobs(policy.model, policy.tokenizer, batch.samples, skill_of, config.mini_batch_size)
    gaps = [
        (teacher - old)[torch.tensor(sample.choice_positions)]
        for sample, teacher, old in zip(batch.samples, batch.teacher_logp, batch.old_logp)
        if teacher is not None
    ]
    return float(torch.cat(gaps).mean()) if gaps else float("nan")


# -- 4. advantages ------------------------------------------------------------------------


def grpo_advantages(batch: RolloutBatch, config: RLConfig = CONFIG) -> torch.Tensor:
    """Each step sample's advantage: its episode's return, normalised over the samples of
    its group (the same task). SEED's default step score (``step_score: release``) is the
    same here: under constrained decoding no action is invalid, so no step has a penalty."""
    scores = episode_return_scores(batch.table)
    batch.advantages = algorithms.group_normalized_advantages(
        scores, batch.table["group_id"].tolist(), std_normalize=config.std_normalize
    )
    return batch.advantages


# -- 5. the gate and the loss ---------------------------------------------------------------


def seed_loss(policy: Policy, reference_model, batch: RolloutBatch, config: RLConfig = CONFIG) -> tuple[torch.Tensor, dict[str, float]]:
    """The SEED loss of the whole batch in one pass (with its gradient), and its figures.

    Token tensors are [B, R], responses right-aligned: a sample's response takes the same
    columns in its plain and its skill-augmented scoring, so ``l`` and ``l_skill`` line up."""
    settings = SEEDSettings(**config.methods.get("seed", {}))
    pad = policy.tokenizer.pad_token_id
    tokens = collate(batch.samples, pad)
    width = tokens.response_width
    logp = token_logprobs(policy.model, tokens)[:, -width:].float()  # l: the current policy, with gradient
    mask = tokens.choice_mask[:, -width:].float()  # the tokens the policy chose
    old = pad_right_aligned(batch.old_logp, width)  # l_old: recorded while playing
    has_teacher = torch.tensor([row is not None for row in batch.teacher_logp], dtype=torch.float32)
    teacher = pad_right_aligned(
        [row if row is not None else torch.zeros(len(s.response_ids)) for row, s in zip(batch.teacher_logp, batch.samples)], width
    )
    distill_mask = mask * has_teacher[:, None]  # only the samples whose episode has a skill

    # PPO-clip (dual clip) on the group-relative advantages
    ppo, ppo_metrics = algorithms.ppo_clip_loss(
        logp, old, batch.advantages, mask,
        clip_low=config.ppo.clip_low, clip_high=config.ppo.clip_high, dual_clip=config.ppo.dual_clip, agg=config.ppo.loss_agg,
    )
    # the gate: g = sigmoid(beta * stopgrad(l_skill - l)); the distillation loss -g * l (plus a
    # constant), so its gradient pulls l up by g: hard where the skill favours the token
    gate = torch.sigmoid(settings.gate_beta * (teacher - logp).detach())
    opd, _ = algorithms.opd_loss(
        logp, teacher, distill_mask, gate_beta=settings.gate_beta, agg=config.ppo.loss_agg, gate=settings.distill_gate
    )
    # the low-variance KL to the reference (the start of RL), on every chosen token
    reference = pad_right_aligned(
        response_logprobs(reference_model, batch.samples, config.mini_batch_size, pad, token_budget=config.micro_batch_tokens), width
    )
    kl = algorithms.aggregate_loss(algorithms.kl_low_var(logp, reference), mask, config.ppo.loss_agg)

    total = ppo + settings.opd_coef * opd + config.kl_coef * kl
    figures = {
        "losses/ppo": float(ppo.detach()), "losses/opd": float(opd.detach()), "kl/ref": float(kl.detach()),
        "losses/total": float(total.detach()), "ppo/clipfrac": float(ppo_metrics["clipfrac"]),
        "opd/gate_mean": float(algorithms.masked_mean(gate, distill_mask)),
        "opd/gate_active_ratio": float(algorithms.masked_mean((gate > 0.5).float(), distill_mask)),
    }
    return total, figures


# -- 6. one optimizer step ------------------------------------------------------------------


def optimizer_step(policy: Policy, reference_model, batch: RolloutBatch, optimizer, config: RLConfig = CONFIG) -> dict[str, float]:
    """Backward, clip the gradient to ``max_grad_norm``, one step."""
    policy.model.train()
    optimizer.zero_grad(set_to_none=True)
    total, figures = seed_loss(policy, reference_model, batch, config)
    total.backward()
    trainable = [p for p in policy.model.parameters() if p.requires_grad]
    figures["losses/grad_norm"] = float(torch.nn.utils.clip_grad_norm_(trainable, config.max_grad_norm))
    optimizer.step()
    policy.model.eval()
    return figures


def prepared_batch(policy: Policy) -> tuple[RolloutBatch, dict[str, float]]:
    """Steps 1-4: the batch the loss trains on, and the figures of how it was made."""
    batch = rollout(policy)
    skill_of, parse_rate = own_skills(policy, batch)
    gap = rescore(policy, batch, skill_of)
    advantages = grpo_advantages(batch)
    won = batch.table.groupby("episode_id")["won"].any()
    return batch, {
        "rollout/episodes": float(len(won)), "rollout/success_rate": float(won.mean()), "rollout/samples": float(len(batch)),
        "opd/skill_parse_rate": parse_rate, "opd/teacher_gap_mean": gap,
        "opd/distilled_sample_ratio": sum(t is not None for t in batch.teacher_logp) / len(batch),
        "advantages/nonzero_share": float((advantages != 0).float().mean()),
    }


def main() -> None:
    torch.manual_seed(0)
    policy = tiny_policy()
    reference = copy.deepcopy(policy.model).eval().requires_grad_(False)  # the KL reference: the start
    batch, figures = prepared_batch(policy)
    skill = next(s for s in batch.skills["skill"] if has_skill(s))
    print(f"1. rollout      {figures['rollout/episodes']:.0f} episodes, {figures['rollout/samples']:.0f} step samples, "
          f"success {figures['rollout/success_rate']:.2f}")
    print(f"2. own skill    parse rate {figures['opd/skill_parse_rate']:.2f}; e.g. {skill!r}")
    print(f"3. re-score     teacher gap l_skill - l_old {figures['opd/teacher_gap_mean']:+.4f}, "
          f"distilled samples {figures['opd/distilled_sample_ratio']:.2f}")
    print(f"4. advantages   non-zero on {figures['advantages/nonzero_share']:.2f} of the samples")
    optimizer = torch.optim.AdamW([p for p in policy.model.parameters() if p.requires_grad], lr=CONFIG.learning_rate)
    step = optimizer_step(policy, reference, batch, optimizer)
    print(f"5. gate         mean g {step['opd/gate_mean']:.4f}, share with g > 0.5 {step['opd/gate_active_ratio']:.2f}")
    print(f"   loss         ppo {step['losses/ppo']:+.6f} + {SEEDSettings(**CONFIG.methods['seed']).opd_coef} x opd "
          f"{step['losses/opd']:+.5f} + {CONFIG.kl_coef} x kl {step['kl/ref']:.5f} = {step['losses/total']:+.5f}")
    print(f"6. step         gradient norm {step['losses/grad_norm']:.4f} (clipped to {CONFIG.max_grad_norm})")


if __name__ == "__main__":
    main()
