"""Several learners, one per rank, over ``torch.distributed``.

``training.devices`` picks the ranks of one node:

- unset (default): one process, the device of ``training.device``;
- ``[0, 1]`` (or ``[cuda:0, cuda:1]``): one rank per CUDA device listed, NCCL;
- ``cpu:N``: N ranks on the CPU, gloo (tests, and machines without an accelerator).

With more than one rank, ``unilab train`` validates the config and then relaunches itself through
torch's elastic launcher (``torch.distributed.run``, what ``torchrun --standalone
--nproc-per-node=N -m unilab.cli train ...`` does). A process that already runs under torchrun
(``LOCAL_RANK`` and ``WORLD_SIZE`` set: several nodes, or a torchrun command of your own) is a
rank and never relaunches. Each rank: process group (NCCL on CUDA, gloo otherwise), its device
(``cuda:<index>``), its share of the node's CPU cores (``os.sched_setaffinity``; physics and torch
threads use that share), env and warm-up seeds ``training.seed + rank * RANK_SEED_OFFSET``.
``training.num_envs`` and ``algo.batch_size`` are per rank (as rsl_rl): N ranks collect N x num_envs
env steps per iteration and each update averages the gradients of N batches.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

import torch

RANK_SEED_OFFSET = 10_000_019
"""Rank r seeds torch, numpy, its env and its warm-up actions with ``training.seed + r * this``."""

DIGEST_DIR_ENV = "UNILAB_DDP_DIGEST_DIR"
"""Tests: when set, every rank writes ``rank<r>.txt`` there with the sha256 of its learner state
at the end of training (:func:`unilab_rl.distributed.state_digest`)."""


class DevicesError(ValueError):
    """A ``training.devices`` value that cannot be run; the message is one line."""


def parse_devices(value: Any, cuda_count: int | None = None) -> list[str] | None:
    """``training.devices`` -> one device string per rank, or None (one process, ``training.device``).

    Raises:
        DevicesError: bad syntax, duplicate indices, a CUDA index this machine lacks, CPU and
            CUDA mixed.
    """
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text.startswith("cpu:") and text[4:].isdigit() and int(text[4:]) >= 1:
            return ["cpu"] * int(text[4:])
        raise DevicesError(
            f"training.devices={value!r}: use a list of CUDA indices (training.devices=[0,1]) or cpu:N "
            f"for N ranks on the CPU (training.devices=cpu:2)"
        )
    if not isinstance(value, (list, tuple)) or not value:
        raise DevicesError(f"training.devices={value!r}: use a list of CUDA indices, e.g. [0,1], or cpu:N")
    indices = []
    for item in value:
        text = str(item).strip().lower()
        if text.startswith("cuda:"):
            text = text[5:]
        if isinstance(item, bool) or not text.isdigit():
            raise DevicesError(
                f"training.devices={list(value)}: {item!r} is not a CUDA index (write [0,1] or [cuda:0,cuda:1]; "
                f"cpu:N for CPU ranks)"
            )
        indices.append(int(text))
    dupes = sorted({i for i in indices if indices.count(i) > 1})
    if dupes:
        raise DevicesError(f"training.devices={indices}: cuda:{dupes[0]} is listed twice (one rank per device)")
    count = torch.cuda.device_count() if cuda_count is None else cuda_count
    missing = [i for i in indices if i >= count]
    if missing:
        have = "no CUDA device" if count == 0 else f"{count} CUDA device(s): cuda:0..cuda:{count - 1}"
        raise DevicesError(f"training.devices={indices}: cuda:{missing[0]} does not exist (this machine has {have})")
    return [f"cuda:{i}" for i in indices]


def under_torchrun() -> bool:
    """True in a process started by torchrun / the elastic launcher (it is one rank)."""
    return "LOCAL_RANK" in os.environ and "WORLD_SIZE" in os.environ


def launch(devices: list[str], argv: list[str]) -> int:
    """Run ``argv`` (``[prog, "train", ...]``) as ``len(devices)`` ranks on this node through torch's
    elastic launcher (``torchrun --standalone --nproc-per-node=N -m unilab.cli train ...``).

    Returns:
        0, or the first failing rank's exit code (130 after Ctrl-C).
    """
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.run import parse_args, run

    n = len(devices)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, cores // n)))  # each rank's share (torchrun would say 1)
    args = parse_args(["--standalone", f"--nproc-per-node={n}", "--module", "unilab.cli", *argv[1:]])
    try:
        run(args)
    except ChildFailedError as exc:
        codes = [f.exitcode for _, f in sorted(exc.failures.items())]
        code = next((c for c in codes if c not in (0, None)), 1)
        return code if code > 0 else 128 - code  # killed by signal s: 128 + s, as a shell reports it
    except SignalException as exc:
        print(f"training stopped by {exc.sigval.name}: all ranks were stopped", file=sys.stderr, flush=True)
        return 128 + int(exc.sigval)
    return 0


@dataclass
class DistContext:
    """This process's place among the ranks (``world_size`` 1 when not distributed)."""

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1
    local_world_size: int = 1
    backend: str | None = None
    device: torch.device | None = None
    devices: list[str] = field(default_factory=list)
    """Every rank's device, in rank order."""
    cpu_ids: list[int] | None = None
    """The cores this rank was pinned to (None: not pinned)."""

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def seed(self, seed: int) -> int:
        return seed + self.rank * RANK_SEED_OFFSET

    def summary(self) -> dict[str, Any]:
        return {"world_size": self.world_size, "backend": self.backend, "devices": self.devices,
                "rank_cpu_ids": self.cpu_ids}  # fmt: skip

    def sum_scalar(self, value: float) -> float:
        """Sum a float over ranks (a collective: all ranks call it at the same point)."""
        import torch.distributed as dist

        t = torch.tensor([value], dtype=torch.float64, device=self._comm_device())
        dist.all_reduce(t)
        return float(t.item())

    def check_identical(self, agent: Any) -> bool:
        """Gather every rank's learner-state digest; True when all agree (a collective). Writes
        ``rank<r>.txt`` into ``$UNILAB_DDP_DIGEST_DIR`` when set (tests)."""
        import torch.distributed as dist

        from unilab_rl.distributed import state_digest

        digest = state_digest(agent)
        out = os.environ.get(DIGEST_DIR_ENV)
        if out:
            with open(os.path.join(out, f"rank{self.rank}.txt"), "w") as f:
                f.write(digest + "\n")
        digests: list[Any] = [None] * self.world_size
        dist.all_gather_object(digests, digest)
        return len(set(digests)) == 1

    def _comm_device(self) -> torch.device:
        return self.device if self.backend == "nccl" and self.device is not None else torch.device("cpu")

    def close(self) -> None:
        import torch.distributed as dist

        if self.enabled and dist.is_initialized():
            dist.destroy_process_group()


