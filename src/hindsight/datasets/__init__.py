"""Custom Kedro datasets: a versioned directory dataset for HF models and adapters, and a
credentials holder for the OpenAI-compatible teacher."""

from hindsight.datasets.credentials import CredentialsDataset
from hindsight.datasets.model_directory import ModelDirectoryDataset

__all__ = ["CredentialsDataset", "ModelDirectoryDataset"]
