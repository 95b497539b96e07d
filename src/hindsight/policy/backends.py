"""Inference backends: what plays the rollouts' generation, apart from the learner.

The learner trains in torch; the step-wise rollouts (``rollout.engine``) only need samples
and their log-probs, so they can run on a dedicated inference engine, as verl, TRL and
OpenRLHF do on GPUs. A backend answers two calls:

- ``sync(policy) -> seconds``: bring the learner's current weights in (LoRA merged). The
  torch backend decodes with the learner's own weights (0 s); an engine converts them. A
  fingerprint of the weights skips the work when nothing changed since the last sync.
- ``generate(policy, prompts, config=..., valid_actions=..., generator=...)``: one
  ``generation.Generation`` per prompt, exactly what ``policy.generation.generate`` returns
  (the step sample with its prompt ids, response ids, allowed ids and T=1 log-probs).

Backends (``rollout.backend``):

- ``torch``: the project's own batched engine (``policy.generation``), the default.
- ``ctranslate2``: CTranslate2 (``ctranslate2`` package) with ``compute_type`` ``float32``
  (the same numbers as torch up to rounding) or ``int8`` (weights quantized at every sync).
  Constrained rows: the row's prompt is read once as a static prompt, every valid action
  is teacher-forced after it in one batch, and the returned logits give the exact
  restricted distribution at every branching node of the action trie; the action is then
  sampled through the trie here, with the same rule and RNG use as the torch engine
  (``constrained.restricted_log_softmax`` / ``sample_from_logprobs``). A node with one child
  is forced (log-prob 0, as in the torch engine). Free rows are sampled by CTranslate2 with
  its full-vocabulary logits returned, from which the T=1 log-probs are computed.

The multi-turn layout keeps a KV cache per episode across turns, which no engine here
exposes: it runs on the torch backend only (``check_layout``).

Where the engine's numbers differ from the learner's (``int8``), the RL update corrects for
it: the learner recomputes the log-probs of the rollout's tokens before the update
(the proximal policy) and the loss is decoupled PPO with the engine's log-probs as the
behaviour policy and a capped importance weight (``training.rl.schedulers.backend_correction.weight_cap``,
``training.backend_correction``;
``algorithms.decoupled_ppo_loss``). ``exact`` says whether a backend needs that.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
import weakref
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np
import torch

from hindsight.policy.constrained import (
    ActionTrie,
    pad_allowed,
    restricted_log_softmax,
    sample_from_logprobs,
    stop_token_ids,
)
from hindsight.policy.encoding import StepSample, encode_prompt, truncate_prompt
from hindsight.policy.generation import Generation, SamplingConfig, free_text, generate
from hindsight.policy.model import Policy

logger = logging.getLogger(__name__)

BACKENDS = ("torch", "ctranslate2")
CTRANSLATE2_COMPUTE_TYPES = ("float32", "int8", "int8_float32", "bfloat16", "int8_bfloat16")


class InferenceBackend(Protocol):
    """What the rollout engine asks of an inference backend (module docstring)."""

    name: str
    exact: bool
    """True when its log-probs equal the learner's up to float rounding."""

    def sync(self, policy: Policy) -> float: ...

    def generate(
        self, policy: Policy, prompts: Sequence[str], *, config: SamplingConfig,
        valid_actions: Sequence[Sequence[str] | None] | None, generator: torch.Generator,
    ) -> list[Generation]: ...


class TorchBackend:
    """The project's own engine on the learner's weights (``policy.generation.generate``)."""

    name = "torch"
    exact = True

    def sync(self, policy: Policy) -> float:
        """Nothing to bring in: it decodes with the policy it is given."""
        return 0.0

    def generate(self, policy, prompts, *, config, valid_actions, generator) -> list[Generation]:
        return generate(policy, prompts, config=config, valid_actions=valid_actions, generator=generator)


