"""The screens of SFT examples: a policy that sees gets each step example's screenshot from the
screenshots table, by (``episode_id``, ``step``), when its samples are built.

No examples table carries image bytes (``bc_examples``, ``stage1_examples`` and the teacher
fit's pairs hold the step's ``episode_id`` and ``step``, the key of the catalog's
``screenshots`` dataset, ``hindsight.data.screenshots``); ``train_sft`` joins the screens in
here, for a vision policy only (a text policy never reads them). Every example is a step
whose screen the policy must see, except the analyzer's pairs (kind ``analyzer``: an
analysis prompt over a whole episode's text, not a step), which stay text-only. A step
example without its screen is refused, naming the row, its kind, its episode and step and
the table searched: a policy that sees never trains silently on a step without its image.

``screens_of_samples`` makes such a table (in memory) of rollout step samples that carry
their screens (``StepSample.image``): the teacher fit trains on steps the policy just played.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from hindsight.data.screenshots import screen_of_row, screenshot_row, screenshot_table
from hindsight.policy.encoding import StepSample

TEXT_ONLY_KINDS = ("analyzer",)
"""Example kinds that are not steps of an episode: no screen is read for them."""

_HINTS = {
    "own_skill_bc": (
        "these steps come from the skills stage's rollouts, whose screens are not kept in the catalog: "
        "set stage1.own_rollout_repeat: 0 for a policy that sees"
    ),
}


def _is_missing(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value))


def example_screens(examples: pd.DataFrame, screens: pd.DataFrame | None, origin: str = "screenshots") -> list[np.ndarray | None]:
    """Per row of an SFT examples table, the screen of its step (an RGB ``uint8`` array; rows
    of one step share one array), None for the rows of ``TEXT_ONLY_KINDS``.

    Args:
        examples: The examples (columns ``episode_id`` and ``step`` for the step rows; an
            optional ``kind``).
        screens: A screenshot table (``SCREENSHOT_COLUMNS``), e.g. the catalog's
            ``screenshots``; None reads as an empty one.
        origin: The name of ``screens`` in the messages (the catalog dataset).

    Raises:
        ValueError: A step row has no key (no ``episode_id``/``step`` column, or an empty
            one) or no screen in ``screens``; the message names the row, its kind, its
            episode and step and ``origin``.
    """
    kinds = examples["kind"].tolist() if "kind" in examples else [None] * len(examples)
    steps = [position for position, kind in enumerate(kinds) if kind not in TEXT_ONLY_KINDS]
    if steps and not {"episode_id", "step"} <= set(examples.columns):
        raise ValueError(
            f"SFT of a policy that sees: the examples have no 'episode_id' and 'step' columns, so no step's screen can be "
            f"found in '{origin}' ({len(steps)} step examples); rebuild them with their keys"
        )
    index = {}
    if screens is not None:
        for position, (episode, step) in enumerate(zip(screens["episode_id"].astype(str), screens["step"])):
            index[(episode, int(step))] = position
    arrays: dict[int, np.ndarray] = {}
    out: list[np.ndarray | None] = [None] * len(examples)
    missing = []
    for position in steps:
        episode, step = examples["episode_id"].iloc[position], examples["step"].iloc[position]
        found = None if _is_missing(episode) or _is_missing(step) else index.get((str(episode), int(step)))
        if found is None:
            missing.append(position)
            continue
        if found not in arrays:
            row = screens.iloc[found]
            arrays[found] = screen_of_row(row["pixels"], row["width"], row["height"]).copy()
        out[position] = arrays[found]
    if missing:
        raise ValueError(_missing_message(examples, kinds, missing, len(steps), origin))
    return out


def _missing_message(examples: pd.DataFrame, kinds: list, missing: list[int], steps: int, origin: str) -> str:
    first = missing[0]
    kind = kinds[first]
    where = (
        f"row {first} (kind {kind!r}, episode {examples['episode_id'].iloc[first]!r} step {examples['step'].iloc[first]})"
    )
    if len(missing) == steps:
        message = (
            f"SFT of a policy that sees: '{origin}' holds no screen of any of the {steps} step examples (first: {where}). "
            f"A policy that sees trains on each step's screen: behaviour-clone it on the steps of an environment that "
            f"renders one (environment.env: miniwob, or GUI trajectory files), whose ingestion writes '{origin}', or set "
            "behaviour_cloning.policy.vision: false"
        )
    else:
        message = (
            f"SFT of a policy that sees: {where} has no screen in '{origin}' "
            f"({len(missing)} of the {steps} step examples have none)"
        )
    hint = _HINTS.get(kind)
    return f"{message}; {hint}" if hint else message


def screens_of_samples(samples: Sequence[StepSample]) -> pd.DataFrame:
    """A screenshot table of the step samples that carry a screen (``StepSample.image``),
    keyed by their episode and step (first sample of a key kept)."""
    rows, seen = [], set()
    for sample in samples:
        image = sample.image
        key = (str(sample.episode_id), int(sample.step))
        if image is None or image.screenshot is None or key in seen:
            continue
        seen.add(key)
        rows.append(screenshot_row(key[0], key[1], image.screenshot))
    return screenshot_table(rows)
