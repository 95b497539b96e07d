"""Filmstrips: an evaluation episode as a row of its screens, each with its action drawn on it.

Evaluation episodes keep no screens (the rollout engine records text). A filmstrip is made
by replaying the episode: a fresh environment of the episode's game is reset to the same
task (``split``, ``seed``: MiniWoB++ instances are seeded) and the recorded actions are
played again, the screen taken before each one. On each frame the action is drawn: the
clicked element's box (from the step's text view, ``hindsight.data.gui_view.element_boxes``)
or the clicked point, the typed text in the box it went to, the pressed key. A replay that
does not see what the episode saw (the environment's ``anchor_observation`` differs from the
recorded one: a task with a timer, say) is said so on the strip, from the first step it
differs.

``write_filmstrips`` draws ``count`` episodes per agent (successes and failures alternating)
as ``<agent>/<episode>.png`` files (the evaluation pipeline logs them to MLflow under
``filmstrips/``). Environments that render no screen (every text family) get none, and no
environment is built for them.
"""

from __future__ import annotations

import importlib
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from hindsight.data.gui_view import element_boxes
from hindsight.envs.base import EnvironmentSpec, TextEnvironment
from hindsight.envs.registry import ENV_FAMILIES

logger = logging.getLogger(__name__)

SCALE = 2
"""Each screen is drawn this many times its size (a 160 x 210 page becomes 320 x 420)."""
CAPTION_LINES = 4
LINE_HEIGHT = 12
GAP = 6
CLICK_COLOUR, TYPE_COLOUR, KEY_COLOUR, DIVERGED_COLOUR = (230, 0, 0), (0, 90, 230), (0, 140, 0), (200, 0, 200)
_REF = re.compile(r"^(?:click|type) \[(-?\d+)\]")
_POINT = re.compile(r"^click (\d+) (\d+)$")
_TYPED = re.compile(r'^type \[-?\d+\] "(.*)"$')


@dataclass
class Frame:
    """One step of a replayed episode: its screen and what was played on it."""

    screen: np.ndarray
    action: str
    view: str
    """The environment's text view of the page (the element boxes are read from it)."""
    diverged: bool = False
    """The replay's page differs from the recorded episode's at this step."""


def renders_screen(spec: EnvironmentSpec) -> bool:
    """Whether the family of ``spec`` can render a screen (its adapter overrides
    ``TextEnvironment.screenshot``), without building an environment."""
    if spec.env not in ENV_FAMILIES:
        return False
    module_name, class_name = ENV_FAMILIES[spec.env]
    adapter = getattr(importlib.import_module(module_name), class_name)
    return adapter.screenshot is not TextEnvironment.screenshot


def replay_frames(env: TextEnvironment, episode: pd.DataFrame) -> list[Frame]:
    """Replay one episode's actions on ``env`` (reset to its task) and take each step's screen.

    Returns:
        One frame per recorded step, or none when the environment renders no screen.
    """
    steps = episode.sort_values("step")
    first = steps.iloc[0]
    view, info = env.reset(int(first["seed"]), str(first["split"]))
    frames: list[Frame] = []
    diverged = False
    for row in steps.itertuples(index=False):
        screen = env.screenshot()
        if screen is None:
            return []
        diverged = diverged or info.get("anchor_observation") != row.anchor_observation
        frames.append(Frame(np.asarray(screen), str(row.action), str(info.get("anchor_observation", view)), diverged))
        view, _, terminated, truncated, info = env.step(str(row.action))
        if terminated or truncated:
            break
    return frames


def _font(size: int):
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def draw_action(frame: Frame):
    """The frame's screen, ``SCALE`` times its size, with its action drawn (a PIL image)."""
    from PIL import Image, ImageDraw

    image = Image.fromarray(frame.screen).convert("RGB")
    image = image.resize((image.width * SCALE, image.height * SCALE), Image.NEAREST)
    draw = ImageDraw.Draw(image)
    action = frame.action
    ref_match, point_match = _REF.match(action), _POINT.match(action)
    if ref_match:
        box = element_boxes(frame.view).get(int(ref_match.group(1)))
        colour = TYPE_COLOUR if action.startswith("type") else CLICK_COLOUR
        if box is not None:
            left, top, width, height = (value * SCALE for value in box)
            draw.rectangle((left, top, left + width - 1, top + height - 1), outline=colour, width=3)
            typed = _TYPED.match(action)
            if typed:
                draw.text((left + 2, top + height + 2), typed.group(1)[:30], fill=colour, font=_font(14))
    elif point_match:
        x, y = (int(value) * SCALE for value in point_match.groups())
        draw.ellipse((x - 7, y - 7, x + 7, y + 7), outline=CLICK_COLOUR, width=3)
        draw.line((x - 11, y, x + 11, y), fill=CLICK_COLOUR, width=1)
        draw.line((x, y - 11, x, y + 11), fill=CLICK_COLOUR, width=1)
    elif action.startswith("press "):
        draw.rectangle((4, image.height - 26, image.width - 5, image.height - 5), fill=(255, 255, 255), outline=KEY_COLOUR, width=2)
        draw.text((10, image.height - 23), action, fill=KEY_COLOUR, font=_font(14))
    return image