def setup(devices_value: Any, device_value: str, cpu_ids: Any) -> DistContext:
    """Join the process group when this process is a rank (:func:`under_torchrun`, WORLD_SIZE > 1):
    device, backend, CPU share. Otherwise a one-rank context (device from ``training.devices``'s
    single entry, or None: ``training.device`` decides).

    Raises:
        DevicesError: ``training.devices`` invalid, or not one entry per local rank.
    """
    devices = parse_devices(devices_value)
    if devices is not None and device_value != "auto":
        raise DevicesError(
            f"training.device={device_value} and training.devices are both set: set training.devices alone"
        )
    if not under_torchrun() or int(os.environ["WORLD_SIZE"]) <= 1:
        if devices is not None and len(devices) > 1:  # only reachable from Python, not from the CLI
            raise DevicesError(f"training.devices={devices}: several ranks need `unilab train` (or torchrun)")
        return DistContext(device=torch.device(devices[0]) if devices else None)

    import torch.distributed as dist

    from unilab_rl.device import resolve_device

    rank, local_rank = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    world, local_world = int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    if cpu_ids:
        raise DevicesError("sim.cpu_ids is set: leave it unset with several ranks (each rank takes its share of the cores)")
    if devices is not None:
        if len(devices) != local_world:
            raise DevicesError(
                f"training.devices lists {len(devices)} devices but this node runs {local_world} ranks "
                f"(--nproc-per-node): list one per rank"
            )
        device = torch.device(devices[local_rank])
    else:
        device = resolve_device(device_value)
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", local_rank)
        elif device.type not in ("cuda", "cpu"):
            raise DevicesError(f"training.device={device_value}: several ranks run on CUDA (NCCL) or the CPU (gloo)")
    backend = "nccl" if device.type == "cuda" else "gloo"
    if device.type == "cuda":
        torch.cuda.set_device(device)
    share = None
    if hasattr(os, "sched_setaffinity"):
        cores = sorted(os.sched_getaffinity(0))
        share = cores[local_rank * len(cores) // local_world : (local_rank + 1) * len(cores) // local_world] or cores
        os.sched_setaffinity(0, share)
        torch.set_num_threads(len(share))
    dist.init_process_group(backend)
    ctx = DistContext(rank, local_rank, world, local_world, backend, device, cpu_ids=share)
    names: list[Any] = [None] * world
    dist.all_gather_object(names, str(device))
    ctx.devices = names
    return ctx


__all__ = ["DIGEST_DIR_ENV", "DevicesError", "DistContext", "RANK_SEED_OFFSET", "launch", "parse_devices",
           "setup", "under_torchrun"]  # fmt: skip
