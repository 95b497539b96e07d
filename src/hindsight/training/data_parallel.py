"""Data parallelism for the learner: several processes (``torchrun``), one model replica each,
gradients averaged by PyTorch's ``DistributedDataParallel`` (gloo on CPU, NCCL on GPU).

Why the learner's own loops need a little help from this module rather than just a DDP
wrapper: a mini-batch (RL) or batch (SFT) runs as micro-batches within a token budget, with
gradients accumulated, and each micro-batch's loss is weighted by its share of the whole
mini-batch's token count. Under data parallelism:

- every rank walks the SAME sequence of mini-batches (same seed, same sample list) and
  takes its stripe of each (``stripe``: every world-size-th sample of the length-sorted
  mini-batch), so the ranks' parts have similar lengths;
- the weights (shares) are computed against the WHOLE mini-batch's counts, and the loss is
  multiplied by the world size to undo DDP's averaging: the sum over ranks of their
  gradients is then the single-process gradient, up to float rounding;
- DDP synchronises on every backward unless told otherwise, and a rank must not wait for a
  backward its peers never run: ``balanced`` gives every rank the same number of
  micro-batches (a rank short of them repeats one with weight 0), and only the last one
  synchronises (``synchronised``);
- logged sums (losses, metrics) are added over the ranks (``sum_metrics``); decisions that
  depend on a clock (SFT's time budget) are taken by rank 0 (``same``).

``DataParallel.from_environment()`` joins the process group ``torchrun`` describes in the
environment (RANK, WORLD_SIZE, MASTER_ADDR, ...), or returns None in a plain process; every
loop takes ``parallel=None`` to mean one process, unchanged.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

logger = logging.getLogger(__name__)


class _Replica(DistributedDataParallel):
    """DDP that still answers what the project asks of a model: ``get_base_model`` (used to
    find the forward's ``logits_to_keep`` and the config)."""

    def get_base_model(self):
        module = self.module
        return module.get_base_model() if hasattr(module, "get_base_model") else module


@dataclass
class DataParallel:
    """This process's place among the learner's processes."""

    rank: int
    """This process's rank (0 writes outputs and logs)."""
    world_size: int
    """Number of processes."""
    device: torch.device
    """This rank's device: its local GPU under NCCL, else the CPU."""
    _replicas: dict[int, _Replica] = field(default_factory=dict, repr=False)

    @classmethod
    def from_environment(cls) -> "DataParallel | None":
        """Join the process group described by torchrun's environment variables; None when
        this process was not started by torchrun (or with one process)."""
        if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
            return None
        if not dist.is_initialized():
            backend = "nccl" if torch.cuda.is_available() else "gloo"
            dist.init_process_group(backend=backend)
        if torch.cuda.is_available():
            local_rank = int(os.environ.get("LOCAL_RANK", "0"))
            torch.cuda.set_device(local_rank)
            device = torch.device("cuda", local_rank)
        else:
            device = torch.device("cpu")
        parallel = cls(rank=dist.get_rank(), world_size=dist.get_world_size(), device=device)
        logger.info("Data-parallel learner: rank %d of %d on %s (%s)", parallel.rank, parallel.world_size, device, dist.get_backend())
        return parallel

    @property
    def is_writer(self) -> bool:
        """Whether this rank writes outputs (rank 0 alone)."""
        return self.rank == 0

    @property
    def gradient_scale(self) -> float:
        """Factor on each rank's loss that turns DDP's gradient mean into a sum."""
        return float(self.world_size)

    def wrap(self, model: torch.nn.Module) -> DistributedDataParallel:
        """The DDP replica of ``model`` (built once per model; DDP's construction broadcasts
        rank 0's weights, so every rank starts from the same ones)."""
        replica = self._replicas.get(id(model))
        if replica is None or replica.module is not model:
            device_ids = [self.device.index] if self.device.type == "cuda" else None
            replica = _Replica(model, device_ids=device_ids, broadcast_buffers=False)
            self._replicas[id(model)] = replica
        return replica

    def stripe(self, items: Sequence[Any]) -> list[Any]:
        """This rank's share of ``items``: every world-size-th one, from its rank."""
        return list(items)[self.rank :: self.world_size]

    def balanced(self, micro_batches: Sequence[list[int]], fallback: Sequence[int]) -> list[tuple[list[int], float]]:
        """(micro-batch, weight) pairs, as many on every rank: the rank's own micro-batches
        with weight 1, then repeats of one of them (or of ``fallback`` when it has none)
        with weight 0 until it has the most any rank has."""
        count = torch.tensor([len(micro_batches)], dtype=torch.int64, device=self.device)  # NCCL needs a GPU tensor
        dist.all_reduce(count, op=dist.ReduceOp.MAX)
        plan = [(list(micro), 1.0) for micro in micro_batches]
        filler = list(micro_batches[-1]) if micro_batches else list(fallback)[:1]
        plan += [(filler, 0.0)] * (int(count) - len(plan))
        return plan

    def synchronised(self, replica: DistributedDataParallel, last: bool):
        """Context for one micro-batch's forward and backward: gradients are all-reduced
        only on the last one (DDP's ``no_sync`` for the others)."""
        return contextlib.nullcontext() if last else replica.no_sync()

    def sum_metrics(self, values: dict[str, float]) -> dict[str, float]:
        """Each key's sum over the ranks (a key missing on a rank counts as absent there)."""
        gathered: list[dict[str, float] | None] = [None] * self.world_size
        dist.all_gather_object(gathered, values)
        total: dict[str, float] = {}
        for part in gathered:
            for key, value in (part or {}).items():
                total[key] = total.get(key, 0.0) + value
        return total

    def same(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank (for choices made from a clock)."""
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def gather(self, items: Sequence[Any]) -> list[Any]:
        """Every rank's ``items``, concatenated in rank order, on every rank."""
        gathered: list[list[Any] | None] = [None] * self.world_size
        dist.all_gather_object(gathered, list(items))
        return [item for part in gathered for item in (part or [])]

    def barrier(self) -> None:
        """Wait for every rank (e.g. before reading what rank 0 wrote)."""
        dist.barrier()


def micro_batch_plan(
    parallel: DataParallel | None,
    index: Sequence[int],
    lengths: Sequence[int],
    token_budget: int | None,
    chains: Sequence[Sequence[int]] | None = None,
) -> list[tuple[list[int], float]]:
    """The micro-batches this process runs for one (mini-)batch ``index`` (sorted by length),
    with their weights, within ``token_budget`` padded tokens each: all of them with weight 1
    in one process; this rank's stripe, cut into micro-batches and balanced across the
    ranks, under data parallelism.

    With ``chains`` (the multi-turn layout: ``index`` grouped into its episodes' chains,
    ``episode_batches.episode_chains``) each chain stays whole in one micro-batch: the
    chains, sorted by the length of their last member (which holds the whole chain), are
    what is striped and packed."""
    from hindsight.policy.batching import token_budget_chunks

    units = [[i] for i in index] if chains is None else sorted((list(c) for c in chains), key=lambda c: lengths[c[-1]])
    mine = units if parallel is None else parallel.stripe(units)
    sizes = [lengths[unit[-1]] for unit in mine]
    micro = [[i for part in chunk for i in mine[part]] for chunk in token_budget_chunks(range(len(mine)), sizes, token_budget)]
    if parallel is None:
        return [(part, 1.0) for part in micro]
    return parallel.balanced(micro, fallback=units[0] if units else [])
