"""What crosses between the learner and its collectors: transition blocks, actor weights and,
with ``runtime.policy_device=server``, acting requests, all in shared memory (torch shares the
storage through file descriptors: no file or manager process is left behind)."""

from __future__ import annotations

import os
import select
import struct
from collections.abc import Callable

import torch
from torch import nn

POLL_S = 0.2
"""Seconds between liveness checks while waiting on a queue or a lock."""


class CollectorDied(RuntimeError):
    """The collector process exited or raised while the learner still needed data.

    ``collector_failure`` tells :func:`unilab_rl.runner.loop.classify` to record the run as
    ``failed``.

    Attributes:
        exitcode: the process's exit code (negative: killed by that signal), or None if unknown.
        iteration: the learner's iteration counter when the death was noticed.
    """

    def __init__(self, message: str, exitcode: int | None = None, iteration: int | None = None) -> None:
        super().__init__(message)
        self.exitcode = exitcode
        self.iteration = iteration

    collector_failure = True



class SharedBlocks:
    """A ring of ``num_blocks`` transition blocks in shared memory.

    Each field is one tensor whose first two dimensions are (block, step):

    - ``obs[g]``, ``next_obs[g]``: (num_blocks, block_steps, num_envs, obs_dims[g]) float32;
      ``next_obs`` is the env's ``extras["final_obs"]`` (pre-reset observation).
    - ``actions``: (num_blocks, block_steps, num_envs, A) float32.
    - ``rewards``: (num_blocks, block_steps, num_envs) float32.
    - ``terminated``: (num_blocks, block_steps, num_envs) bool.
    - ``truncated``: (num_blocks, block_steps, num_envs) bool (time-outs; FlashSAC's reward scaling
      ends its running returns on them, SAC ignores them).

    Created in the learner and pickled to the collector (torch shares the storage through file
    descriptors: no file or manager process is left behind).

    Raises:
        ValueError: a size < 1.
    """

    def __init__(self, num_blocks: int, block_steps: int, num_envs: int, obs_dims: dict[str, int], num_actions: int):
        if min(num_blocks, block_steps, num_envs, num_actions, *obs_dims.values()) < 1:
            raise ValueError(
                f"SharedBlocks sizes must be >= 1, got num_blocks={num_blocks}, block_steps={block_steps}, "
                f"num_envs={num_envs}, obs_dims={obs_dims}, num_actions={num_actions}"
            )
        self.num_blocks, self.block_steps, self.num_envs = num_blocks, block_steps, num_envs
        self.obs_dims = dict(obs_dims)
        lead = (num_blocks, block_steps, num_envs)
        self.obs = {g: torch.zeros(*lead, d).share_memory_() for g, d in obs_dims.items()}
        self.next_obs = {g: torch.zeros(*lead, d).share_memory_() for g, d in obs_dims.items()}
        self.actions = torch.zeros(*lead, num_actions).share_memory_()
        self.rewards = torch.zeros(*lead).share_memory_()
        self.terminated = torch.zeros(*lead, dtype=torch.bool).share_memory_()
        self.truncated = torch.zeros(*lead, dtype=torch.bool).share_memory_()

    def block_nbytes(self) -> int:
        """Bytes of one full block."""
        return sum(t[0].numel() * t.element_size() for t in self.tensors())

    def tensors(self) -> list[torch.Tensor]:
        """Every shared tensor of the ring."""
        return [*self.obs.values(), *self.next_obs.values(), self.actions, self.rewards, self.terminated,
                self.truncated]

    def pin(self) -> bool:
        """Page-lock the ring for the CUDA driver (:func:`pin_tensors`), so block copies to the
        GPU need no staging copy. Learner side only. Returns False (and leaves nothing registered)
        when CUDA is unavailable or registration fails; the copies then go through pageable
        memory, which is correct, only slower."""
        self._pinned = pin_tensors(self.tensors())
        return bool(self._pinned)

    def unpin(self) -> None:
        """Undo :meth:`pin` (before the storage goes away). Never raises."""
        unpin_tensors(getattr(self, "_pinned", []))
        self._pinned = []

    def write(self, block: int, step: int, obs, actions, rewards, terminated, next_obs, env_start: int = 0,
              truncated: torch.Tensor | None = None) -> None:
        """Copy one env step ((n, ...) tensors as the env returns them) into ``block`` at ``step``,
        env columns ``env_start : env_start + n`` (a collector's shard; the whole block when n = N).
        ``truncated`` (n,) bool; None writes False."""
        rows = slice(env_start, env_start + rewards.shape[0])
        for g in self.obs_dims:
            self.obs[g][block, step, rows].copy_(obs[g])
            self.next_obs[g][block, step, rows].copy_(next_obs[g])
        self.actions[block, step, rows].copy_(actions)
        self.rewards[block, step, rows].copy_(rewards)
        self.terminated[block, step, rows].copy_(terminated)
        if truncated is None:
            self.truncated[block, step, rows] = False
        else:
            self.truncated[block, step, rows].copy_(truncated)

    def view(self, block: int, steps: int) -> tuple[dict, torch.Tensor, torch.Tensor, torch.Tensor, dict]:
        """(obs, actions, rewards, terminated, next_obs) of the first ``steps`` steps of ``block``,
        each (steps, N, ...), views of the shared storage."""
        return (
            {g: v[block, :steps] for g, v in self.obs.items()},
            self.actions[block, :steps],
            self.rewards[block, :steps],
            self.terminated[block, :steps],
            {g: v[block, :steps] for g, v in self.next_obs.items()},
        )

    def view_truncated(self, block: int, steps: int) -> torch.Tensor:
        """(steps, N) bool time-outs of the first ``steps`` steps of ``block`` (a view)."""
        return self.truncated[block, :steps]


