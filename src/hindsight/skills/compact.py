"""A compact skill language in the policy's own vocabulary (route A: the default run's skills).

A tiny from-scratch policy does not learn to write the long JSON skills of the rule miner
(170-380 tokens after a prompt cut to the last steps), so its analyses never parse. Here a
skill is a short list of abstract action templates (``action_roles.abstract_action``: the
words the policy already reads and writes as actions, objects replaced by their roles):

    do: take <object>; put <object> in <container>           (success: the workflow, in order)
    avoid: eat <object>; look around                         (failure: the first wrong action,
                                                              then at most one warning sign)

- ``compact_skill`` writes it deterministically from an episode: a success takes the rule
  miner's workflow stages (``rule_miner.workflow_stages``) with repeated blocks folded
  ("take, put, take, put" -> "take, put"), a failure its first wrong action (the first
  invalid one, else the first looped one, else the first state-changing action after the last
  progress) and the most repeated looped action as the warning sign. At most
  ``MAX_TEMPLATES`` templates (the last stage of a long workflow is kept).
- ``concrete=True`` (the project's default, ``analyzer.concrete``) keeps the actions as they
  were played (``do: take carrot; slice carrot with knife``): the skill then carries what
  only hindsight knows about this episode (which objects, which order), and the grammar's
  alphabet is the episode's own actions (``episode_templates``), so the analyzer only
  chooses and orders lines it was shown.
- ``compact_analysis_prompt`` shows the WHOLE episode in a few hundred tokens: one line per
  action with a marker where the score rose or the action was rejected.
- ``CompactRuleTeacher`` is the offline teacher of this language; its records go through
  ``parse_skill_json`` like every teacher's.
- What the analyzer is trained to WRITE (``written_skill``) differs from the skill only in
  spacing: each template is followed by " ;" and the text ends with EOS. Every piece then
  starts at a pre-tokenizer boundary of the byte-level BPE (Qwen2 split regex), so the tokens
  of the whole text are the tokens of its pieces one after the other, and no template piece
  is a token prefix of another; ``skills.compact_decoding`` chooses exactly these pieces.
"""

from __future__ import annotations

import logging
import re
from typing import Iterable, Sequence

from hindsight.policy.prompts import one_line
from hindsight.skills.action_roles import abstract_action, is_information_action, task_words
from hindsight.skills.analysis_prompt import skill_target_json
from hindsight.skills.episode_views import EpisodeView
from hindsight.skills.records import SkillRecord, record_from_output
from hindsight.skills.rule_miner import fold_repeats, loop_actions, progress_flags, workflow_step_indices
from hindsight.skills.teachers import Teacher

logger = logging.getLogger(__name__)

DO_HEAD = "do:"
"""Head of a success skill (a workflow)."""
AVOID_HEAD = "avoid:"
"""Head of a failure skill (an avoidance rule)."""
SKILL_HEADS = (DO_HEAD, AVOID_HEAD)
TEMPLATE_SEPARATOR = "; "
"""Between two templates of a skill."""
WRITTEN_TEMPLATE_END = " ;"
"""After each template in the written form (see the module docstring)."""
MAX_TEMPLATES = 7
"""Most templates in one skill (a one-ingredient recipe has 7 stages). Measured on the default
games. 120 expert episodes and 40 random failures (docs/journal/2026-12-01-compact-skills-route-a.md) with a
tokenizer trained on the texts the policy reads and writes, compact skills included: skills
17 tokens on average, 30 at most (the written form with EOS: 21, 36 at most). A tokenizer
trained on the step prompts only splits the roles ("<object>") into bytes: about 2x longer."""
MAX_AVOID_TEMPLATES = 2
"""A failure skill: the first wrong action and at most one warning sign."""

FAILURE_MARK = "episode_success: failure"
"""The outcome line of a failed episode's compact analysis prompt."""
SUCCESS_SUMMARY = "success"
FAILURE_SUMMARY = "failure"

COMPACT_INTRODUCTION = "Write the skill of this finished episode."
COMPACT_STEPS_HEADER = "Actions (+ score rose, ! invalid):"
COMPACT_INSTRUCTION = (
    'Answer "do: action; action" with the actions that made it work, in order, after a success, '
    'or "avoid: mistake; warning sign" after a failure; name objects by role, like <object>.'
)
DEFAULT_MAX_TASK_CHARS = 240
"""Cap on the task line of the compact analysis prompt."""
DEFAULT_MAX_OBSERVATION_CHARS = 100
"""Cap on the first observation shown."""
DEFAULT_MAX_ACTION_CHARS = 60
"""Cap on one action line."""

_SKILL_PATTERN = re.compile(r"^\s*(do:|avoid:)(.*)$", re.DOTALL)


