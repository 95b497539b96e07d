"""Model FLOPs utilisation (MFU) of the learner: achieved FLOP/s of the SFT / RL loss's
forward + backward pass over the matmul peak of this machine, both measured in the same run.

Peak: the best FLOP/s of square ``torch.matmul`` products (sizes 1024 and 2048) in bf16 and
in fp32, with the same thread count as the learner.

Learner: ``sft.response_nll`` (the token-mean NLL of the response tokens, the quantity the
RL update also differentiates through ``logprobs.token_logprobs``) on a batch of ``--batch``
sequences of ``--length`` tokens (prompt + ``--response`` response tokens, no padding),
forward + backward, timed over ``--steps`` steps after a warm-up, in fp32 and under bf16
autocast (what ``sft.bf16_autocast: auto`` does on a CPU with native bf16). Two policies:

- ``small``: the default run's policy (Qwen2 preset "small", 2048-token vocabulary), full
  fine-tuning;
- ``smollm2-135m``: a llama-shaped policy with SmolLM2-135M's configuration (576 hidden,
  30 layers, 9 heads / 3 KV heads, 1536 MLP, 49152-token vocabulary), random weights built
  from the config (nothing downloaded; MFU does not depend on weight values), with the
  project's default LoRA adapter (rank 8 on q/k/v/o; the base frozen).

FLOPs counted (per step, T = batch x length tokens, K = batch x (response + 1) positions that
go through the LM head, ``logits_to_keep``):

- linear layers of the blocks: forward 2 N T, backward to the activations 2 N T, backward to
  the weights 2 N_trainable T (N: weights of the blocks' linear layers; full fine-tuning:
  N_trainable = N, the familiar 6 N T; LoRA: only the adapters' weights, so about 4 N T);
- attention scores and values, causal (mean context (S + 1) / 2 per query): 4 d ctx per token
  and layer forward, twice that backward (d = heads x head dim);
- LM head on the K kept positions: 2 V h K forward, 2 V h K backward to the activations, and
  2 V h K to the (tied) embedding when it is trained.
Norms, activations, softmax, the optimizer step and the embedding lookup are not counted
(they are memory-bound work: a cost, not FLOPs). The optimizer step is timed separately.

What limits it: one step is profiled (``torch.profiler``) and its CPU time is split into
matmul kernels (mm/addmm/bmm/linear), attention (scaled_dot_product_attention) and the
rest; the matmul share and the FLOP/s inside the matmul kernels say whether the kernels or
the memory-bound remainder are the limit.

Run from the project root (prints its figures; not a test):

    python benchmarks/learner_mfu.py                 # 1 thread (the machine is shared)
    python benchmarks/learner_mfu.py --threads 2     # both cores, a short final measurement
"""

from __future__ import annotations

GROUP = "hardware"
REPRODUCES = ("docs/scale.md#the-learner-mfu-rollout-weights-and-training-on-several-processes",)
MEASURED = "run time not given; a shared 2-core AMD EPYC with AVX512-BF16, 1 thread"
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/scale.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import os
import time
from dataclasses import dataclass

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from hindsight.policy.encoding import collate, encode_ids  # noqa: E402
from hindsight.policy.model import has_native_bf16  # noqa: E402
from hindsight.training.sft import response_nll  # noqa: E402

from bench_models import base_model, block_linear_weights, build_small, build_smollm2_lora, matmul_peak  # noqa: E402


@dataclass
class FlopCount:
    """FLOPs of one forward + backward step, by part."""

    linear: float
    attention: float
    head: float

    @property
    def total(self) -> float:
        return self.linear + self.attention + self.head


def step_flops(model, batch: int, length: int, response: int) -> FlopCount:
    """The documented count (module docstring) for ``model`` on a batch x length step."""
    base = base_model(model)
    config = base.config
    linear_weights, trainable = block_linear_weights(model)
    tokens = batch * length
    linear = (4 * linear_weights + 2 * trainable) * tokens
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    width = config.num_attention_heads * head_dim
    context = (length + 1) / 2
    attention = 12 * width * context * tokens * config.num_hidden_layers
    kept = batch * (response + 1)
    head_weight = base.get_output_embeddings().weight
    head = (4 + 2 * int(head_weight.requires_grad)) * config.vocab_size * config.hidden_size * kept
    return FlopCount(linear=linear, attention=attention, head=head)


