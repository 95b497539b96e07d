"""The three vision policies the tests run (imported by ``tests/policy/test_vision_*.py`` and
``tests/training/test_vision_seed_update.py``), and the toy GUI game's expert steps.

- ``llava``: the LLaVA-style tiny VLM loaded by ``model_dir`` with a fresh LoRA adapter;
- ``qwen2_vl``: the Qwen2-VL-style tiny VLM, the same way (its image processor alone);
- ``screen``: the embedded tiny policy with its screenshot encoder (``vision: true``), saved
  and loaded back by ``model_dir`` as a user's run would.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from hindsight.policy.lora import LoraSettings
from hindsight.policy.model import Policy, build_policy, load_policy, save_policy
from hindsight.policy.prompts import PromptConfig, episode_prompts
from hindsight.policy.tokenizer import train_tokenizer
from hindsight.policy.vision import SCREENSHOT_COLUMN

from tiny_vlm import llava_dir, qwen2_vl_dir
from toy_gui_env import SquareScreen, texts

KINDS = ("llava", "qwen2_vl", "screen")
LORA = LoraSettings(rank=4, alpha=8, dropout=0.0)
"""No dropout: a forward in train mode equals one in eval mode (exact log-prob comparisons)."""
PROMPT = PromptConfig(history_window=2)


def make_policy(kind: str, directory: Path) -> Policy:
    """The ``kind`` vision policy, loaded from a model directory written under ``directory``."""
    if kind == "llava":
        return load_policy(llava_dir(directory / "llava"), lora=LORA, device="cpu")
    if kind == "qwen2_vl":
        return load_policy(qwen2_vl_dir(directory / "qwen2_vl"), lora=LORA, device="cpu")
    if kind == "screen":
        built = build_policy("tiny", train_tokenizer(texts() * 8, vocab_size=400), seed=0, device="cpu", vision=True)
        return load_policy(save_policy(built, directory / "screen"), device="cpu")
    raise ValueError(kind)


def expert_examples(seeds) -> pd.DataFrame:
    """One SFT example per gold step of the toy GUI game's tasks ``seeds``: the step prompt
    (``episode_prompts``, as the rollout builds it), the gold action and the screenshot."""
    env = SquareScreen()
    rows = []
    for seed in seeds:
        observation, info = env.reset(seed)
        observations, actions, valid, screens = [], [], [], []
        for action in env.gold_actions():
            observations.append(observation)
            valid.append(info["valid_actions"])
            screens.append(env.screenshot())
            actions.append(action)
            observation, _, _, _, info = env.step(action)
        for prompt, action, screen in zip(episode_prompts(info["task"], observations, actions, valid, PROMPT), actions, screens):
            rows.append({"prompt": prompt, "response": action, SCREENSHOT_COLUMN: screen})
    return pd.DataFrame(rows)
