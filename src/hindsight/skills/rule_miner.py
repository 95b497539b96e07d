"""The default Stage-1 teacher: a deterministic, offline hindsight rule miner.

It reads an episode's steps and the environment's own progress signals (``score`` going up,
``won``) and writes the same JSON a language-model teacher would, which then goes through
``parse_skill_json`` like every teacher's output.

- Success -> a workflow: the steps that made progress, plus the steps that enabled them (a
  non-informational action whose resulting observation reveals an object the next progress
  step acts on, e.g. "open fridge" before "take pepper"), abstracted to roles with
  ``action_roles.abstract_action`` (words of the task text stay literal), consecutive repeats
  folded ("take <object> (repeat for each one)"), phrased as an ordered rule "do X before Y".
- Failure -> an avoidance rule: the rejected (invalid) actions, loops (an action played
  again and again without progress, an observation that keeps coming back) and where
  progress stopped.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Sequence

from hindsight.skills.action_roles import abstract_action, is_information_action, parse_action_structure, task_words
from hindsight.skills.analysis_prompt import skill_target_json
from hindsight.skills.episode_views import EpisodeView, StepView
from hindsight.skills.records import SkillRecord, record_from_output
from hindsight.skills.teachers import Teacher

logger = logging.getLogger(__name__)

LOOP_MIN_REPEATS = 3
"""An action played (or an observation seen) this many times without progress is a loop."""
MAX_QUOTED_ACTIONS = 3
"""At most this many literal actions are quoted in an avoidance rule."""


def _normalize(text: str) -> str:
    return " ".join(text.lower().split())


def progress_flags(steps: Sequence[StepView]) -> list[bool]:
    """Whether each step made progress: the score rose (from 0 before the first step), or the
    task was won; without a score column, a positive reward counts."""
    flags, previous = [], 0.0
    for step in steps:
        if step.score is None:
            flags.append(step.won or step.reward > 0)
            continue
        flags.append(step.won or step.score > previous + 1e-9)
        previous = step.score
    return flags


def fold_repeats(stages: list[str]) -> list[tuple[tuple[str, ...], int]]:
    """Fold consecutive repeats of blocks of 1 to 3 stages: [a, a, b, c, b, c] -> [(a,), 2], [(b, c), 2]."""
    folded, position = [], 0
    while position < len(stages):
        best_block, best_count = (stages[position],), 1
        for size in (1, 2, 3):
            block = tuple(stages[position : position + size])
            if len(block) < size:
                break
            count = 1
            while tuple(stages[position + count * size : position + (count + 1) * size]) == block:
                count += 1
            if count > 1 and count * size > best_count * len(best_block):
                best_block, best_count = block, count
        folded.append((best_block, best_count))
        position += len(best_block) * best_count
    return folded


def _render_block(block: tuple[str, ...], count: int) -> str:
    text = block[0] if len(block) == 1 else "(" + " -> ".join(block) + ")"
    return f"{text} (repeat for each one)" if count > 1 else text


def workflow_stages(episode: EpisodeView) -> list[str]:
    """The abstract actions of the steps that made or enabled progress, up to the win."""
    literal = task_words(episode.task)
    return [abstract_action(episode.steps[index].action, literal) for index in workflow_step_indices(episode)]


def workflow_step_indices(episode: EpisodeView) -> list[int]:
    """The indices of the steps that made or enabled progress, up to the win: valid steps
    where the score rose, and state-changing steps whose next observation reveals an object
    of the next progress step."""
    steps = list(episode.steps)
    flags = progress_flags(steps)
    last = next((index for index, step in enumerate(steps) if step.won), len(steps) - 1)
    selected = []
    for index in range(last + 1):
        step = steps[index]
        if not step.action_valid:
            continue
        if flags[index]:
            selected.append(index)
            continue
        if is_information_action(step.action):
            continue
        following = next((j for j in range(index + 1, last + 1) if flags[j]), None)
        if following is None:
            continue
        revealed = steps[index + 1].anchor_observation.lower()
        targets = parse_action_structure(steps[following].action).object_phrases
        if any(target and target in revealed for target in targets):
            selected.append(index)
    return selected


def mine_workflow(episode: EpisodeView) -> tuple[str, str]:
    """(summary, skill) of a successful episode."""
    stages = workflow_stages(episode)
    blocks = fold_repeats(stages)
    rendered = [_render_block(block, count) for block, count in blocks]
    progress = sum(progress_flags(episode.steps))
    distinct = list(dict.fromkeys(stages))
    summary = (
        f"Solved the task in {len(episode.steps)} steps, {progress} of them raising the score; "
        f"key actions: {', '.join(distinct) if distinct else 'the final step'}."
    )
    skill = f"Workflow: {' -> '.join(rendered) if rendered else 'act on the task objects directly'}."
    orders = [
        f'do "{blocks[i][0][-1]}" before "{blocks[i + 1][0][0]}"'
        for i in range(len(blocks) - 1)
        if blocks[i][0][-1] != blocks[i + 1][0][0]
    ]
    if orders:
        skill += " Order: " + "; ".join(dict.fromkeys(orders[:4])) + "."
    if any(count > 1 for _, count in blocks):
        skill += " Finish a repeated step for every needed item before moving on."
    return summary, skill


def loop_actions(steps: Sequence[StepView], flags: Sequence[bool]) -> list[tuple[str, int]]:
    counts = Counter(_normalize(step.action) for step, progressed in zip(steps, flags) if not progressed)
    consecutive = {
        _normalize(current.action)
        for previous, current in zip(steps, steps[1:])
        if _normalize(previous.action) == _normalize(current.action)
    }
    loops = [(action, count) for action, count in counts.items()
             if action and (count >= LOOP_MIN_REPEATS or (action in consecutive and count >= 2))]
    return sorted(loops, key=lambda item: (-item[1], item[0]))


def mine_avoidance(episode: EpisodeView) -> tuple[str, str]:
    """(summary, skill) of a failed episode."""
    steps = list(episode.steps)
    flags = progress_flags(steps)
    literal = task_words(episode.task)
    invalid = list(dict.fromkeys(_normalize(step.action) for step in steps if not step.action_valid))
    invalid_count = sum(not step.action_valid for step in steps)
    loops = loop_actions(steps, flags)
    repeated_observation = Counter(_normalize(step.anchor_observation) for step in steps).most_common(1)
    observation_repeats = repeated_observation[0][1] if repeated_observation else 0
    last_progress = max((index for index, flag in enumerate(flags) if flag), default=None)

    avoid, signs, instead = [], [], []
    if invalid:
        quoted = ", ".join(f'"{action}"' for action in invalid[:MAX_QUOTED_ACTIONS])
        avoid.append(f"invalid actions ({quoted} were rejected)")
        signs.append("the environment does not understand or refuses an action")
        instead.append("choose only actions from the valid-action list")
    if loops:
        quoted = ", ".join(f'"{action}" x{count}' for action, count in loops[:MAX_QUOTED_ACTIONS])
        avoid.append(f"repeating actions without progress ({quoted})")
    if loops or observation_repeats >= LOOP_MIN_REPEATS:
        signs.append(f"the same observation comes back (seen {observation_repeats} times)")
        instead.append("when the state repeats, pick an action not yet tried in this state")
    if last_progress is None:
        avoid.append("spending the episode without any progress")
        instead.append("start acting on the task objects early instead of only looking")
        stall = "no step made progress"
    else:
        stage = abstract_action(steps[last_progress].action, literal)
        stalled = len(steps) - last_progress - 1
        stall = f'progress stopped after step {last_progress + 1} ("{stage}")'
        if stalled > 0:
            signs.append(f'no progress for {stalled} steps after "{stage}"')
            instead.append(f'after "{stage}", go on to the next part of the task')
    if not avoid:
        avoid.append("running out of steps")
    summary = (
        f"Failed after {len(steps)} steps: {invalid_count} invalid actions, "
        f"{len(loops)} repeated actions, {stall}."
    )
    skill = "Avoid " + "; ".join(avoid) + "."
    if signs:
        skill += " Warning signs: " + "; ".join(signs) + "."
    if instead:
        skill += " Instead: " + "; ".join(instead) + "."
    return summary, skill


class RuleMinerTeacher(Teacher):
    """Deterministic offline teacher (see the module docstring)."""

    name = "rule_miner"

    def write_skills(self, episodes: Sequence[EpisodeView]) -> list[SkillRecord]:
        """Mine one skill per episode (success: workflow; failure: avoidance rule).

        Args:
            episodes: Finished episodes.

        Returns:
            One record per episode, in order; the JSON text is in ``raw_output``.
        """
        records = []
        for episode in episodes:
            if not episode.steps:
                records.append(record_from_output(episode, None, self.name))
                continue
            summary, skill = mine_workflow(episode) if episode.success else mine_avoidance(episode)
            records.append(record_from_output(episode, skill_target_json(summary, skill), self.name))
        logger.info("rule miner wrote %d skills", len(records))
        return records
