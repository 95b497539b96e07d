"""The three vision policies the tests run (imported by ``tests/policy/test_vision_*.py`` and
``tests/training/test_vision_seed_update.py``), and the toy GUI game's expert steps
(the examples and, apart, their screenshot table).

- ``llava``: the LLaVA-style tiny VLM loaded by ``model_dir`` with a fresh LoRA adapter;
- ``qwen2_vl``: the Qwen2-VL-style tiny VLM, the same way (its image processor alone);
- ``screen``: the embedded tiny policy with its screenshot encoder (``vision: true``), saved
  and loaded back by ``model_dir`` as a user's run would.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from hindsight.data.screenshots import screenshot_row, screenshot_table
from hindsight.policy.lora import LoraSettings
from hindsight.policy.model import Policy, build_policy, load_policy, save_policy
from hindsight.policy.prompts import PromptConfig, episode_prompts
from hindsight.policy.tokenizer import train_tokenizer

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


def expert_steps(seeds) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The toy GUI game's gold steps of tasks ``seeds``, as a pipeline holds them: one SFT
    example per step (``episode_id``, ``step``, the step prompt as the rollout builds it with
    ``episode_prompts``, the gold action as ``response``; no pixels) and the screenshot table
    of those steps, keyed by episode and step (``hindsight.data.screenshots``)."""
    env = SquareScreen()
    rows, screens = [], []
    for seed in seeds:
        observation, info = env.reset(seed)
        observations, actions, valid, shots = [], [], [], []
        for action in env.gold_actions():
            observations.append(observation)
            valid.append(info["valid_actions"])
            shots.append(env.screenshot())
            actions.append(action)
            observation, _, _, _, info = env.step(action)
        episode = f"square/{seed}"
        prompts = episode_prompts(info["task"], observations, actions, valid, PROMPT)
        for step, (prompt, action, shot) in enumerate(zip(prompts, actions, shots)):
            rows.append({"episode_id": episode, "step": step, "prompt": prompt, "response": action})
            screens.append(screenshot_row(episode, step, shot))
    return pd.DataFrame(rows), screenshot_table(screens)


def expert_examples(seeds) -> pd.DataFrame:
    """The SFT examples of ``expert_steps`` (their screens left out)."""
    return expert_steps(seeds)[0]
