"""How one PPO epoch splits a batch of step samples into mini-batches (one optimizer step
each): the plain shuffle, or the ODYSSE episodic sampler (the details of ODYSSE are not public,
this is our reading; docs/fidelity.md, "The schedulers").

- plain: a random permutation of the samples cut into runs of ``size``; the steps of one
  episode land in different mini-batches;
- episodic (ODYSSE): a random permutation of the *episodes*, packed greedily in that order
  into mini-batches of at most ``size`` samples, every episode whole and its steps in
  step order; an episode longer than ``size`` is a mini-batch of its own. Anything
  computed per episode inside a mini-batch (its length T_i, a normalisation over its
  steps, a return over its later steps) then equals the full-batch computation.

Both draw from the trainer's mini-batch generator, once per epoch, so a resumed run
replays the same order.
"""

from __future__ import annotations

from typing import Sequence

import torch


def plain_minibatches(count: int, size: int, generator: torch.Generator) -> list[list[int]]:
    """Sample indices, shuffled, in runs of ``size`` (the last one may be shorter)."""
    order = torch.randperm(count, generator=generator).tolist()
    return [order[start : start + size] for start in range(0, count, size)]


def episodic_minibatches(episode_ids: Sequence[str], size: int, generator: torch.Generator) -> list[list[int]]:
    """ODYSSE: whole episodes per mini-batch (see the module docstring).

    Args:
        episode_ids: [N] the episode of each sample; samples of one episode are taken in
            the order they appear (the trainer's samples are in step order).
        size: Step samples per mini-batch at most (unless one episode alone is longer).
        generator: The trainer's mini-batch generator.

    Returns:
        Lists of sample indices, one per mini-batch, covering every sample once.
    """
    if size < 1:
        raise ValueError(f"mini-batch size must be >= 1, got {size}")
    members: dict[str, list[int]] = {}
    for index, episode in enumerate(episode_ids):
        members.setdefault(episode, []).append(index)
    episodes = list(members.values())
    batches: list[list[int]] = []
    current: list[int] = []
    for position in torch.randperm(len(episodes), generator=generator).tolist():
        episode = episodes[position]
        if current and len(current) + len(episode) > size:
            batches.append(current)
            current = []
        current = current + episode
    if current:
        batches.append(current)
    return batches


def epoch_minibatches(episode_ids: Sequence[str], size: int, generator: torch.Generator, *, episodic: bool) -> list[list[int]]:
    """The mini-batches of one epoch: ``episodic_minibatches`` or ``plain_minibatches``."""
    if episodic:
        return episodic_minibatches(episode_ids, size, generator)
    return plain_minibatches(len(episode_ids), size, generator)


class MinibatchOrder:
    """How an epoch is cut into mini-batches: shuffled samples, or whole episodes when
    ``episodic`` (ODYSSE) or when the samples are whole-episode sequences (multi-turn layout,
    where an episode is one forward pass)."""

    def __init__(self, episodic: bool = False) -> None:
        self.episodic = episodic
        self.name = "episodic" if episodic else "shuffled"

    def split(self, episode_ids: Sequence[str], size: int, generator: torch.Generator, *, multiturn: bool = False) -> list[list[int]]:
        """The mini-batches of one epoch (``epoch_minibatches``)."""
        return epoch_minibatches(episode_ids, size, generator, episodic=self.episodic or multiturn)

    def metrics(self, minibatches: int, epochs: int) -> dict[str, float]:
        """ODYSSE's ``odysse/minibatches_per_epoch``; nothing for the plain shuffle."""
        return {"odysse/minibatches_per_epoch": minibatches / max(epochs, 1)} if self.episodic else {}
