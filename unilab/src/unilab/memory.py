"""How much memory a run will take, estimated from its config before anything large is built,
and refused when the machine (or the learner's device) does not have it.

A run's big allocations are three, each proportional to a config key:

- the envs, ``training.num_envs`` worlds (twice in the async runtime: the trainer keeps one env
  and the collectors build their own), per world :func:`bytes_per_world`;
- the replay buffer on the learner device, ``algo.buffer_size_per_env × training.num_envs``
  transitions of :func:`bytes_per_transition` (``unilab_rl.ReplayBuffer``'s layout: s and s' of
  every stored group, the action, reward and terminated flag), plus the async runtime's block ring
  (``runtime.num_blocks × runtime.block_steps × training.num_envs`` transitions, host shared memory);
- one gradient update's batch, ``algo.batch_size`` samples of :data:`UPDATE_BYTES_PER_SAMPLE`.

The sizes that depend on the task (observation widths, the physics model) are read from a
one-world probe env. The estimate is compared with the memory available now: ``MemAvailable`` of
``/proc/meminfo`` for the host, ``torch.cuda.mem_get_info`` for a CUDA learner (an MPS learner
shares the host's). ``training.allow_large=true`` starts the run anyway.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import torch

UPDATE_BYTES_PER_SAMPLE = {"sac": 67_000, "flashsac": 233_000}
"""Peak memory of one gradient update per batch sample, bytes: the batch, the activations and
their gradients of every network the update runs. Measured as the peak resident-memory growth of
one ``update()`` at ``algo.batch_size=8192`` on g1_walk_flat (CPU, float32, no compile): SAC 67 KB
(MLPs of 512-256-128 and 768-384-192), FlashSAC 233 KB (inverted-residual blocks, expansion 4,
101-bin categorical critics). FlashSAC's critic network under a scalar head
(``algo.critic=trunk``) takes the same figure: measured 203 KB with ``algo.actor=mlp`` and 209 KB
with the residual actor (``benchmarks/update_memory.py --algo flashsac --set critic=trunk``), the
batch norms' and expanded blocks' activations, not the 101-atom head, being most of it. An
algorithm not listed takes the largest; FlashSAC with ``algo.critic=mlp`` takes
:data:`FLASHSAC_SCALAR_CRITIC_BYTES_PER_SAMPLE`."""

FLASHSAC_SCALAR_CRITIC_BYTES_PER_SAMPLE = 115_000
"""FlashSAC's figure with SAC's scalar critic (``algo.critic=mlp``), bytes per sample: the peak
resident-memory growth of a first ``update()`` at batch 8192 with g1_walk_flat's sizes (CPU,
float32, no compile; ``benchmarks/update_memory.py --algo flashsac [--set critic=mlp]``) was
100-102 KB with it against 207-220 KB with the categorical critic (``algo.actor=mlp`` moved it
by under 1 %): the categorical critic's 233 KB above times the larger ratio, 0.49."""


def update_bytes_per_sample(algo: str, algo_cfg: Any) -> int:
    """Peak memory of one gradient update per batch sample, bytes, for ``algo`` with ``algo_cfg``
    (:data:`UPDATE_BYTES_PER_SAMPLE`, :data:`FLASHSAC_SCALAR_CRITIC_BYTES_PER_SAMPLE`)."""
    if algo == "flashsac" and getattr(algo_cfg, "critic", "categorical") == "mlp":
        return FLASHSAC_SCALAR_CRITIC_BYTES_PER_SAMPLE
    return UPDATE_BYTES_PER_SAMPLE.get(algo, max(UPDATE_BYTES_PER_SAMPLE.values()))

OBS_COPIES = 8
"""Float32 copies of a world's observation row the env keeps (the terms' outputs, noise, final and
fresh observations); with the physics rows and :data:`MANAGER_BYTES` this matches the measured
resident-memory growth per world: 15.0 KB for g1_walk_flat (4096 worlds), 22.4 KB for
g1_motion_tracking (2048 worlds) on the MuJoCo backend."""