def _caption(step: int, frame: Frame, width: int) -> list[str]:
    text = f"{step}: {frame.action}" + ("  (replay differs)" if frame.diverged else "")
    per_line = max(width // 7, 8)
    return [text[start : start + per_line] for start in range(0, len(text), per_line)][:CAPTION_LINES]


def filmstrip(frames: Sequence[Frame], title: str):
    """The frames side by side, each with its action drawn and captioned, under a title line
    (a PIL image)."""
    from PIL import Image, ImageDraw

    if not frames:
        raise ValueError("a filmstrip needs at least one frame")
    drawn = [draw_action(frame) for frame in frames]
    frame_width, frame_height = drawn[0].width, max(image.height for image in drawn)
    title_height, caption_height = LINE_HEIGHT + 2 * GAP, CAPTION_LINES * LINE_HEIGHT + GAP
    strip = Image.new(
        "RGB", (GAP + len(drawn) * (frame_width + GAP), title_height + frame_height + caption_height), (245, 245, 245)
    )
    canvas = ImageDraw.Draw(strip)
    canvas.text((GAP, GAP), title, fill=(0, 0, 0), font=_font(12))
    for index, (frame, image) in enumerate(zip(frames, drawn)):
        left = GAP + index * (frame_width + GAP)
        strip.paste(image, (left, title_height))
        if frame.diverged:
            canvas.rectangle((left - 2, title_height - 2, left + image.width + 1, title_height + image.height + 1), outline=DIVERGED_COLOUR, width=2)
        for line, text in enumerate(_caption(index, frame, frame_width)):
            canvas.text((left, title_height + frame_height + 2 + line * LINE_HEIGHT), text, fill=(0, 0, 0), font=_font(11))
    return strip


def chosen_episodes(episodes: pd.DataFrame, count: int) -> dict[str, list[str]]:
    """Per agent, the ids of ``count`` of its episodes: successes and failures alternating
    (first success, first failure, second success, ...), each in table order."""
    chosen: dict[str, list[str]] = {}
    for agent, rows in episodes.groupby("agent", sort=True):
        won = rows.groupby("episode_id", sort=False)["won"].any()
        successes, failures = [e for e, w in won.items() if w], [e for e, w in won.items() if not w]
        order = [episode for pair in zip(successes, failures) for episode in pair]
        order += successes[len(failures):] + failures[len(successes):]
        chosen[str(agent)] = order[:count]
    return chosen


def _safe_name(episode_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", episode_id).strip("_") or "episode"


def write_filmstrips(
    episodes: pd.DataFrame,
    specs: Sequence[EnvironmentSpec],
    make_env: Callable[[EnvironmentSpec], TextEnvironment],
    count: int,
    folder: Path,
) -> list[Path]:
    """Draw ``count`` episodes per agent (see ``chosen_episodes``) of the games in ``specs``
    that render a screen, as ``folder/<agent>/<episode>.png``; returns the files written."""
    screen_specs = {(spec.env, spec.game): spec for spec in specs if renders_screen(spec)}
    if count <= 0 or not screen_specs or episodes.empty:
        return []
    games = episodes["group_id"].str.split("/").str[:2].str.join("/")
    episodes = episodes[games.isin({f"{env}/{game}" for env, game in screen_specs})]
    envs: dict[tuple[str, str], TextEnvironment] = {}
    written: list[Path] = []
    try:
        for agent, episode_ids in chosen_episodes(episodes, count).items():
            for episode_id in episode_ids:
                rows = episodes[episodes["episode_id"] == episode_id]
                key = tuple(rows["group_id"].iloc[0].split("/")[:2])
                if key not in envs:
                    envs[key] = make_env(screen_specs[key])
                frames = replay_frames(envs[key], rows)
                if not frames:
                    continue
                outcome = "won" if rows["won"].any() else "lost"
                title = f"{agent} | {rows['group_id'].iloc[0]} | {outcome} in {len(rows)} steps | {rows['task'].iloc[0]}"
                path = folder / _safe_name(agent) / f"{_safe_name(episode_id)}.png"
                path.parent.mkdir(parents=True, exist_ok=True)
                filmstrip(frames, title[:160]).save(path)
                written.append(path)
    finally:
        for env in envs.values():
            env.close()
    return written
