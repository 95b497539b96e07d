"""A Kedro dataset whose only job is to hand credentials to a node.

Kedro passes credentials to datasets, not to nodes. The OpenAI-compatible teacher needs an
API key, so the catalog has an entry of this type; by default it has no credentials and
loads ``{}``. To use an endpoint, put the key in ``conf/local/credentials.yml`` (never
committed) and point the entry at it in ``conf/local/catalog.yml``::

    # conf/local/credentials.yml
    teacher_api:
      api_key: sk-...

    # conf/local/catalog.yml
    teacher_credentials:
      type: hindsight.datasets.CredentialsDataset
      credentials: teacher_api
"""

from __future__ import annotations

from typing import Any

from kedro.io import AbstractDataset, DatasetError


class CredentialsDataset(AbstractDataset[None, dict]):
    """Loads the credentials dictionary it was given (read-only)."""

    def __init__(self, *, credentials: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None) -> None:
        self._credentials = dict(credentials or {})
        self.metadata = metadata

    def _load(self) -> dict[str, Any]:
        return dict(self._credentials)

    def _save(self, data: None) -> None:
        raise DatasetError("CredentialsDataset is read-only")

    def _describe(self) -> dict[str, Any]:
        return {"keys": sorted(self._credentials)}  # never the values