def weights_fingerprint(model: torch.nn.Module) -> tuple:
    """A cheap signature of the weights (a strided sample of every tensor): it changes when
    an update moves them, so an unchanged policy is not converted again."""
    signature = []
    for name, tensor in model.state_dict().items():
        flat = tensor.detach().reshape(-1)
        step = max(1, flat.numel() // 64)
        signature.append((name, tuple(flat[::step][:64].double().tolist())))
    return tuple(signature)


class CTranslate2Backend:
    """Rollouts on CTranslate2 (module docstring)."""

    name = "ctranslate2"

    def __init__(self, compute_type: str = "int8", threads: int = 0, work_dir: str | Path | None = None) -> None:
        if compute_type not in CTRANSLATE2_COMPUTE_TYPES:
            raise ValueError(f"rollout.backend_compute_type must be one of {', '.join(CTRANSLATE2_COMPUTE_TYPES)}, got {compute_type!r}")
        try:
            import ctranslate2  # noqa: F401
        except ImportError as error:
            raise ImportError("rollout.backend: ctranslate2 needs the 'ctranslate2' package (requirements.txt)") from error
        self.compute_type = compute_type
        self.exact = compute_type == "float32"
        self.threads = threads or torch.get_num_threads()
        self._work_dir = Path(work_dir) if work_dir else None  # a fresh temporary directory at the first sync
        self._generator = None
        self._fingerprint: tuple | None = None
        self.syncs = 0

    def __getstate__(self) -> dict:
        """Pickled (e.g. into the asynchronous rollout worker) without the loaded engine: the
        copy converts the weights it is given at its first sync."""
        return {**self.__dict__, "_generator": None, "_fingerprint": None, "_work_dir": None}

    @property
    def engine(self):
        """The loaded ``ctranslate2.Generator`` (None before the first sync)."""
        return self._generator

    def sync(self, policy: Policy) -> float:
        """Convert the policy's weights (LoRA merged, float32) when they changed; seconds spent."""
        fingerprint = weights_fingerprint(policy.model)
        if fingerprint == self._fingerprint and self._generator is not None:
            return 0.0
        started = time.perf_counter()
        if self._work_dir is None:  # removed with this object (or at exit)
            self._work_dir = Path(tempfile.mkdtemp(prefix="hindsight-ct2-"))
            weakref.finalize(self, shutil.rmtree, self._work_dir, True)
        self._generator = None  # release the old model before loading the new one
        self._generator = convert_policy(policy, self._work_dir / "model", self.compute_type, self.threads)
        self._fingerprint = fingerprint
        self.syncs += 1
        seconds = time.perf_counter() - started
        logger.info("CTranslate2 (%s): weights synced in %.2f s", self.compute_type, seconds)
        return seconds

    def generate(self, policy, prompts, *, config, valid_actions, generator) -> list[Generation]:
        if self._generator is None:
            raise RuntimeError("CTranslate2Backend.generate before sync(policy)")
        if config.constrained and valid_actions is None:
            raise ValueError("generate: constrained decoding needs valid_actions for every prompt.")
        tokenizer = policy.tokenizer
        max_length = config.max_length or int(getattr(policy.model.config, "max_position_embeddings", 2048))
        answers: list[Generation] = []
        forced_cache: dict[tuple, dict[tuple[int, ...], torch.Tensor]] = {}
        for row, prompt in enumerate(prompts):
            actions = valid_actions[row] if valid_actions is not None else None
            ids = encode_prompt(tokenizer, prompt)
            if config.constrained and actions:
                trie = ActionTrie.from_actions(tokenizer, actions)
                kept, dropped = truncate_prompt(ids, max_length - trie.depth)
                key = (tuple(kept), tuple(sorted(trie.actions)))
                if key not in forced_cache:
                    forced_cache[key] = self._branch_logits(tokenizer, kept, trie)
                response, logprobs, allowed = _walk_trie(trie, forced_cache[key], config, generator)
                text = trie.action_for(response) or ""
                finished = True
            else:
                kept, dropped = truncate_prompt(ids, max_length - config.max_new_tokens)
                response, logprobs, finished = self._free(tokenizer, kept, config, generator)
                allowed = None
                text = free_text(tokenizer, response, config)
            sample = StepSample(
                prompt=prompt, prompt_ids=kept, response_ids=response, allowed_ids=allowed,
                old_logprobs=torch.tensor(logprobs, dtype=torch.float32), truncated_tokens=dropped, max_length=config.max_length,
            )
            answers.append(Generation(sample=sample, text=text, finished=finished))
        return answers

    def _branch_logits(self, tokenizer, prompt_ids: list[int], trie: ActionTrie) -> dict[tuple[int, ...], torch.Tensor]:
        """The logits after every branching prefix of the trie, from one call: the prompt but
        its last token read once (static prompt), then per action the prompt's last token and
        the action but its last token teacher-forced, in one batch."""
        # logits[j] of a result is the distribution after its j-th start token: the prompt's
        # last token starts every row, so logits[j] is the one over the action's token j
        sequences = list(trie.actions)
        tokens = [tokenizer.convert_ids_to_tokens([prompt_ids[-1], *sequence[:-1]]) for sequence in sequences]
        static = tokenizer.convert_ids_to_tokens(prompt_ids[:-1]) or None
        results = self._generator.generate_batch(
            tokens, static_prompt=static, cache_static_prompt=False,
            include_prompt_in_result=True, max_length=max(len(sequence) for sequence in sequences) + 1,
            return_logits_vocab=True, sampling_topk=1,
        )
        branches: dict[tuple[int, ...], torch.Tensor] = {}
        for sequence, result in zip(sequences, results):
            for position in range(len(sequence)):
                prefix = tuple(sequence[:position])
                if prefix in branches or len(trie.node(prefix) or ()) < 2:
                    continue
                branches[prefix] = torch.from_numpy(np.array(result.logits[0][position], copy=True)).float()
        return branches

    def _free(self, tokenizer, prompt_ids: list[int], config: SamplingConfig, generator: torch.Generator):
        """A free-text response sampled by CTranslate2 and its T=1 log-probs."""
        import ctranslate2

        ctranslate2.set_random_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
        stops = sorted(stop_token_ids(tokenizer, config.stop_at_newline, config.stop_strings) | {tokenizer.eos_token_id})
        greedy = config.temperature <= 0
        result = self._generator.generate_batch(
            [tokenizer.convert_ids_to_tokens(prompt_ids)], include_prompt_in_result=False, max_length=config.max_new_tokens,
            min_length=config.min_new_tokens, end_token=stops, return_end_token=True, return_logits_vocab=True,
            sampling_topk=1 if greedy else 0, sampling_topp=config.top_p, sampling_temperature=max(config.temperature, 1e-5),
        )[0]
        ids = list(result.sequences_ids[0])
        logprobs = []
        for position, token in enumerate(ids):
            logits = torch.from_numpy(np.array(result.logits[0][position], copy=True)).float()
            if position < config.min_new_tokens:
                logits[torch.tensor(stops)] = float("-inf")
            logprobs.append(float(torch.log_softmax(logits, dim=-1)[token]))
        finished = bool(ids) and ids[-1] in stops
        return ids, logprobs, finished


def _walk_trie(trie: ActionTrie, branches: dict[tuple[int, ...], torch.Tensor], config: SamplingConfig, generator):
    """Sample one action through the trie from the logits at its branching prefixes."""
    node, prefix = trie.root, ()
    response, logprobs, allowed_lists = [], [], []
    while node:
        allowed = sorted(node)
        if len(allowed) == 1:
            token, logprob = allowed[0], 0.0
        else:
            restricted = restricted_log_softmax(branches[prefix].unsqueeze(0), pad_allowed([allowed]))
            column = int(sample_from_logprobs(restricted, temperature=config.temperature, top_p=config.top_p, generator=generator)[0])
            token, logprob = allowed[column], float(restricted[0, column])
        response.append(token)
        logprobs.append(logprob)
        allowed_lists.append(allowed)
        prefix = prefix + (token,)
        node = node[token]
    return response, logprobs, allowed_lists


def convert_policy(policy: Policy, directory: Path, compute_type: str, threads: int):
    """The policy (LoRA merged, float32, no copy kept) as a loaded CTranslate2 generator;
    the converted files are written to ``directory`` (replaced)."""
    import ctranslate2
    from ctranslate2.converters import TransformersConverter

    from hindsight.policy.inference import inference_copy

    model = inference_copy(policy.model, torch.float32, merge_lora=True)
    config_dir = directory.parent / "config"
    model.config.save_pretrained(config_dir)

    class _InMemory(TransformersConverter):
        """The converter reading the model and tokenizer in memory (only the config from disk)."""

        def load_model(self, model_class, model_name_or_path, **kwargs):
            return model

        def load_tokenizer(self, tokenizer_class, model_name_or_path, **kwargs):
            return policy.tokenizer

    quantization = None if compute_type == "float32" else compute_type
    try:
        _InMemory(str(config_dir)).convert(str(directory), quantization=quantization, force=True)
    except (ValueError, NotImplementedError) as error:  # an architecture CTranslate2 cannot convert
        architecture = type(model).__name__
        raise ValueError(f"rollout.backend: ctranslate2 cannot convert a {architecture} policy ({error}); set rollout.backend: torch") from error
    return ctranslate2.Generator(str(directory), device="cpu", compute_type=compute_type, intra_threads=threads)


def make_backend(name: str = "torch", compute_type: str = "int8", threads: int = 0) -> InferenceBackend:
    """The backend ``rollout.backend`` names."""
    if name == "torch":
        return TorchBackend()
    if name == "ctranslate2":
        return CTranslate2Backend(compute_type=compute_type, threads=threads)
    raise ValueError(f"rollout.backend must be one of {', '.join(BACKENDS)}, got {name!r}")


_SHARED: dict[tuple[str, str], InferenceBackend] = {}


def shared_backend(name: str = "torch", compute_type: str = "int8") -> InferenceBackend:
    """One backend per (name, compute type) in a process: every stage's rollouts reuse it, so
    a policy whose weights did not change is not converted again."""
    if name == "torch":
        return TorchBackend()
    key = (name, compute_type)
    if key not in _SHARED:
        _SHARED[key] = make_backend(name, compute_type)
    return _SHARED[key]


def check_layout(backend: InferenceBackend, layout: str, imagination) -> None:
    """The multi-turn layout and in-response imagination need the torch engine's KV cache."""
    if backend.name != "torch" and (layout != "stepwise" or imagination is not None):
        what = "rollout.layout: multiturn" if layout != "stepwise" else "in-response imagination (WM-R1)"
        raise ValueError(f"{what} keeps a KV cache per episode that only the torch backend has; set rollout.backend: torch")


__all__ = [
    "BACKENDS", "CTranslate2Backend", "InferenceBackend", "TorchBackend", "check_layout", "convert_policy", "make_backend",
    "shared_backend", "weights_fingerprint",
]
