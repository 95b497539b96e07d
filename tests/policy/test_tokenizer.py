"""The locally trained byte-level BPE tokenizer."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from hindsight.policy.tokenizer import EOS_TOKEN, PAD_TOKEN, train_tokenizer

pytestmark = pytest.mark.unit


def test_training_is_deterministic(gold_steps):
    texts = [step["prompt"] for step in gold_steps[:20]]
    first, second = train_tokenizer(texts, vocab_size=600), train_tokenizer(texts, vocab_size=600)
    assert first.get_vocab() == second.get_vocab()
    assert len(first) <= 600


def test_special_tokens_and_left_padding(tokenizer):
    assert tokenizer.pad_token == PAD_TOKEN and tokenizer.eos_token == EOS_TOKEN
    assert tokenizer.pad_token_id != tokenizer.eos_token_id
    assert tokenizer.padding_side == "left"
    assert getattr(tokenizer, "chat_template", None) is None
    # no BOS/EOS is added implicitly
    with_specials = tokenizer("look around", add_special_tokens=True)["input_ids"]
    assert with_specials == tokenizer("look around", add_special_tokens=False)["input_ids"]


def test_round_trips_text_and_unseen_bytes(tokenizer):
    text = "take dirty teal dress\nÜnïcode ✓ 42"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text


def test_saves_and_reloads_identically(tokenizer, tmp_path, gold_steps):
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path, local_files_only=True)
    prompt = gold_steps[3]["prompt"]
    expected = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    assert loaded(prompt, add_special_tokens=False)["input_ids"] == expected
    assert loaded.padding_side == "left" and loaded.pad_token_id == tokenizer.pad_token_id


def test_rejects_empty_corpus_and_tiny_vocab():
    with pytest.raises(ValueError, match="no training texts"):
        train_tokenizer([], vocab_size=512)
    with pytest.raises(ValueError, match="vocab_size"):
        train_tokenizer(["some text"], vocab_size=100)