def pin_tensors(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Page-lock the storage of CPU ``tensors`` for the CUDA driver (``cudaHostRegister``), so
    copies between them and a GPU are direct (and asynchronous with ``non_blocking=True``).

    Returns:
        the tensors registered (all of them), or ``[]`` when CUDA is unavailable or a
        registration fails (then nothing is left registered: pinning is an optimization).
    """
    done: list[torch.Tensor] = []
    try:
        cudart = torch.cuda.cudart()
        for t in tensors:
            err = cudart.cudaHostRegister(t.data_ptr(), t.numel() * t.element_size(), 0)
            if int(err) != 0:
                raise RuntimeError(f"cudaHostRegister: {err}")
            done.append(t)
    except Exception:  # noqa: BLE001 - pinning is an optimization
        unpin_tensors(done)
        return []
    return done


def unpin_tensors(tensors: list[torch.Tensor]) -> None:
    """Undo :func:`pin_tensors` (before the storage goes away). Never raises."""
    for t in tensors:
        try:
            torch.cuda.cudart().cudaHostUnregister(t.data_ptr())
        except Exception:  # noqa: BLE001
            pass


class ActingSlots:
    """The acting server's request slots (``runtime.policy_device=server``): one per env shard,
    in shared memory, with a pipe and a semaphore per slot to signal through.

    - ``obs``: (num_slots, rows, obs_dim) float32, a shard's raw actor observations;
    - ``out``: (num_slots, 2, rows, num_actions) float32, the answer: the exploration policy's
      pre-squash Gaussian, mean in ``out[s, 0]`` and log std in ``out[s, 1]``.

    A request (:meth:`request`, collector side): the shard writes its observations into its slot,
    then its slot index (int32, 4 bytes) into the one request pipe every collector shares (a write
    this small is atomic, so requests never interleave), and waits on its slot's semaphore. The
    server (:meth:`wait`, :meth:`answer`) reads every queued index from the pipe at once, writes
    each answer and releases that slot's semaphore. The pipe's syscalls and the semaphore order
    each side's shared-memory writes before the other side's reads. One request per slot is in
    flight at a time, so the pipe (64 KiB) never fills.

    Created in the learner and pickled to the collectors (spawn), as :class:`SharedBlocks` is.

    Args:
        num_slots: env shards over all collectors.
        rows: envs per shard.
        obs_dim: width of the ``"actor"`` observation group.
        num_actions: A.
        ctx: the multiprocessing context the collectors are started with.

    Raises:
        ValueError: a size < 1.
    """

    WAKE = -1
    """The slot index :meth:`wake` writes: no request, the server's wait just returns."""

    def __init__(self, num_slots: int, rows: int, obs_dim: int, num_actions: int, ctx) -> None:
        if min(num_slots, rows, obs_dim, num_actions) < 1:
            raise ValueError(f"ActingSlots sizes must be >= 1, got num_slots={num_slots}, rows={rows}, "
                             f"obs_dim={obs_dim}, num_actions={num_actions}")
        self.num_slots, self.rows = num_slots, rows
        self.obs = torch.zeros(num_slots, rows, obs_dim).share_memory_()
        self.out = torch.zeros(num_slots, 2, rows, num_actions).share_memory_()
        self._requests, self._requests_in = ctx.Pipe(duplex=False)  # (read end, write end)
        self._answered = [ctx.Semaphore(0) for _ in range(num_slots)]
        self._views()

    def _views(self) -> None:
        """Per-slot views and the server's state, made once (on each side of the pickle): an
        acting call is short, so even a tensor index op counts."""
        self.obs_of = list(self.obs.unbind(0))  # slot -> (rows, obs_dim)
        self.out_of = [tuple(out.unbind(0)) for out in self.out.unbind(0)]  # slot -> (mean, log_std)
        self._poll: select.poll | None = None  # the server's poller of the request pipe
        self._partial = b""  # the server's read of an incomplete record (never seen: writes are atomic)
        self._pinned: list[torch.Tensor] = []

    # -- collector side ---------------------------------------------------------------------
    def request(self, slot: int, obs: torch.Tensor,
                stopping: Callable[[], bool]) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Ask the server to act on ``obs`` ((rows, obs_dim) float32, CPU) and wait for it.

        Returns:
            ``(mean, log_std)``, (rows, A) float32 each: views of the slot, valid until this
            slot's next request; or None when ``stopping()`` became true while waiting (asked
            every :data:`POLL_S`).
        """
        self.obs_of[slot].copy_(obs)
        os.write(self._requests_in.fileno(), struct.pack("<i", slot))
        while not self._answered[slot].acquire(timeout=POLL_S):
            if stopping():
                return None
        return self.out_of[slot]

    # -- server side -------------------------------------------------------------------------
    def wait(self, timeout_s: float) -> list[int]:
        """The slots whose requests arrived, in order (empty after ``timeout_s`` seconds without
        one, or after a :meth:`wake`)."""
        if self._poll is None:
            self._poll = select.poll()
            self._poll.register(self._requests.fileno(), select.POLLIN)
        if not self._poll.poll(timeout_s * 1000):
            return []
        data = self._partial + os.read(self._requests.fileno(), 4 * 1024)
        whole = len(data) - len(data) % 4
        self._partial = data[whole:]
        return [s for (s,) in struct.iter_unpack("<i", data[:whole]) if s != self.WAKE]

    def answer(self, slot: int) -> None:
        """Tell ``slot``'s collector that ``out[slot]`` holds its answer."""
        self._answered[slot].release()

    def wake(self) -> None:
        """Make a pending :meth:`wait` return now (e.g. to stop the server)."""
        os.write(self._requests_in.fileno(), struct.pack("<i", self.WAKE))

    def pin(self) -> bool:
        """Page-lock ``obs`` and ``out`` (:func:`pin_tensors`) so the server's copies to and from
        a CUDA device are direct. Learner side only; False when not pinned."""
        self._pinned = pin_tensors([self.obs, self.out])
        return bool(self._pinned)

    def unpin(self) -> None:
        """Undo :meth:`pin`. Never raises."""
        unpin_tensors(self._pinned)
        self._pinned = []

    def __getstate__(self) -> dict:
        """Pickled without the views and the server's state (remade on arrival) or the
        learner's pinned list (pinning is the learner's own)."""
        skip = ("obs_of", "out_of", "_poll", "_partial", "_pinned")
        return {k: v for k, v in self.__dict__.items() if k not in skip}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._views()