def fold_stages(stages: Sequence[str]) -> list[str]:
    """Stages with consecutive repeats of blocks of 1 to 3 stages kept once, folded again
    until nothing changes ([take, put, take, take, put] -> [take, put, take, put] -> [take, put]).

    Args:
        stages: Abstract actions in order, e.g. [take, put, take, put].

    Returns:
        The folded list, e.g. [take, put].
    """
    folded, previous = list(stages), None
    while folded != previous:
        previous = folded
        folded = [stage for block, _ in fold_repeats(previous) for stage in block]
    return folded


def limit_templates(templates: Sequence[str], max_templates: int) -> list[str]:
    """At most ``max_templates`` templates: the first ones and the last (the step that won)."""
    if max_templates < 1:
        raise ValueError(f"max_templates must be positive, got {max_templates}")
    templates = list(templates)
    if len(templates) <= max_templates:
        return templates
    return templates[: max_templates - 1] + templates[-1:]


def concrete_action(action: str) -> str:
    """An action as a concrete template: lower case, single spaces, no template separator."""
    return " ".join(action.lower().replace(";", ",").split())


def _template(action: str, literal: set[str], concrete: bool) -> str:
    return concrete_action(action) if concrete else abstract_action(action, literal)


def workflow_templates(episode: EpisodeView, max_templates: int = MAX_TEMPLATES, concrete: bool = False) -> list[str]:
    """The templates of a success skill: the rule miner's workflow stages, folded and limited.

    Args:
        episode: A finished, successful episode.
        max_templates: Most templates.
        concrete: Keep the actions as they were played (``concrete_action``) instead of
            abstracting their objects to roles.
    """
    literal = task_words(episode.task)
    steps = list(episode.steps)
    stages = fold_stages([_template(steps[index].action, literal, concrete) for index in workflow_step_indices(episode)])
    if not stages:  # e.g. the winning action was rejected: fall back to the last action
        stages = [_template(steps[-1].action, literal, concrete)]
    return limit_templates(stages, max_templates)


def avoidance_templates(episode: EpisodeView, concrete: bool = False) -> list[str]:
    """The templates of a failure skill: the first wrong action, then the most repeated
    looped action when its template differs (the warning sign); ``concrete`` as in
    ``workflow_templates``."""
    steps = list(episode.steps)
    flags = progress_flags(steps)
    literal = task_words(episode.task)
    loops = [action for action, _ in loop_actions(steps, flags)]
    invalid = [step.action for step in steps if not step.action_valid]
    if invalid:
        mistake = invalid[0]
    elif loops:
        mistake = next(step.action for step in steps if " ".join(step.action.lower().split()) in loops)
    else:
        last_progress = max((index for index, flag in enumerate(flags) if flag), default=-1)
        after = steps[last_progress + 1 :] or steps[-1:]
        mistake = next((step.action for step in after if not is_information_action(step.action)), after[0].action)
    templates = [_template(mistake, literal, concrete)]
    for action in loops:
        template = _template(action, literal, concrete)
        if template not in templates:
            templates.append(template)
            break
    return templates[:MAX_AVOID_TEMPLATES]


def outcome_head(success: bool) -> str:
    """The head of an episode's skill: "do:" after a success, "avoid:" after a failure."""
    return DO_HEAD if success else AVOID_HEAD


def render_skill(head: str, templates: Sequence[str]) -> str:
    """The skill text: ``"do: T1; T2"`` (the head alone when there is no template)."""
    if head not in SKILL_HEADS:
        raise ValueError(f"unknown skill head {head!r}; expected one of {SKILL_HEADS}")
    return f"{head} {TEMPLATE_SEPARATOR.join(templates)}".strip()


def compact_skill(episode: EpisodeView, max_templates: int = MAX_TEMPLATES, concrete: bool = False) -> str:
    """The compact skill of a finished episode (deterministic).

    Args:
        episode: A finished episode with at least one step.
        max_templates: Most templates (a failure skill has at most two).
        concrete: Templates are the episode's own actions (``concrete_action``), not roles.

    Returns:
        ``"do: T1; ...; Tk"`` for a success, ``"avoid: T1[; T2]"`` for a failure.

    Raises:
        ValueError: The episode has no step.
    """
    if not episode.steps:
        raise ValueError(f"episode {episode.episode_id!r} has no step to write a skill from")
    if episode.success:
        return render_skill(outcome_head(True), workflow_templates(episode, max_templates, concrete))
    return render_skill(AVOID_HEAD, limit_templates(avoidance_templates(episode, concrete), max_templates))


def parse_compact_skill(skill: str) -> tuple[str, list[str]] | None:
    """Read a compact skill back into its head and templates.

    Args:
        skill: A skill text, e.g. ``"do: take <object>; put <object> in <container>"``; the
            written form (" ;" after each template) reads the same.

    Returns:
        (head, templates), or None when the text does not start with a head.
    """
    match = _SKILL_PATTERN.match(skill or "")
    if match is None:
        return None
    templates = [" ".join(part.split()) for part in match.group(2).split(";")]
    return match.group(1), [template for template in templates if template]


