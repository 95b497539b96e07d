"""Policies that see, on the toy GUI game (``tests/toy_gui_env.py``: only the screenshot says
where the target is), for each of the three vision policies (``tests/vision_policies.py``:
a LLaVA-style and a Qwen2-VL-style tiny VLM loaded by ``model_dir`` with LoRA, and the tiny
policy with its screenshot encoder): behaviour cloning on the expert steps lowers the loss
and moves every trainable parameter; a rollout records each step's screenshot and the
sampled tokens' log-probs; those equal the learner's log-probs of the same samples; and the
screenshot reaches every forward (another screen, other log-probs).
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch

from hindsight.policy.encoding import collate
from hindsight.policy.generation import SamplingConfig, generate
from hindsight.policy.logprobs import token_logprobs
from hindsight.policy.vision import screen_image
from hindsight.rollout.engine import RolloutConfig, run_rollouts
from hindsight.rollout.tasks import make_tasks
from hindsight.training.sft import SFTConfig, train_sft

from toy_gui_env import SPEC, SquareScreen
from vision_policies import KINDS, PROMPT, expert_steps, make_policy

ROLLOUT = RolloutConfig(
    sampling=SamplingConfig(temperature=1.0, max_length=512), group_size=2, max_parallel=8, progress=False, seed=3, prompt=PROMPT
)
BC = SFTConfig(learning_rate=2e-2, weight_decay=0.0, batch_size=8, max_steps=30, warmup_ratio=0.0, max_length=512, log_every=1)
"""No weight decay: with AdamW a parameter then moves only if a gradient reached it."""


@pytest.fixture(scope="module", params=KINDS)
def vision_policy(request, tmp_path_factory):
    torch.manual_seed(0)
    return make_policy(request.param, tmp_path_factory.mktemp(request.param))


@pytest.fixture(scope="module")
def played(vision_policy):
    return run_rollouts(vision_policy, SquareScreen, make_tasks(SPEC, "train", range(3)), ROLLOUT)


def test_behaviour_cloning_lowers_the_loss_and_moves_every_trainable_parameter(vision_policy):
    policy = copy.deepcopy(vision_policy)
    before = {name: p.detach().clone() for name, p in policy.model.named_parameters() if p.requires_grad}
    examples, screens = expert_steps(range(8))
    assert len(examples) == 16 and len(screens) == 16 and set(screens["width"]) == set(screens["height"]) == {32}
    history = train_sft(policy, examples, BC, screens=screens)
    first, last = history["loss"].iloc[:3].mean(), history["loss"].iloc[-3:].mean()
    assert last < 0.5 * first, history["loss"].tolist()
    after = dict(policy.model.named_parameters())
    unchanged = [name for name, value in before.items() if torch.equal(value, after[name].detach())]
    assert before and not unchanged
    if policy.is_lora:
        assert all("lora_" in name for name in before)


def test_a_rollout_records_each_steps_screenshot_and_the_sampled_logprobs(played):
    assert len(played.samples) == len(played.table) > 6
    env = SquareScreen()
    for _, episode in played.table.groupby("episode_id", sort=False):
        env.reset(int(episode["seed"].iloc[0]))
        rows = episode.sort_values("step")
        samples = [s for s in played.samples if s.episode_id == rows["episode_id"].iloc[0]]
        assert [s.step for s in samples] == rows["step"].tolist()
        for (_, row), sample in zip(rows.iterrows(), samples):
            assert sample.image is not None and np.array_equal(sample.image.screenshot, env.screenshot())
            assert sample.prompt_ids.count(sample.image.token_id) == sample.image.token_count
            logp = sample.old_logprobs
            assert len(logp) == len(sample.response_ids) and bool(torch.isfinite(logp).all()) and bool((logp <= 0).all())
            assert row["response_logprobs"] == pytest.approx(logp.tolist())
            env.step(row["action"])


def test_the_rollouts_logprobs_equal_the_learners(played, vision_policy):
    batch = collate(played.samples, vision_policy.tokenizer.pad_token_id)
    assert batch.images is not None and len(batch.images) == len(played.samples)
    with torch.no_grad():
        learner = token_logprobs(vision_policy.model, batch)[:, -batch.response_width :]
    gaps = [
        float((row[row.shape[0] - len(sample.response_ids) :] - sample.old_logprobs).abs().max())
        for row, sample in zip(learner, played.samples)
    ]
    assert max(gaps) < 1e-4


def test_the_screenshot_reaches_the_rollout_and_the_learner(played, vision_policy):
    env = SquareScreen()
    env.reset(0)
    blank = screen_image(vision_policy, np.full((32, 32, 3), 200, dtype=np.uint8))
    samples = played.samples[:4]
    other = [dataclasses.replace(sample, image=blank) for sample in samples]
    with torch.no_grad():
        seen = token_logprobs(vision_policy.model, collate(samples, vision_policy.tokenizer.pad_token_id))
        unseen = token_logprobs(vision_policy.model, collate(other, vision_policy.tokenizer.pad_token_id))
    assert float((seen - unseen).abs().max()) > 1e-4

    prompt = samples[0].prompt
    greedy = SamplingConfig(temperature=0.0, max_length=512, constrained=False, max_new_tokens=4)
    with_square, without = generate(
        vision_policy, [prompt, prompt], config=greedy, images=[screen_image(vision_policy, env.screenshot()), blank]
    )
    assert with_square.sample.image is not None and without.sample.image is blank
    assert with_square.sample.response_ids != without.sample.response_ids or not torch.allclose(
        with_square.sample.old_logprobs, without.sample.old_logprobs, atol=1e-5
    )
