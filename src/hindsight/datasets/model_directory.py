"""A versioned Kedro dataset for Hugging Face model directories.

A policy checkpoint is an ordinary HF directory (``config.json``, safetensors weights,
tokenizer files, or a peft adapter directory), written with ``save_pretrained``. Kedro's
built-in datasets hold one file; this one holds a directory and versions it like any other
dataset (``data/06_models/policy/<version>/policy/``).

Writes are atomic (``hindsight.atomic.atomic_directory``): the directory is written to a
temporary sibling and renamed into place only when complete, so an interrupted save never
leaves a half-written checkpoint that a later load would pick up.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from kedro.io.core import AbstractVersionedDataset, DatasetError, Version

from hindsight.atomic import atomic_directory


class ModelDirectoryDataset(AbstractVersionedDataset):
    """Saves a ``hindsight.policy.Policy`` (model + tokenizer) as an HF directory.

    Example catalog entry::

        stage1_policy:
          type: hindsight.datasets.ModelDirectoryDataset
          path: data/06_models/stage1_policy
          versioned: true
    """

    def __init__(
        self,
        *,
        path: str,
        version: Version | None = None,
        load_args: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(filepath=PurePosixPath(Path(path).as_posix()), version=version)
        self._load_args = dict(load_args or {})
        self.metadata = metadata

    def _describe(self) -> dict[str, Any]:
        return {"path": str(self._filepath), "version": self._version}

    def _load(self):
        from hindsight.policy.model import load_policy

        directory = Path(self._get_load_path())
        if not directory.is_dir():
            raise DatasetError(f"No model directory at '{directory}'.")
        return load_policy(directory, **self._load_args)

    def _save(self, policy) -> None:
        from hindsight.policy.model import save_policy

        with atomic_directory(self._get_save_path()) as staging:
            save_policy(policy, staging)

    def _exists(self) -> bool:
        try:
            return Path(self._get_load_path()).is_dir()
        except DatasetError:
            return False
