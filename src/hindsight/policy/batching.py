"""Cutting a set of sequences into forward passes within a padded-token budget: what bounds
the activation memory of SFT, RL updates, scoring and generation, whatever the batch size."""

from __future__ import annotations

from typing import Sequence


def token_budget_chunks(indices: Sequence[int], lengths: Sequence[int], token_budget: int | None) -> list[list[int]]:
    """Cut ``indices`` (in the given order) into consecutive chunks whose padded size
    (rows x longest sequence in the chunk) stays within ``token_budget``; a sequence longer
    than the budget gets a chunk of its own. ``None``: one chunk. Sort the indices by length
    first to waste little padding."""
    indices = list(indices)
    if token_budget is None or not indices:
        return [indices] if indices else []
    chunks: list[list[int]] = []
    longest = 0
    for index in indices:
        length = lengths[index]
        if chunks and (len(chunks[-1]) + 1) * max(longest, length) <= token_budget:
            chunks[-1].append(index)
            longest = max(longest, length)
        else:
            chunks.append([index])
            longest = length
    return chunks


def length_sorted_chunks(lengths: Sequence[int], token_budget: int | None, max_rows: int | None = None) -> list[list[int]]:
    """All indices of ``lengths``, sorted by length (stable) and cut into chunks within
    ``token_budget`` padded tokens and at most ``max_rows`` rows: what a no-grad pass over a
    whole batch wastes least padding with (the order of the results is the caller's to restore)."""
    order = sorted(range(len(lengths)), key=lambda index: lengths[index])
    chunks = token_budget_chunks(order, lengths, token_budget)
    if not max_rows:
        return chunks
    return [chunk[start : start + max_rows] for chunk in chunks for start in range(0, len(chunk), max_rows)]