MANAGER_BYTES = 1024
"""The env managers' other per-world tensors (commands, episode sums, contact sensors), bytes."""


def bytes_per_world(env) -> int:
    """Host bytes one world of ``env`` (a one-world probe) takes: the physics rows and the env's
    per-row tensors.

    Physics: with a MuJoCo backend (``env.backend.model``), the world's integration state
    (``mj_stateSize(mjSTATE_INTEGRATION)``), sensor data and contact rows (6 per body), float64,
    and the packed float32 host bridge; for another backend, 4 float64 copies of qpos and qvel.
    """
    backend = env.backend
    model = getattr(backend, "model", None)
    if model is not None and hasattr(model, "nsensordata"):
        import mujoco

        state = mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_INTEGRATION)
        physics = 8 * (state + model.nsensordata + 6 * model.nbody)
        packed = getattr(backend, "packed", None)
        physics += 4 * int(packed.shape[1]) if isinstance(packed, torch.Tensor) else 0
    else:
        physics = 4 * 8 * (int(backend.qpos.shape[1]) + int(backend.qvel.shape[1]))
    return physics + 4 * OBS_COPIES * sum(env.obs_dims.values()) + MANAGER_BYTES


def bytes_per_transition(obs_dims: dict[str, int], num_actions: int) -> int:
    """Bytes of one stored transition: float32 s and s' of each group, the float32 action and
    reward, the bool terminated flag (``unilab_rl.ReplayBuffer``)."""
    return 2 * 4 * sum(obs_dims.values()) + 4 * num_actions + 4 + 1


@dataclass
class Part:
    """One allocation of the estimate.

    Attributes:
        what: e.g. ``"replay buffer"``.
        keys: the config keys that scale it, with their values, e.g.
            ``{"algo.buffer_size_per_env": 1024, "training.num_envs": 1024}``.
        detail: how it is counted, e.g. ``"1024 x 1024 transitions of 1.9 KB"``.
        nbytes: its size.
        on_device: on the learner device (else host memory).
    """

    what: str
    keys: dict[str, Any]
    detail: str
    nbytes: int
    on_device: bool


@dataclass
class MemoryEstimate:
    """The estimate of a run: its parts and where they live."""

    parts: list[Part] = field(default_factory=list)
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))

    def total(self, on_device: bool) -> int:
        return sum(p.nbytes for p in self.parts if p.on_device == on_device)


def estimate(algo: str, algo_cfg: Any, runtime: Any, num_envs: int, env, device: torch.device,
             local_ranks: int = 1) -> MemoryEstimate:
    """The memory a run of ``algo_cfg`` needs, from the one-world probe ``env``.

    Args:
        algo: the algorithm's name (for :func:`update_bytes_per_sample`).
        algo_cfg: the algorithm's config (``buffer_size_per_env``, ``batch_size``; a missing key
            counts as absent).
        runtime: the execution settings (``mode``, ``num_blocks``, ``block_steps``).
        num_envs: ``training.num_envs``.
        env: a one-world env of the task (``obs_dims``, ``num_actions``, ``backend``).
        device: the learner device.
        local_ranks: learner processes on this host (``training.devices``): host parts scale with
            it, each rank's device parts stay on its own device.
    """
    is_async = runtime.mode == "async"
    groups = {g: d for g, d in env.obs_dims.items() if g in ("actor", "critic")} or dict(env.obs_dims)
    per_transition = bytes_per_transition(groups, env.num_actions)
    on_device = device.type not in ("cpu", "mps")  # MPS shares the host's memory
    world = bytes_per_world(env)
    out = MemoryEstimate(device=device)
    ranks = f" on {local_ranks} ranks" if local_ranks > 1 else ""
    copies = 2 if is_async else 1  # async: the trainer's env and the collectors' envs
    out.parts.append(Part(
        "envs", {"training.num_envs": num_envs},
        f"{'2 x ' if is_async else ''}{num_envs} worlds{ranks} of {_size(world)}",
        copies * num_envs * world * local_ranks, False))
    size = int(getattr(algo_cfg, "buffer_size_per_env", 0))
    if size:
        out.parts.append(Part(
            "replay buffer", {"algo.buffer_size_per_env": size, "training.num_envs": num_envs},
            f"{size} x {num_envs} transitions of {_size(per_transition)}",
            size * num_envs * per_transition * (1 if on_device else local_ranks), on_device))
    if is_async:
        num_blocks, block_steps = runtime.num_blocks, runtime.block_steps
        out.parts.append(Part(
            "async block ring",
            {"runtime.num_blocks": num_blocks, "runtime.block_steps": block_steps, "training.num_envs": num_envs},
            f"{num_blocks} x {block_steps} x {num_envs} transitions",
            num_blocks * block_steps * num_envs * per_transition * local_ranks, False))
    batch = int(getattr(algo_cfg, "batch_size", 0))
    if batch:
        per_sample = update_bytes_per_sample(algo, algo_cfg)
        out.parts.append(Part(
            "gradient update", {"algo.batch_size": batch}, f"{batch} samples of {_size(per_sample)}",
            batch * per_sample * (1 if on_device else local_ranks), on_device))
    return out


