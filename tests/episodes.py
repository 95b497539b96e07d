"""Playing real environments in tests (imported by the test modules and conftests):
a list of actions until the episode ends, and every step of N gold episodes with its prompt."""

from __future__ import annotations

from hindsight.data.expert import play_gold_episode
from hindsight.envs import make_env
from hindsight.envs.base import EnvironmentSpec
from hindsight.policy.prompts import PromptConfig, episode_prompts


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
    of the train fold: the ingestion's gold player and the prompts behaviour cloning sees."""
    env = make_env(spec)
    steps = []
    try:
        for seed in env.seeds("train", episodes):
            rows = play_gold_episode(env, spec, "train", seed)
            prompts = episode_prompts(
                rows[0]["task"], [r["observation"] for r in rows], [r["action"] for r in rows],
                [r["valid_actions"] for r in rows], prompt_config,
            )
            steps += [{"prompt": p, "action": r["action"], "valid_actions": r["valid_actions"]} for p, r in zip(prompts, rows)]
    finally:
        env.close()
    return steps
