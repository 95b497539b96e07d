"""Write a directory so that it appears whole under its final name, or not at all.

The model-directory dataset and the training checkpoints both write a directory of several
files (weights, tokenizer, optimizer state). A process killed half-way through must not
leave a directory that a later load takes for a complete one. ``atomic_directory`` hands out
an empty staging directory next to the target (``.<name>.partial-<random>``, on the same
file system, so the final rename is atomic); the caller fills it, and only when the block
ends without an error is the staging directory renamed to the target, replacing an older
one. On an error the staging directory is removed and the target is left as it was; an
OS error (disk full, no permission) comes out as ``DirectoryWriteError`` naming the target.
``write_text_atomically`` does the same for one file (the experiment grid's cell summaries).
"""

from __future__ import annotations

import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class DirectoryWriteError(OSError):
    """A directory could not be written; the previous version of it is untouched."""


@contextmanager
def atomic_directory(target: str | Path) -> Iterator[Path]:
    """Yield an empty staging directory that becomes ``target`` when the block succeeds.

    Args:
        target: The directory to (re)write; its parent is created if missing.

    Yields:
        The staging directory to write into (a hidden sibling of ``target``).

    Raises:
        DirectoryWriteError: An OS error while writing (disk full, not writable).
    """
    target = Path(target)
    staging = target.parent / f".{target.name}.partial-{uuid.uuid4().hex[:8]}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging.mkdir()
    except OSError as error:
        raise DirectoryWriteError(f"cannot write '{target}': {error}") from error
    try:
        yield staging
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except DirectoryWriteError:
        raise
    except OSError as error:
        raise DirectoryWriteError(
            f"writing '{target}' failed ({error}); nothing was replaced: its previous version, if any, is intact"
        ) from error
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def write_text_atomically(target: str | Path, text: str) -> None:
    """Write ``text`` to ``target`` so that a reader sees the old file or the new one, never a
    part: a hidden sibling is written and flushed, then renamed over ``target``.

    Raises:
        DirectoryWriteError: An OS error while writing; ``target`` is left as it was.
    """
    target = Path(target)
    staging = target.parent / f".{target.name}.partial-{uuid.uuid4().hex[:8]}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(staging, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(staging, target)
    except OSError as error:
        raise DirectoryWriteError(f"writing '{target}' failed ({error}); its previous version, if any, is intact") from error
    finally:
        if staging.exists():
            staging.unlink()