def available_host_bytes() -> int | None:
    """Memory the host can give now: ``MemAvailable`` (Linux), else free physical pages; None if
    unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def available_device_bytes(device: torch.device) -> int | None:
    """Free memory of a CUDA (or XPU) learner device now; None for other devices or if unknown."""
    try:
        if device.type == "cuda":
            return int(torch.cuda.mem_get_info(device)[0])
        if device.type == "xpu" and hasattr(torch.xpu, "mem_get_info"):
            return int(torch.xpu.mem_get_info(device)[0])
    except (RuntimeError, AssertionError):
        return None
    return None


def refusal(est: MemoryEstimate, host: int | None, device: int | None) -> str | None:
    """The one-line reason to refuse ``est`` (None when it fits): the keys of its largest part with
    their values, which memory is short, the estimate and its parts, what is available, and the
    override."""
    for on_device, have, where in ((False, host, "host memory"), (True, device, f"memory on {est.device}")):
        need = est.total(on_device)
        if have is None or need <= have:
            continue
        parts = sorted((p for p in est.parts if p.on_device == on_device), key=lambda p: -p.nbytes)
        keys = parts[0].keys
        listed = "; ".join(f"{p.what} {_size(p.nbytes)}: {p.detail}" for p in parts if p.nbytes)
        return (f"{', '.join(f'{k}={v}' for k, v in keys.items())}: this run needs about {_size(need)} of "
                f"{where} ({listed}), but {_size(have)} is available; lower {' or '.join(keys)}, or set "
                f"training.allow_large=true to start anyway")
    return None


def check(algo: str, algo_cfg: Any, runtime: Any, num_envs: int, env, device: torch.device,
          local_ranks: int = 1) -> MemoryEstimate:
    """:func:`estimate`, compared with what this machine and device have now.

    Raises:
        UserError: the estimate exceeds the available host or device memory (:func:`refusal`).
    """
    from unilab.errors import UserError

    est = estimate(algo, algo_cfg, runtime, num_envs, env, device, local_ranks)
    reason = refusal(est, available_host_bytes(), available_device_bytes(device))
    if reason:
        raise UserError(reason)
    return est


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is an allocation that failed: ``MemoryError``, ``torch.OutOfMemoryError``
    (CUDA), or torch's CPU allocator's ``RuntimeError`` ("can't allocate memory")."""
    if isinstance(exc, (MemoryError, torch.OutOfMemoryError)):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("can't allocate memory" in text or "out of memory" in text)


def _size(nbytes: float) -> str:
    """``1.5 GB`` (decimal units)."""
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(nbytes) < 1000 or unit == "PB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1000
    return f"{nbytes:.1f} PB"


__all__ = ["MemoryEstimate", "Part", "available_device_bytes", "available_host_bytes", "bytes_per_transition",
           "bytes_per_world", "check", "estimate", "is_out_of_memory", "refusal"]
