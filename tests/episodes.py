"""Playing real environments in tests (imported by the test modules and conftests):
a list of actions until the episode ends, and every step of N gold episodes with its prompt."""

from __future__ import annotations

from hindsight.envs import make_env
from hindsight.envs.base import EnvironmentSpec
from hindsight.policy.prompts import PromptConfig, build_prompt


def play(env, actions) -> list[tuple]:
    """``env.step`` each action in turn, stopping when the episode ends; the step results."""
    results = []
    for action in actions:
        results.append(env.step(action))
        if results[-1][2] or results[-1][3]:
            break
    return results


def gold_steps(spec: EnvironmentSpec, episodes: int, prompt_config: PromptConfig | None = None) -> list[dict]:
    """(prompt, action, valid_actions) of every step of the first ``episodes`` gold episodes
    of the train fold."""
    env = make_env(spec)
    steps = []
    try:
        for seed in env.seeds("train", episodes):
            observation, info = env.reset(seed, "train")
            history = []
            for action in env.gold_actions():
                prompt = build_prompt(info["task"], history, observation, info["valid_actions"], config=prompt_config)
                steps.append({"prompt": prompt, "action": action, "valid_actions": list(info["valid_actions"])})
                history.append((observation, action))
                observation, _, _, _, info = env.step(action)
    finally:
        env.close()
    return steps
