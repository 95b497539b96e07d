"""Sink-aware attention, forward + backward: gpt-oss's eager attention against our sink-flex path.

One attention call (query heads ``--heads``, key/value heads ``--kv-heads``, head size
``--head-dim``, batch 1, learned sinks, full causal mask) at each ``--lengths`` token count, in
float32 on one CPU thread. Each case runs in a fresh subprocess; reported per case: the median
wall time of ``--repeats`` forward + backward passes after one warm-up pass at the same length
(for the sink-flex path the warm-up time is shown too, "flex 1st": FlexAttention traces its
unfused CPU forward once per new shape) and the peak resident memory the timed passes added
(``ru_maxrss`` minus the resident size before them, so the warm-up's own peak can hide a smaller
one: the figure is an upper bound). The eager path gets the
additive float mask transformers would build for it; the sink-flex path builds its BlockMask
inside the timed call, as it does once per forward in a model. A benchmark, not a test:

    python benchmarks/sink_attention.py                          # 512..4096 tokens, a few minutes
    python benchmarks/sink_attention.py --lengths 512 1024 --repeats 1

What a GPU changes: there the sink-flex path runs torch.compile'd FlexAttention, a fused kernel
that walks the BlockMask tile by tile (skipping tiles the causal or sliding mask empties) and
keeps only the per-row log-sum-exp, so the O(L^2) score matrix is never materialised in the
forward or in FlexAttention's own backward, and the sink fold is an O(L) elementwise product.
On CPU torch offers neither a backward nor a log-sum-exp from the compiled kernel, so the
forward is FlexAttention's unfused reference run one query chunk at a time and the backward is
ours, chunked the same way (scores held: chunk x L per head); the CPU figures say little about
the GPU path's speed.
"""

from __future__ import annotations

GROUP = "hardware"
REPRODUCES = ("docs/sink_attention.md#figures",)
MEASURED = "run time not given (the docstring: a few minutes); one thread of a shared AMD EPYC"
LAST_RUN = "by 2026-12-04 (git: the figure's lines in docs/sink_attention.md last changed)"
"""The index's fields (``benchmarks/README.md``, ``python -m tools.docgen.benchmarks``)."""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import torch


def _cpu_model() -> str:
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def _rss_kib() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _eager_step(q, k, v, sinks, heads, kv_heads):
    from transformers.models.gpt_oss.modeling_gpt_oss import eager_attention_forward

    module = torch.nn.Module()
    module.num_key_value_groups, module.sinks, module.training = heads // kv_heads, sinks, True
    length = q.shape[2]
    mask = torch.full((length, length), torch.finfo(q.dtype).min).triu(1)[None, None]
    out, _ = eager_attention_forward(module, q, k, v, mask, scaling=q.shape[-1] ** -0.5)
    return out


def _flex_step(q, k, v, sinks, heads, kv_heads):
    from hindsight.policy.sink_attention import sink_flex_attention_forward
    from hindsight.policy.sink_mask import sink_mask_spec

    spec = sink_mask_spec(q.shape[0], q.shape[2], k.shape[2])
    out, _ = sink_flex_attention_forward(None, q, k, v, spec, scaling=q.shape[-1] ** -0.5, s_aux=sinks)
    return out


def run_case(path: str, length: int, heads: int, kv_heads: int, head_dim: int, repeats: int) -> dict:
    """Time one path at one length in this process; returns seconds and peak MiB."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    step = _eager_step if path == "eager" else _flex_step
    q = torch.randn(1, heads, length, head_dim, requires_grad=True)
    k = torch.randn(1, kv_heads, length, head_dim, requires_grad=True)
    v = torch.randn(1, kv_heads, length, head_dim, requires_grad=True)
    sinks = torch.randn(heads, requires_grad=True)
    start = time.perf_counter()
    step(q, k, v, sinks, heads, kv_heads).square().sum().backward()  # warm-up: traces flex for this length
    first = time.perf_counter() - start
    before = _rss_kib()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        step(q, k, v, sinks, heads, kv_heads).square().sum().backward()
        seconds.append(time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    return {"seconds": statistics.median(seconds), "first": first, "peak_mib": max(peak, 0) / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 1024, 2048, 4096])
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--head-dim", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--case", nargs=2, metavar=("PATH", "LENGTH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    shape = (args.heads, args.kv_heads, args.head_dim, args.repeats)
    if args.case:
        print(json.dumps(run_case(args.case[0], int(args.case[1]), *shape)))
        return
    env = dict(os.environ, OMP_NUM_THREADS="1")
    print(f"CPU: {_cpu_model()} (1 thread); heads {args.heads}/{args.kv_heads} (q/kv), head_dim {args.head_dim}, "
          f"batch 1, float32, forward+backward, median of {args.repeats}")
    print(f"{'tokens':>7} | {'eager s':>8} | {'flex s':>8} | {'flex 1st s':>10} | {'eager MiB':>9} | {'flex MiB':>9}")
    for length in args.lengths:
        row = {}
        for path in ("eager", "flex"):
            command = [sys.executable, __file__, "--case", path, str(length), "--heads", str(args.heads),
                       "--kv-heads", str(args.kv_heads), "--head-dim", str(args.head_dim),
                       "--repeats", str(args.repeats)]
            output = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
            row[path] = json.loads(output.strip().splitlines()[-1])
        print(f"{length:>7} | {row['eager']['seconds']:>8.3f} | {row['flex']['seconds']:>8.3f} | "
              f"{row['flex']['first']:>10.3f} | "
              f"{row['eager']['peak_mib']:>9.1f} | {row['flex']['peak_mib']:>9.1f}", flush=True)


if __name__ == "__main__":
    main()
