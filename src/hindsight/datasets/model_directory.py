"""A versioned Kedro dataset for Hugging Face model directories.

A policy checkpoint is an ordinary HF directory (``config.json``, safetensors weights,
tokenizer files, or a peft adapter directory), written with ``save_pretrained``. Kedro's
built-in datasets hold one file; this one holds a directory and versions it like any other
dataset (``data/06_models/policy/<version>/policy/``).

Writes are atomic (``hindsight.atomic.atomic_directory``): the directory is written to a
temporary sibling and renamed into place only when complete, so an interrupted save never
leaves a half-written checkpoint that a later load would pick up.

``optional: true`` makes a load with no version written yet return None instead of failing:
for an input that a pipeline uses only when its settings ask for it (the experiment grid's
State2State checkpoint and world model, catalog entries ``<name>@optional``), so that the
node that knows whether it is needed can say which command makes it.

``as_path: true`` makes a load return the newest version's directory (a ``Path``) instead of
the loaded policy: for a node that loads it with settings of its own (a LoRA adapter, a
dtype) and for an input that most runs do not use (nothing is read into memory).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from kedro.io.core import AbstractVersionedDataset, DatasetError, Version, VersionNotFoundError

from hindsight.atomic import atomic_directory

if TYPE_CHECKING:
    from hindsight.policy import Policy


class ModelDirectoryDataset(AbstractVersionedDataset):
    """Saves a ``hindsight.policy.Policy`` (model + tokenizer) as an HF directory.

    Example catalog entry::

        stage1_policy:
          type: hindsight.datasets.ModelDirectoryDataset
          path: data/06_models/stage1_policy
          versioned: true

    With ``optional: true`` a load finds None when no version (or no directory) exists; with
    ``as_path: true`` it finds the directory, not the loaded policy.
    """

    def __init__(
        self,
        *,
        path: str,
        version: Version | None = None,
        load_args: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        optional: bool = False,
        as_path: bool = False,
    ) -> None:
        super().__init__(filepath=PurePosixPath(Path(path).as_posix()), version=version)
        self._load_args = dict(load_args or {})
        self.metadata = metadata
        self._optional = optional
        self._as_path = as_path

    def _describe(self) -> dict[str, Any]:
        described = {"path": str(self._filepath), "version": self._version}
        if self._optional:
            described["optional"] = True
        if self._as_path:
            described["as_path"] = True
        return described

    def _load(self):
        from hindsight.policy.model import load_policy

        try:
            directory = Path(self._get_load_path())
        except VersionNotFoundError:
            if self._optional:
                return None
            raise
        if not directory.is_dir():
            if self._optional:
                return None
            raise DatasetError(f"No model directory at '{directory}'.")
        if self._as_path:
            return directory
        return load_policy(directory, **self._load_args)

    def _save(self, policy: Policy) -> None:
        from hindsight.policy.model import save_policy

        with atomic_directory(self._get_save_path()) as staging:
            save_policy(policy, staging)

    def _exists(self) -> bool:
        try:
            return Path(self._get_load_path()).is_dir()
        except DatasetError:
            return False
