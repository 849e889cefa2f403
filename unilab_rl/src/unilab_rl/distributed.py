"""Data-parallel learners over ``torch.distributed`` (one learner per rank).

The process group is created by the caller (``unilab train`` under torchrun: NCCL on CUDA, gloo on
the CPU). This module holds what a learner needs once it exists:

- :func:`broadcast_state`: rank 0's ``state_dict`` (networks, targets, temperature, optimizer
  moments, normalizers) copied to every rank at the start, so all ranks begin identical.
- :func:`average_gradients`: each gradient replaced by its mean over ranks, between backward and
  optimizer step; with identical starting state every rank then takes the same step, so the
  parameters stay identical (bit for bit: an all-reduce hands every rank the same result).
- :func:`sum_`: in-place sum over ranks (observation statistics: :meth:`RunningMeanStd.update`).
- :func:`attach`: wires the two into a learner with ``grad_sync`` / ``stats_sync`` attributes
  (:class:`~unilab_rl.algorithms.sac.SAC`).
- :func:`state_digest`: a hash of a learner's state, to check that ranks agree.

Every function is a collective: all ranks must call it in the same order.
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch
import torch.distributed as dist


def _comm_device() -> torch.device:
    """Where tensors must be for the default group's backend (NCCL: the current CUDA device)."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def average_gradients(params: list[torch.Tensor]) -> None:
    """Replace each parameter's ``.grad`` by its mean over all ranks (one flat all-reduce).

    Parameters without a gradient are skipped; every rank must present the same parameters with
    gradients of the same shapes (true for data-parallel copies of one model).
    """
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    world = dist.get_world_size()
    flat = torch.cat([g.reshape(-1) for g in grads])
    dev = _comm_device()
    buf = flat.to(dev) if flat.device != dev else flat
    dist.all_reduce(buf, op=dist.ReduceOp.SUM)
    buf = (buf / world).to(flat.device)
    offset = 0
    for g in grads:
        n = g.numel()
        g.copy_(buf[offset : offset + n].view_as(g))
        offset += n


def sum_(tensor: torch.Tensor) -> None:
    """Sum ``tensor`` in place over all ranks."""
    dev = _comm_device()
    if tensor.device == dev:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return
    buf = tensor.to(dev)
    dist.all_reduce(buf, op=dist.ReduceOp.SUM)
    tensor.copy_(buf)


def _tensors(obj: Any, out: list[torch.Tensor]) -> list[torch.Tensor]:
    """Every tensor in a nested dict / list / tuple, in a deterministic order."""
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, dict):
        for key in sorted(obj, key=str):
            _tensors(obj[key], out)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            _tensors(item, out)
    return out


def broadcast_state(agent: Any, src: int = 0) -> None:
    """Make every rank's learner equal to rank ``src``'s: each tensor of ``agent.state_dict()`` is
    broadcast and the result loaded with ``agent.load_state_dict``.

    Needs the same structure on every rank (same config; the optimizer state empty on all or
    filled on all, as after a resume from one checkpoint).
    """
    state = agent.state_dict()
    dev = _comm_device()
    for t in _tensors(state, []):
        buf = t.detach().to(dev).contiguous()
        dist.broadcast(buf, src=src)
        t.copy_(buf.to(t.device))
    agent.load_state_dict(state)


def attach(agent: Any) -> None:
    """Make ``agent`` (with ``grad_sync`` and ``stats_sync`` attributes) data-parallel: gradients
    averaged over ranks before every optimizer step, observation statistics merged from all
    ranks' batches. Call :func:`broadcast_state` as well, before training.

    Raises:
        TypeError: the learner has no such hooks.
    """
    if not (hasattr(agent, "grad_sync") and hasattr(agent, "stats_sync")):
        raise TypeError(f"{type(agent).__name__} has no grad_sync/stats_sync hooks: it cannot train on several ranks")
    agent.grad_sync = average_gradients
    agent.stats_sync = sum_


def state_digest(agent: Any) -> str:
    """sha256 of the bytes of every tensor in ``agent.state_dict()`` (networks, targets,
    temperature, optimizer state, normalizers): equal on two ranks iff their learners agree."""
    h = hashlib.sha256()
    for t in _tensors(agent.state_dict(), []):
        h.update(t.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


__all__ = ["attach", "average_gradients", "broadcast_state", "state_digest", "sum_"]