def skill_lists_action(skill: str, action: str) -> bool:
    """Whether a compact skill names ``action`` as one of its items (compared as concrete
    templates: case and spacing do not matter); False for a text that is not a compact skill."""
    parsed = parse_compact_skill(skill)
    return parsed is not None and concrete_action(action) in {concrete_action(item) for item in parsed[1]}


def written_skill(skill: str) -> str:
    """What the analyzer writes for ``skill`` (its SFT target; EOS is added by the encoder):
    the head, then each template followed by " ;", e.g. ``"do: take <object> ;"``."""
    parsed = parse_compact_skill(skill)
    if parsed is None:
        raise ValueError(f"not a compact skill: {skill!r}")
    head, templates = parsed
    return head + "".join(template_piece(template) for template in templates)


def template_piece(template: str) -> str:
    """One template as the analyzer writes it: a leading space and the " ;" end."""
    return f" {template}{WRITTEN_TEMPLATE_END}"


def skill_summary(skill: str) -> str:
    """The episode summary that goes with a compact skill: "success" or "failure"."""
    parsed = parse_compact_skill(skill)
    return SUCCESS_SUMMARY if parsed is not None and parsed[0] == DO_HEAD else FAILURE_SUMMARY


def compact_skill_json(skill: str) -> str:
    """The teacher output of a compact skill: ``skill_target_json(summary, skill)``."""
    return skill_target_json(skill_summary(skill), skill)


def compact_analysis_prompt(
    episode: EpisodeView,
    *,
    max_task_chars: int = DEFAULT_MAX_TASK_CHARS,
    max_observation_chars: int = DEFAULT_MAX_OBSERVATION_CHARS,
    max_action_chars: int = DEFAULT_MAX_ACTION_CHARS,
) -> str:
    """A short analysis prompt that shows the whole episode.

    Lines: the introduction, the task, ``episode_success: success|failure``, the first
    observation cut short, one line per step ``k. <action>`` with `` +`` where the env's
    progress score rose (or the task was won) and `` !`` where the action was rejected, and
    the instruction.

    Args:
        episode: The episode.
        max_task_chars: Cap on the task text.
        max_observation_chars: Cap on the first observation.
        max_action_chars: Cap on each action.

    Returns:
        The prompt text, ending with a newline.
    """
    steps = list(episode.steps)
    lines = [
        COMPACT_INTRODUCTION,
        f"Task description: {one_line(episode.task, max_task_chars)}",
        FAILURE_MARK if not episode.success else "episode_success: success",
    ]
    if steps:
        lines.append(f"First observation: {one_line(steps[0].observation, max_observation_chars)}")
    lines.append(COMPACT_STEPS_HEADER)
    for number, (step, progressed) in enumerate(zip(steps, progress_flags(steps)), start=1):
        marker = " !" if not step.action_valid else (" +" if progressed else "")
        lines.append(f"{number}. {one_line(step.action, max_action_chars)}{marker}")
    lines.append(COMPACT_INSTRUCTION)
    return "\n".join(lines) + "\n"


def episode_templates(episode: EpisodeView, concrete: bool = True) -> list[str]:
    """The grammar's alphabet for a skill of ``episode``: the templates of its own distinct
    actions (concrete, or abstracted to roles), in the order first played. Every template
    of ``compact_skill(episode, concrete=concrete)`` is among them."""
    literal = task_words(episode.task)
    templates = (_template(step.action, literal, concrete) for step in episode.steps)
    return list(dict.fromkeys(template for template in templates if template))


def skill_vocabulary(episodes: Iterable[EpisodeView], max_templates: int = MAX_TEMPLATES) -> list[str]:
    """The grammar's alphabet: the sorted set of templates in the compact skills of ``episodes``.

    Args:
        episodes: Finished episodes (those without steps are skipped).
        max_templates: As in ``compact_skill``.

    Returns:
        Sorted distinct templates.
    """
    templates: set[str] = set()
    for episode in episodes:
        if episode.steps:
            parsed = parse_compact_skill(compact_skill(episode, max_templates))
            templates.update(parsed[1] if parsed else [])
    return sorted(templates)


class CompactRuleTeacher(Teacher):
    """Deterministic offline teacher of the compact skill language."""

    name = "compact_rule"

    def __init__(self, max_templates: int = MAX_TEMPLATES, concrete: bool = False) -> None:
        """Set the template limit and the kind of template.

        Args:
            max_templates: Most templates per skill.
            concrete: Write the episode's own actions instead of abstract templates.
        """
        self.max_templates = max_templates
        self.concrete = concrete

    def write_skills(self, episodes: Sequence[EpisodeView]) -> list[SkillRecord]:
        """One compact skill per episode, as ``skill_target_json`` through the shared parser.

        Args:
            episodes: Finished episodes.

        Returns:
            One record per episode, in order (an episode without steps gets no skill).
        """
        records = [
            record_from_output(
                episode, compact_skill_json(compact_skill(episode, self.max_templates, self.concrete)) if episode.steps else None, self.name
            )
            for episode in episodes
        ]
        logger.info("compact rule teacher wrote %d skills", len(records))
        return records
