"""A small form that renders its screen (imported by the screenshot, GUI-ingestion and
filmstrip tests): the actions and the text view of the MiniWoB++ environment, drawn with
Pillow on a 160 x 210 page.

Task ``seed``: type the word ``WORDS[seed % len(WORDS)]`` into the text field, then click
Submit (or press Enter). The page: an instruction bar, the field (ref 3), Submit (ref 4) and
Cancel (ref 5). Submit with the right word wins; Cancel ends the episode lost; anything else
changes the typed value only. Actions: ``click [ref]``, ``click x y`` (the element under the
point), ``type [ref] "text"`` (the field only) and ``press KEY``; the others are invalid.
The gold path: ``type [3] "<word>"``, ``click [4]``.
"""

from __future__ import annotations

import re

import numpy as np

from hindsight.envs.base import EnvironmentSpec
from hindsight.envs.miniwob.view import Element, render_view
from hindsight.envs.reward import step_reward

from hindsight.envs.base import ToyEnvironment

WIDTH, HEIGHT = 160, 210
WORDS = ("apple", "river", "stone", "cloud")
FIELD, SUBMIT, CANCEL = 3, 4, 5
BOXES = {FIELD: (10, 60, 120, 20), SUBMIT: (10, 95, 60, 22), CANCEL: (80, 95, 60, 22)}
SPEC = EnvironmentSpec("toy_screens", "enter-word", {}, max_steps=4)
_TYPE = re.compile(r'^type \[(-?\d+)\] "((?:[^"\\]|\\.)*)"$')
_CLICK_REF = re.compile(r"^click \[(-?\d+)\]$")
_CLICK_XY = re.compile(r"^click (\d+) (\d+)$")


class FormScreen(ToyEnvironment):
    """The toy form of the module docstring (``screenshot()`` renders the current page)."""

    spec = SPEC

    def __init__(self, spec: EnvironmentSpec | None = None, reward=None) -> None:
        super().__init__(spec)
        self.reward = reward
        self.word, self.value, self.steps, self.over = "", "", 0, False

    def _task(self) -> str:
        return f'Enter "{self.word}" into the text field and press Submit.'

    def _elements(self) -> list[Element]:
        texts = {FIELD: "", SUBMIT: "Submit", CANCEL: "Cancel"}
        tags = {FIELD: "INPUT_text", SUBMIT: "BUTTON", CANCEL: "BUTTON"}
        return [
            Element(ref=ref, parent=2, tag=tags[ref], text=texts[ref], left=box[0], top=box[1], width=box[2],
                    height=box[3], value=self.value if ref == FIELD else None)
            for ref, box in BOXES.items()
        ]

    def _view(self) -> str:
        return render_view(self._task(), self._elements())

    def _info(self, won: bool = False, valid: bool = True) -> dict:
        actions = [f"click [{ref}]" for ref in BOXES] + [f'type [{FIELD}] "{word}"' for word in WORDS]
        view = self._view()
        return {
            "task": self._task(), "task_type": self.spec.game, "valid_actions": actions, "anchor_observation": view,
            "won": won, "action_valid": valid, "score": float(won), "inventory": "",
        }

    def reset(self, seed, split="train"):
        self.word, self.value, self.steps, self.over = WORDS[int(seed) % len(WORDS)], "", 0, False
        return self._view(), self._info()

    def _hit(self, x: int, y: int) -> int | None:
        for ref, (left, top, width, height) in BOXES.items():
            if left <= x < left + width and top <= y < top + height:
                return ref
        return None

    def step(self, action):
        self.steps += 1
        won = valid = False
        ref = None
        if match := _TYPE.match(action):
            if int(match.group(1)) == FIELD:
                self.value, valid = match.group(2).replace('\\"', '"').replace("\\\\", "\\"), True
        elif match := _CLICK_REF.match(action):
            ref = int(match.group(1)) if int(match.group(1)) in BOXES else None
            valid = ref is not None
        elif match := _CLICK_XY.match(action):
            ref = self._hit(int(match.group(1)), int(match.group(2)))
            valid = 0 <= int(match.group(1)) < WIDTH and 0 <= int(match.group(2)) < HEIGHT
        elif action == "press Enter":
            ref, valid = SUBMIT, True
        elif action.startswith("press ") and len(action.split()) == 2:
            valid = True
        if ref == SUBMIT:
            won, self.over = self.value == self.word, self.value == self.word
        elif ref == CANCEL:
            self.over = True
        truncated = not self.over and self.steps >= self.spec.max_steps
        return self._view(), step_reward(won, valid, self.reward), self.over, truncated, self._info(won, valid)

    def gold_actions(self):
        return [f'type [{FIELD}] "{self.word}"', f"click [{SUBMIT}]"]

    def screenshot(self) -> np.ndarray:
        from PIL import Image, ImageDraw

        image = Image.new("RGB", (WIDTH, HEIGHT), "white")
        draw = ImageDraw.Draw(image)
        draw.rectangle((0, 0, WIDTH - 1, 49), fill=(255, 255, 0))
        draw.text((3, 3), f'Enter "{self.word}"', fill="black")
        draw.text((3, 15), "and press Submit.", fill="black")
        for ref, (left, top, width, height) in BOXES.items():
            fill = "white" if ref == FIELD else (225, 225, 225)
            draw.rectangle((left, top, left + width - 1, top + height - 1), fill=fill, outline="black")
        draw.text((BOXES[FIELD][0] + 3, BOXES[FIELD][1] + 4), self.value, fill="black")
        draw.text((BOXES[SUBMIT][0] + 8, BOXES[SUBMIT][1] + 5), "Submit", fill="black")
        draw.text((BOXES[CANCEL][0] + 8, BOXES[CANCEL][1] + 5), "Cancel", fill="black")
        return np.asarray(image)
