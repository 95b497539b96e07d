"""``ModelDirectoryDataset``: a versioned HF model directory in the catalog. It reloads a
policy with identical logits, and a save that fails half-way leaves no version a later load
could pick up."""

from __future__ import annotations

import pytest
import torch
from kedro.io.core import DatasetError, Version

import hindsight.policy.model as policy_model
from hindsight.datasets import ModelDirectoryDataset
from hindsight.policy.encoding import collate, encode_sample
from hindsight.policy.model import build_policy
from hindsight.policy.tokenizer import train_tokenizer

TEXTS = [
    "Your task is to put the apple in the fridge.\nCurrent observation: You are in the kitchen.",
    "Valid actions: look around | take apple | open fridge",
    "take apple", "open fridge", "put apple in fridge", "look around",
]


@pytest.fixture(scope="module")
def policy():
    return build_policy("tiny", train_tokenizer(TEXTS * 3, vocab_size=320), seed=1, device="cpu")


def logits_of(policy) -> torch.Tensor:
    encoded = [encode_sample(policy.tokenizer, TEXTS[0], action, max_length=256) for action in TEXTS[2:]]
    batch = collate(encoded, pad_token_id=policy.tokenizer.pad_token_id)
    with torch.no_grad():
        return policy.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask).logits


def dataset_at(root) -> ModelDirectoryDataset:
    """A fresh dataset object (no cached versions), newest version on load."""
    return ModelDirectoryDataset(path=str(root / "policy"), version=Version(None, None))


def test_save_and_reload_gives_identical_logits(policy, tmp_path):
    policy.version = 3
    dataset_at(tmp_path).save(policy)
    reloaded = dataset_at(tmp_path).load()
    assert reloaded.version == 3
    assert torch.equal(logits_of(reloaded), logits_of(policy))
    assert reloaded.tokenizer(TEXTS[0])["input_ids"] == policy.tokenizer(TEXTS[0])["input_ids"]


def test_failed_save_leaves_no_partial_version(policy, tmp_path, monkeypatch):
    dataset_at(tmp_path).save(policy)
    (first_version,) = [p.name for p in (tmp_path / "policy").iterdir()]
    real_save = policy_model.save_policy

    def save_then_crash(policy_to_save, directory):
        real_save(policy_to_save, directory)  # everything written ...
        raise OSError("No space left on device")  # ... then the process dies before the end

    monkeypatch.setattr(policy_model, "save_policy", save_then_crash)
    failing = dataset_at(tmp_path)
    with pytest.raises(DatasetError, match="No space left on device"):
        failing.save(policy)
    monkeypatch.undo()

    leftovers = [p for p in (tmp_path / "policy").rglob("*") if ".partial-" in p.name]
    assert not leftovers, leftovers
    complete = [p.name for p in (tmp_path / "policy").iterdir() if (p / "policy").is_dir()]
    assert complete == [first_version]
    reader = dataset_at(tmp_path)
    assert reader.resolve_load_version() == first_version
    assert torch.equal(logits_of(reader.load()), logits_of(policy))


def test_loading_a_missing_version_names_it(tmp_path):
    dataset = ModelDirectoryDataset(path=str(tmp_path / "policy"), version=Version("2026-01-01T00.00.00.000Z", None))
    assert not dataset.exists()
    with pytest.raises(DatasetError, match="2026-01-01T00.00.00.000Z"):
        dataset.load()


def test_an_optional_dataset_loads_none_until_a_version_exists(policy, tmp_path):
    with pytest.raises(DatasetError, match="Did not find any versions"):
        dataset_at(tmp_path).load()  # not optional: the missing model is an error
    optional = ModelDirectoryDataset(path=str(tmp_path / "policy"), version=Version(None, None), optional=True)
    assert optional.load() is None
    dataset_at(tmp_path).save(policy)
    found = ModelDirectoryDataset(path=str(tmp_path / "policy"), version=Version(None, None), optional=True).load()
    assert torch.equal(logits_of(found), logits_of(policy))