def flat_state(module: nn.Module) -> torch.Tensor:
    """The floating-point entries of ``module.state_dict()`` concatenated: (P,) float32 on the
    module's device (parameters and normalizer statistics; integer buffers are skipped)."""
    parts = [t.detach().reshape(-1).float() for t in module.state_dict().values() if t.is_floating_point()]
    return torch.cat(parts)


def load_flat_state(module: nn.Module, flat: torch.Tensor) -> None:
    """Inverse of :func:`flat_state`: copy (P,) values into the module's floating-point state.

    ``flat`` may live on another device than the module (the collector's shared vector is on the
    CPU): it is moved to the module's device in one copy, then split.

    Raises:
        ValueError: ``flat`` has the wrong length.
    """
    tensors = [t for t in module.state_dict(keep_vars=True).values() if t.is_floating_point()]
    total = sum(t.numel() for t in tensors)
    if flat.numel() != total:
        raise ValueError(f"flat state has {flat.numel()} values, the module {total}")
    if tensors:
        flat = flat.to(tensors[0].device)
    offset = 0
    with torch.no_grad():
        for t in tensors:
            t.copy_(flat[offset : offset + t.numel()].view_as(t))
            offset += t.numel()


class SharedWeights:
    """Actor weights (+ normalizer statistics) broadcast from learner to collector.

    ``values``: (P,) float32 shared vector; ``version``: (1,) int64 shared counter, bumped by each
    :meth:`publish`; a multiprocessing lock guards both. Waits for the lock are bounded
    (:data:`POLL_S`) and call ``alive()`` between tries, so a peer killed while holding it cannot
    hang the other side forever.
    """

    def __init__(self, size: int, ctx) -> None:
        self.values = torch.zeros(size).share_memory_()
        self.version = torch.zeros(1, dtype=torch.int64).share_memory_()
        self.lock = ctx.Lock()

    def _acquire(self, alive: Callable[[], bool]) -> None:
        while not self.lock.acquire(timeout=POLL_S):
            if not alive():
                raise CollectorDied("the weight lock's other holder died")

    def publish(self, flat: torch.Tensor, alive: Callable[[], bool] = lambda: True) -> int:
        """Copy (P,) ``flat`` (any device; moved to the CPU before locking), bump the version.

        Returns:
            bytes written.
        """
        flat = flat.detach().to("cpu", torch.float32)
        self._acquire(alive)
        try:
            self.values.copy_(flat)
            self.version += 1
        finally:
            self.lock.release()
        return flat.numel() * 4

    def pull(self, into: nn.Module, have: int, alive: Callable[[], bool] = lambda: True) -> int:
        """Load the weights into ``into`` if their version differs from ``have``.

        Returns:
            the version now loaded (``have`` when nothing changed).
        """
        if int(self.version[0]) == have:  # unlocked peek: a torn read only delays the pull
            return have
        self._acquire(alive)
        try:
            flat = self.values.clone()
            version = int(self.version[0])
        finally:
            self.lock.release()
        load_flat_state(into, flat)
        return version


__all__ = ["POLL_S", "ActingSlots", "CollectorDied", "SharedBlocks", "SharedWeights", "flat_state", "load_flat_state",
           "pin_tensors", "unpin_tensors"]
