"""A byte-level BPE tokenizer trained locally on the environment's text.

The embedded default policy is built from scratch, so its tokenizer is too: byte-level BPE
(every string is encodable, no unknown token) trained with the ``tokenizers`` library on the
texts the policy will read and write (step prompts, expert actions, the prompt template),
then wrapped as a transformers ``PreTrainedTokenizerFast`` so that it saves and loads like any
HF tokenizer.

Conventions the rest of the project relies on:

- two special tokens, ``PAD_TOKEN`` and ``EOS_TOKEN``; no BOS is ever added (prompt and
  response are encoded with ``add_special_tokens=False`` and concatenated);
- ``padding_side="left"``: batched generation appends new tokens on the right;
- no chat template: ``prompts.render_for_model`` passes the plain prompt through;
- Qwen2's text pipeline (NFC normalizer, Qwen2's split regex, byte-level), because a saved
  policy directory has a Qwen2 ``config.json`` and transformers' ``AutoTokenizer`` then
  rebuilds the tokenizer as ``Qwen2Tokenizer`` from the vocabulary and merges with that
  pipeline, whatever the saved one was (checked with transformers 5.23). With the same
  pipeline, any loader (``AutoTokenizer``, vLLM) tokenizes exactly as training did.

Training is deterministic: the same texts in the same order give the same vocabulary.
"""

from __future__ import annotations

import logging
from typing import Iterable

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast
from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

from hindsight.policy.prompts import TASK_PREFIX, TURN_LINE

logger = logging.getLogger(__name__)

PAD_TOKEN = "<|pad|>"
EOS_TOKEN = "<|endoftext|>"
SPECIAL_TOKENS = (PAD_TOKEN, EOS_TOKEN)

# The fixed words of the prompt template (prompts.build_prompt), so that they become
# tokens of their own even when the training texts are few.
TEMPLATE_TEXT = "\n".join(
    [
        TASK_PREFIX + "Your task is to",
        "Known facts:",
        "- ",
        "History:",
        "Observation 0: ",
        "Action 0: ",
        "Current observation: ",
        "Valid actions: a | b",
        TURN_LINE,
        "Thought: ",
        "Action: ",
    ]
)


def train_tokenizer(
    texts: Iterable[str],
    vocab_size: int = 2048,
    *,
    min_frequency: int = 2,
    model_max_length: int = 2048,
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE tokenizer on ``texts``.

    Args:
        texts: Training texts (prompts and responses of the ingested trajectories). The
            prompt template's fixed text is added to them.
        vocab_size: Size of the vocabulary, special tokens and the 256 byte symbols included.
        min_frequency: A pair of symbols must occur this often to be merged.
        model_max_length: The longest sequence the tokenizer reports as allowed.

    Returns:
        A ``PreTrainedTokenizerFast`` with pad and eos set and ``padding_side="left"``.

    Raises:
        ValueError: ``texts`` is empty or ``vocab_size`` cannot hold the byte alphabet.
    """
    corpus = [str(text) for text in texts if text]
    if not corpus:
        raise ValueError("train_tokenizer: no training texts were given.")
    minimum = 256 + len(SPECIAL_TOKENS)
    if vocab_size < minimum:
        raise ValueError(f"train_tokenizer: vocab_size={vocab_size} is below the byte alphabet ({minimum}).")
    corpus.append(TEMPLATE_TEXT)

    backend = Tokenizer(models.BPE())
    backend.normalizer = normalizers.NFC()
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(corpus, trainer=trainer, length=len(corpus))
    logger.info("Trained a byte-level BPE tokenizer: %d tokens from %d texts.", backend.get_vocab_size(), len(corpus))
    return wrap_tokenizer(backend, model_max_length=model_max_length)


def wrap_tokenizer(backend: Tokenizer, *, model_max_length: int = 2048) -> PreTrainedTokenizerFast:
    """Wrap a ``tokenizers.Tokenizer`` holding the special tokens as an HF tokenizer.

    Args:
        backend: The trained tokenizer; it must contain ``PAD_TOKEN`` and ``EOS_TOKEN``.
        model_max_length: The longest sequence the tokenizer reports as allowed.

    Returns:
        The HF tokenizer with pad/eos set and left padding.
    """
    for token in SPECIAL_TOKENS:
        if backend.token_to_id(token) is None:
            raise ValueError(f"wrap_tokenizer: the tokenizer lacks the special token {token!r}.")
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token=PAD_TOKEN,
        eos_token=EOS_TOKEN,
        padding_side="left",
        model_max_length=model_max_length,
    )
    return tokenizer