def make_batch(vocab: int, batch: int, length: int, response: int):
    generator = torch.Generator().manual_seed(0)
    samples = []
    for _ in range(batch):
        ids = torch.randint(3, vocab, (length,), generator=generator).tolist()
        samples.append(encode_ids(ids[: length - response], ids[length - response :], None))
    return collate(samples, pad_token_id=0)


MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "mkldnn", "aten::_mkldnn")
ATTENTION_OPS = ("scaled_dot_product", "_flash_attention", "_efficient_attention")


def time_split(model, batch, bf16: bool) -> dict[str, float]:
    """CPU seconds of one forward + backward by kind of op (self time of leaf ops)."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss, _ = response_nll(model, batch)
        loss.backward()
    split = {"matmul": 0.0, "attention": 0.0, "other": 0.0}
    for event in prof.key_averages():
        seconds = event.self_cpu_time_total / 1e6
        if any(event.key.startswith(op) for op in MATMUL_OPS):
            split["matmul"] += seconds
        elif any(op in event.key for op in ATTENTION_OPS):
            split["attention"] += seconds
        else:
            split["other"] += seconds
    model.zero_grad(set_to_none=True)
    return split


def measure(name: str, model, args, peaks: dict[str, float]) -> None:
    vocab = model.get_input_embeddings().weight.shape[0]
    batch = make_batch(vocab, args.batch, args.length, args.response)
    flops = step_flops(model, args.batch, args.length, args.response)
    parameters = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"\n== {name}: {parameters / 1e6:.1f}M parameters ({trainable / 1e6:.2f}M trainable), "
          f"batch {args.batch} x {args.length} tokens ({args.response} response), "
          f"{flops.total / 1e9:.1f} GFLOP per step (linear {flops.linear / flops.total:.0%}, "
          f"attention {flops.attention / flops.total:.0%}, LM head {flops.head / flops.total:.0%})")
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    model.train()
    for precision in ("fp32", "bf16"):
        bf16 = precision == "bf16"
        times, step_times = [], []
        for step in range(args.steps + 1):
            started = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss, _ = response_nll(model, batch)
            loss.backward()
            backward_done = time.perf_counter()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if step:  # the first step builds kernels
                times.append(backward_done - started)
                step_times.append(time.perf_counter() - started)
        seconds = min(times)
        achieved = flops.total / seconds
        split = time_split(model, batch, bf16)
        total_cpu = sum(split.values())
        matmul_flops = flops.linear + flops.head
        print(f"  {precision}: fwd+bwd {seconds:.3f} s ({args.batch * args.length / seconds:,.0f} tokens/s), "
              f"+AdamW {min(step_times) - seconds:.3f} s; achieved {achieved / 1e9:.1f} GFLOP/s = "
              f"MFU {achieved / peaks['bf16']:.1%} of the bf16 peak, {achieved / peaks['fp32']:.1%} of the fp32 peak")
        print(f"        profile: matmul {split['matmul'] / total_cpu:.0%}, attention {split['attention'] / total_cpu:.0%}, "
              f"other {split['other'] / total_cpu:.0%} of CPU time; inside matmul kernels "
              f"{matmul_flops / max(split['matmul'], 1e-9) / 1e9:.1f} GFLOP/s "
              f"({matmul_flops / max(split['matmul'], 1e-9) / peaks[precision]:.0%} of the {precision} peak)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (2 uses both cores)")
    parser.add_argument("--models", default="small,smollm2-135m", help="comma-separated: small, smollm2-135m")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--length", type=int, default=384, help="tokens per sequence (prompt + response)")
    parser.add_argument("--response", type=int, default=8, help="response tokens per sequence")
    parser.add_argument("--steps", type=int, default=3, help="timed steps per precision (after one warm-up)")
    parser.add_argument("--peak-sizes", type=int, nargs="+", default=[1024, 2048], help="matrix sizes of the matmul peak (smaller: a quick, lower peak)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), native bf16 on this CPU: {has_native_bf16(torch.device('cpu'))}")
    peaks = {"fp32": matmul_peak(torch.float32, args.peak_sizes), "bf16": matmul_peak(torch.bfloat16, args.peak_sizes)}
    print(f"matmul peak: fp32 {peaks['fp32'] / 1e9:.1f} GFLOP/s, bf16 {peaks['bf16'] / 1e9:.1f} GFLOP/s "
          f"(bf16/fp32 {peaks['bf16'] / peaks['fp32']:.2f}x)")
    builders = {"small": build_small, "smollm2-135m": build_smollm2_lora}
    for name in args.models.split(","):
        measure(name, builders[name](), args, peaks)


if __name__ == "__main__":
    main()
