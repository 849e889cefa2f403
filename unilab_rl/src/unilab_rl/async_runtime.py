"""Asynchronous off-policy runtime: a collector process steps the env while the learner updates.

::

    collector process (CPU only)                    learner = main process (owns the replay)
    ---------------------------------------         -----------------------------------------
    env = env_fn(); obs = env.reset()               start collector, hand it every block
    loop:                                           loop:
      i = free.get()      (waits: backpressure)       i, info = full.get()   (waits: starved)
      T steps: act (random during warm-up, else       one copy of block i into the replay,
        the actor copy), env.step, write              free.put(i)
        obs, a, r, terminated, final_obs into i       T iterations: num_updates updates each,
      full.put((i, episode stats + env logs))         log, checkpoint; every sync_weights_every
      pull actor weights when their version moved     updates: broadcast actor + normalizer

Transitions cross through a preallocated ring of ``num_blocks`` shared-memory blocks
(:class:`SharedBlocks`); block indices travel over two queues (free, full). Actor weights and the
actor's observation normalizer travel back through one shared float32 vector with a version
counter (:class:`SharedWeights`). With ``policy_device="cpu"`` (the default) the collector's actor
copy runs on its ``collector_threads`` torch threads and it never initializes CUDA
(``CUDA_VISIBLE_DEVICES`` is emptied in it); with ``"learner"`` the copy lives on the learner's
device (:func:`collector_policy_device`), each env step's actor observations go there and the
actions come back, and a CUDA learner device costs the collector its own CUDA context. Physics
has its own thread pool either way.

The update-to-data ratio is held by design: the learner runs exactly ``num_updates`` updates per
env step it receives; when it is the slower side the collector waits for a free block, when the
collector is slower the learner waits for a full one. Both waits are measured.

Shards: the N envs can be split into J = K x S shards, K collector processes
(``cfg.num_collectors``) of S threads each (``cfg.collector_shards``). Shard j steps its own env,
``env_fn(num_envs=N/J, seed=env_seed + j * SHARD_SEED_STRIDE)``, into env columns
``[j*N/J, (j+1)*N/J)`` of the same blocks, with its own free and full queue; the learner hands
every block index to all J and stores a block once all J filled it. The S shards of one process
share nothing but the process: MuJoCo releases the GIL while it steps, so one shard's env code
and policy run while another's physics does (each shard's physics pool has the process's
threads, so the pools oversubscribe the cores by S). Each shard draws its policy noise from its
own generator state (:class:`ShardNoise`), so its data does not depend on thread order.

One iteration is, as in the synchronous runner, one env step of all envs plus its updates, so
iteration counts, checkpoints, metrics and ``learning_starts`` mean the same in both runtimes.

Learner interface (:class:`AsyncLearner`): everything the runner and its collectors use from the
agent, so any learner providing it runs async without changes here (SAC and FlashSAC both do):

- sizes and places: ``num_envs``, ``num_actions``, ``device`` (learner), ``action_low`` /
  ``action_high`` ((A,) bounds; warm-up actions are
  :func:`~unilab_rl.algorithms.sac.agent.uniform_actions` in that box, drawn in the collector with
  its seeded CPU generator: the agent's ``random_actions(n, generator)`` must draw the same);
- ``cfg`` with ``learning_starts``, ``num_updates``, ``batch_size`` and the runtime keys
  ``block_steps``, ``num_blocks``, ``sync_weights_every``, ``collector_threads`` and optionally
  ``num_collectors`` and ``collector_shards`` (default 1) and ``policy_device`` (default ``"cpu"``);
- ``replay`` with ``obs_dims``, ``capacity`` and ``len()``;
- ``exploration_policy()``: an ``nn.Module`` mapping raw ``"actor"`` observations (B, Da) float32
  to collection actions (B, A) float32, sharing the learner's weights. The collector runs a deep
  copy of it (on the CPU or the learner's device, ``policy_device``), which must draw its sampling
  noise on the observations' device; its floating-point ``state_dict`` entries (:func:`flat_state`:
  parameters *and* buffers such as normalizer or batch-norm running statistics) are what is
  broadcast. Any other state it needs (e.g. FlashSAC's held exploration noise) lives in the module
  and is rebuilt by the copy; it must not hold device tensors across pickling;
- ``store_steps(obs, actions, rewards, terminated, next_obs, truncated=...)``: T env steps at
  once, (T, N, ...) tensors, returning the bytes copied;
- ``update() -> dict[str, float]``: ``cfg.num_updates`` gradient updates;
- ``iteration``: the iteration counter the runner advances.

Lifecycle: :meth:`AsyncOffPolicyRunner.learn` always stops its collector before returning or
raising (stop event, join with a timeout, then terminate, then kill) and records the exit code in
:attr:`AsyncOffPolicyRunner.collector_exitcode` and problems in ``cleanup_errors``. A collector
that dies or raises makes ``learn`` raise :class:`CollectorDied`. The collector ignores SIGINT
(a terminal's Ctrl-C reaches the whole process group; the learner decides), stops cleanly on
SIGTERM, and exits when its parent process goes away.
"""

from __future__ import annotations

import copy
import ctypes
import math
import os
import queue
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import torch
import torch.multiprocessing as tmp
from torch import nn

from unilab_rl.runner import EpisodeLogWindow, LearnSummary, draw_seed, loop_settings
from unilab_rl.vecenv import VecEnv

POLL_S = 0.2
"""Seconds between liveness checks while waiting on a queue or a lock."""

SHARD_SEED_STRIDE = 1_000_003
"""Collector ``k`` (of several) seeds its env with ``env_seed + k * SHARD_SEED_STRIDE`` and its
action sampling with ``seed + k * SHARD_SEED_STRIDE`` (a prime: shards never share a stream)."""


def _merge_logs(logs: list[dict[str, float]], finished: list[int]) -> dict[str, float]:
    """One step's env logs of several shards as one: the mean over the shards that logged a key,
    weighted for ``Episode_*`` keys by the episodes each shard finished at that step (when any
    did; shards are equal in size, so other keys are plain means)."""
    merged: dict[str, float] = {}
    for key in dict.fromkeys(k for log in logs for k in log):
        pairs = [(log[key], n) for log, n in zip(logs, finished) if key in log]
        total = sum(n for _, n in pairs)
        if key.startswith("Episode_") and total > 0:
            merged[key] = sum(v * n for v, n in pairs) / total
        else:
            merged[key] = sum(v for v, _ in pairs) / len(pairs)
    return merged


class CollectorDied(RuntimeError):
    """The collector process exited or raised while the learner still needed data.

    Attributes:
        exitcode: the process's exit code (negative: killed by that signal), or None if unknown.
        iteration: the learner's iteration counter when the death was noticed.
    """

    def __init__(self, message: str, exitcode: int | None = None, iteration: int | None = None) -> None:
        super().__init__(message)
        self.exitcode = exitcode
        self.iteration = iteration


# ----------------------------------------------------------------------------- learner interface
ASYNC_CONFIG_KEYS = ("learning_starts", "num_updates", "batch_size", "block_steps", "num_blocks",
                     "sync_weights_every", "collector_threads")
"""Fields the runner reads from ``learner.cfg`` (``num_collectors``, ``collector_shards`` and
``policy_device`` are optional, default 1, 1 and ``"cpu"``)."""

COLLECTOR_PHASES = ("pull", "policy", "physics", "env", "write")
"""How a collector's step time splits (seconds per block, reported with it): ``pull`` (actor weights),
``policy`` (acting, or the warm-up's uniform draw), ``physics`` (the env's ``backend.step``, when
the env reports ``physics_time_s``; else 0 and counted in ``env``), ``env`` (the rest of
``env.step``: action processing, terms, resets, events) and ``write`` (the block write and episode
bookkeeping)."""

POLICY_DEVICES = ("cpu", "learner")
"""Values of ``cfg.policy_device``: where the collector evaluates the exploration policy."""


def collector_policy_device(policy_device: str, learner_device: torch.device | str) -> str:
    """The device the collectors run the exploration policy on.

    Args:
        policy_device: ``cfg.policy_device``, ``"cpu"`` or ``"learner"``.
        learner_device: the learner's device (``algo.device``), e.g. ``cuda:1`` on rank 1.

    Returns:
        ``"cpu"``, or ``str(learner_device)`` for ``"learner"`` (``"cpu"`` for a CPU learner).

    Raises:
        ValueError: ``policy_device`` is neither ``"cpu"`` nor ``"learner"``.
    """
    if policy_device not in POLICY_DEVICES:
        raise ValueError(f"policy_device must be 'cpu' or 'learner', got {policy_device!r}")
    return "cpu" if policy_device == "cpu" else str(torch.device(learner_device))


@runtime_checkable
class AsyncLearner(Protocol):
    """What :class:`AsyncOffPolicyRunner` uses from a learner (see the module docstring).

    Implemented by :class:`~unilab_rl.algorithms.sac.SAC` and
    :class:`~unilab_rl.algorithms.flashsac.FlashSAC`. Shapes: T steps of a block, N envs, A
    actions, d an observation group's size, Da the ``"actor"`` group's.

    Attributes:
        cfg: settings with the fields of :data:`ASYNC_CONFIG_KEYS` (and optionally ``num_collectors``).
        num_envs: N; num_actions: A; device: the learner's ``torch.device``.
        action_low, action_high: (A,) float32 bounds of the action box (any device).
        replay: replay buffer with ``obs_dims`` (group -> d), ``capacity`` and ``__len__``.
        iteration: iterations completed; the runner increments it.
    """

    cfg: Any
    num_envs: int
    num_actions: int
    device: torch.device
    action_low: torch.Tensor
    action_high: torch.Tensor
    replay: Any
    iteration: int

    def exploration_policy(self) -> nn.Module:
        """Live collection policy sharing the learner's weights: (B, Da) raw float32 -> (B, A) float32."""
        ...

    def store_steps(self, obs: dict[str, torch.Tensor], actions: torch.Tensor, rewards: torch.Tensor,
                    terminated: torch.Tensor, next_obs: dict[str, torch.Tensor],
                    truncated: torch.Tensor | None = None) -> int:
        """Store T steps: obs/next_obs group -> (T, N, d) float32, actions (T, N, A) float32,
        rewards (T, N) float32, terminated/truncated (T, N) bool. Returns bytes copied."""
        ...

    def update(self) -> dict[str, float]:
        """``cfg.num_updates`` gradient updates; scalar metrics."""
        ...


def missing_async_members(agent: Any) -> list[str]:
    """Names of :class:`AsyncLearner` members (and ``cfg`` fields, as ``cfg.<name>``) that
    ``agent`` lacks; empty when it can run in :class:`AsyncOffPolicyRunner`."""
    names = ["cfg", "num_envs", "num_actions", "device", "action_low", "action_high", "replay", "iteration",
             "exploration_policy", "store_steps", "update"]
    missing = [n for n in names if not hasattr(agent, n)]
    cfg = getattr(agent, "cfg", None)
    if cfg is not None:
        missing += [f"cfg.{k}" for k in ASYNC_CONFIG_KEYS if not hasattr(cfg, k)]
    return missing


# ----------------------------------------------------------------------------- shared memory
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
        """Page-lock the ring for the CUDA driver (``cudaHostRegister``), so block copies to the
        GPU need no staging copy. Learner side only. Returns False (and leaves nothing registered)
        when CUDA is unavailable or registration fails; the copies then go through pageable
        memory, which is correct, only slower."""
        done: list[torch.Tensor] = []
        try:
            cudart = torch.cuda.cudart()
            for t in self.tensors():
                err = cudart.cudaHostRegister(t.data_ptr(), t.numel() * t.element_size(), 0)
                if int(err) != 0:
                    raise RuntimeError(f"cudaHostRegister: {err}")
                done.append(t)
        except Exception:  # noqa: BLE001 - pinning is an optimization
            self._unregister(done)
            return False
        self._pinned = done
        return True

    def unpin(self) -> None:
        """Undo :meth:`pin` (before the storage goes away). Never raises."""
        self._unregister(getattr(self, "_pinned", []))
        self._pinned = []

    @staticmethod
    def _unregister(tensors: list[torch.Tensor]) -> None:
        for t in tensors:
            try:
                torch.cuda.cudart().cudaHostUnregister(t.data_ptr())
            except Exception:  # noqa: BLE001
                pass

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


# ----------------------------------------------------------------------------- collector
@dataclass
class CollectorSpec:
    """Plain settings handed to the collector process."""

    total_steps: int
    start_iteration: int
    learning_starts: int
    seed: int
    torch_threads: int
    parent_pid: int
    action_low: torch.Tensor
    action_high: torch.Tensor
    shard: int = 0
    """This collector's index (0 .. num_shards - 1)."""
    num_shards: int = 1
    env_start: int = 0
    """First env column of this collector's shard in every block."""
    num_envs: int = 0
    """Envs of this shard (0: the whole block)."""
    env_kwargs: dict[str, Any] | None = None
    """Keyword arguments for ``env_fn`` (``num_envs`` and ``seed`` of the shard); None: ``env_fn()``."""
    policy_device: str = "cpu"
    """Where the policy copy runs (:func:`collector_policy_device`: ``"cpu"`` or the learner's
    device, e.g. ``"cuda:1"``). Unless it is a CUDA device, ``CUDA_VISIBLE_DEVICES`` is emptied."""


def _set_parent_death_signal() -> None:
    """Linux: have the kernel SIGKILL this process when its parent thread exits (best effort)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:
            pass


class ShardNoise:
    """One env shard's own policy-noise stream when several shards share a process.

    A policy draws its sampling noise from the process-wide generator of its device. Shards in
    threads would take turns on it in thread order, which differs from run to run. Around each
    policy call this swaps in the shard's own generator state, under a lock shared by the
    process's shards, and keeps the state it leaves. A shard's noise then depends on its seed
    alone, as it would in a process of its own.

    Args:
        seed: the shard's noise seed.
        device: the policy's device (``cpu`` or a CUDA device).
        lock: a ``threading.Lock`` shared by the process's shards.
    """

    def __init__(self, seed: int, device: torch.device, lock: threading.Lock) -> None:
        self.device, self.lock = device, lock
        self.cuda = device.type == "cuda"
        self.state = torch.Generator(device).manual_seed(seed).get_state()

    def _get(self) -> torch.Tensor:
        return torch.cuda.get_rng_state(self.device) if self.cuda else torch.get_rng_state()

    def _set(self, state: torch.Tensor) -> None:
        if self.cuda:
            torch.cuda.set_rng_state(state, self.device)
        else:
            torch.set_rng_state(state)

    def __call__(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` drawing from this shard's stream."""
        with self.lock:
            saved = self._get()
            self._set(self.state)
            try:
                return fn(*args)
            finally:
                self.state = self._get()
                self._set(saved)


def _collector_main(env_fn, policy, blocks: SharedBlocks, weights: SharedWeights, free_qs, full_qs, stop_event,
                    specs: list[CollectorSpec]) -> None:
    """Collector process body (spawned): one env shard per entry of ``specs``, each with its own
    free and full queue (``free_qs[s]``, ``full_qs[s]``). One shard steps in this thread; several
    step in one thread each (:func:`_shard_loop`), so one shard's env code and policy run while
    another's physics (which releases the GIL) runs. Exit code 0 when stopped, 1 after reporting an
    error."""
    spec = specs[0]
    policy_device = torch.device(spec.policy_device)
    if policy_device.type != "cuda":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # never a CUDA context here
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C hits the group; the learner decides
    term = threading.Event()
    abort = threading.Event()  # a shard thread failed: the others stop
    signal.signal(signal.SIGTERM, lambda *_: term.set())
    _set_parent_death_signal()
    torch.set_num_threads(spec.torch_threads)

    def stopping() -> bool:
        return stop_event.is_set() or term.is_set() or abort.is_set() or os.getppid() != spec.parent_pid

    envs: list[VecEnv] = []
    failed: list[tuple[int, BaseException]] = []  # (shard position, error) from the shard threads
    try:
        torch.manual_seed(spec.seed + 1)  # policy sampling noise
        for shard_spec in specs:
            env = env_fn(**(shard_spec.env_kwargs or {}))
            envs.append(env)
            expected = shard_spec.num_envs or blocks.num_envs
            if env.num_envs != expected:
                raise ValueError(f"env_fn built {env.num_envs} envs, the learner expects {expected}")
            if torch.device(env.device).type != "cpu":
                raise ValueError(f"the async collector needs a CPU (host-bridge) env, got device {env.device}")
        policies = [policy] + [copy.deepcopy(policy) for _ in specs[1:]]
        if len(specs) == 1:
            _shard_loop(envs[0], policies[0], blocks, weights, free_qs[0], full_qs[0], specs[0], stopping)
        else:
            lock = threading.Lock()
            noises = [ShardNoise(sp.seed + 1, policy_device, lock) for sp in specs]

            def run(s: int) -> None:
                try:
                    _shard_loop(envs[s], policies[s], blocks, weights, free_qs[s], full_qs[s], specs[s], stopping,
                                noises[s])
                except BaseException as exc:  # noqa: BLE001 - reported by the process, below
                    failed.append((s, exc))
                    abort.set()

            threads = [threading.Thread(target=run, args=(s,), name=f"unilab-shard-{sp.shard}", daemon=True)
                       for s, sp in enumerate(specs)]
            for thread in threads:
                thread.start()
            for thread in threads:
                while thread.is_alive():  # a timed join lets the SIGTERM handler run meanwhile
                    thread.join(POLL_S)
            if failed:
                s, exc = failed[0]
                raise RuntimeError(f"collector shard {specs[s].shard} failed: {type(exc).__name__}: {exc}") from exc
        while not stopping():  # all data delivered: wait to be stopped
            time.sleep(POLL_S)
    except BaseException:  # noqa: BLE001 - reported to the learner, then a non-zero exit
        if not failed and stopping():  # e.g. a lock wait cut short by the stop: not an error
            return
        for env in envs:
            try:
                env.close()
            except Exception:  # noqa: BLE001 - the original error is the one to report
                pass
        envs = []
        position = failed[0][0] if failed else 0
        report = traceback.format_exc(limit=8)
        if failed:  # the shard thread's own traceback, not the re-raise's, and a last line naming the shard
            exc = failed[0][1]
            report = "".join(traceback.format_exception(exc, limit=8))
            report += f"collector shard {specs[position].shard} failed: {type(exc).__name__}: {exc}\n"
        full_qs[position].put(("error", report))
        full_qs[position].close()
        full_qs[position].join_thread()
        os._exit(1)
    finally:
        for env in envs:
            env.close()


def _shard_loop(env: VecEnv, policy: nn.Module, blocks: SharedBlocks, weights: SharedWeights, free_q, full_q,
                spec: CollectorSpec, stopping: Callable[[], bool], noise: ShardNoise | None = None) -> None:
    """Step one env shard: for every free block, ``block_steps`` env steps into the shard's env
    columns, then report the block full. Returns when ``spec.total_steps`` are delivered or
    :func:`stopping` says so; raises on any error. ``noise``: the shard's own policy-noise stream
    when shards share the process (None: the process-wide generator)."""
    from unilab_rl.algorithms.sac.agent import uniform_actions

    policy_device = torch.device(spec.policy_device)
    generator = torch.Generator().manual_seed(spec.seed)  # warm-up actions, as the sync runner
    policy.to(policy_device)  # parameters and buffers (normalizer, batch-norm statistics)
    obs = env.reset()
    num_envs = env.num_envs
    ep_return = torch.zeros(num_envs)
    ep_length = torch.zeros(num_envs, dtype=torch.long)
    version, pulls, iteration, produced = 0, 0, spec.start_iteration, 0
    alive = lambda: not stopping()  # noqa: E731
    while produced < spec.total_steps:
        t_wait = time.perf_counter()
        while True:
            if stopping():
                return
            try:
                block = free_q.get(timeout=POLL_S)
                break
            except queue.Empty:
                continue
        t0 = time.perf_counter()
        steps = min(blocks.block_steps, spec.total_steps - produced)
        finished: list[tuple[list[float], list[int]]] = []
        logs: list[dict[str, float]] = []
        phase = dict.fromkeys(COLLECTOR_PHASES, 0.0)
        physics_before = getattr(env, "physics_time_s", None)
        for t in range(steps):
            ta = time.perf_counter()
            new = weights.pull(policy, version, alive)
            pulls += new != version
            version = new
            tb = time.perf_counter()
            if iteration < spec.learning_starts:  # drawn on the CPU whatever the policy device
                actions = uniform_actions(spec.action_low, spec.action_high, num_envs, generator)
            else:
                actor_obs = obs["actor"].to(policy_device)
                actions = (policy(actor_obs) if noise is None else noise(policy, actor_obs)).to("cpu")
            tc = time.perf_counter()
            next_obs, rewards, terminated, truncated, extras = env.step(actions)
            td = time.perf_counter()
            phase["pull"] += tb - ta
            phase["policy"] += tc - tb
            phase["env"] += td - tc
            if "final_obs" not in extras:
                raise KeyError("env.step extras lack 'final_obs' (the pre-reset observation), required by VecEnv")
            blocks.write(block, t, obs, actions, rewards, terminated, extras["final_obs"], spec.env_start,
                         truncated)
            obs = next_obs
            ep_return += rewards
            ep_length += 1
            done = terminated | truncated
            if bool(done.any()):
                finished.append((ep_return[done].tolist(), ep_length[done].tolist()))
                ep_return[done] = 0.0
                ep_length[done] = 0
            else:
                finished.append(([], []))
            logs.append({k: float(v) for k, v in extras.get("log", {}).items()})
            iteration += 1
            phase["write"] += time.perf_counter() - td
        if physics_before is not None:  # env.step's time split: physics and the env's own work
            phase["physics"] = env.physics_time_s - physics_before
            phase["env"] -= phase["physics"]
        produced += steps
        info = {
            "steps": steps,
            "episodes": finished,
            "logs": logs,
            "collect_time": time.perf_counter() - t0,
            "wait_time": t0 - t_wait,
            "weight_pulls": pulls,
            "policy_version": version,
            "phase_time": phase,
        }
        full_q.put((block, info))


# ----------------------------------------------------------------------------- learner
class AsyncOffPolicyRunner:
    """Off-policy training with collection in a separate process (see the module docstring).

    Args:
        env_fn: picklable zero-argument callable building the :class:`VecEnv` in the collector
            (e.g. ``functools.partial(module_level_make_env, config)``); it must build a CPU env
            with ``algo.num_envs`` envs and the observation groups the learner stores.
        algo: the learner, an :class:`AsyncLearner` (:class:`~unilab_rl.algorithms.sac.SAC`,
            :class:`~unilab_rl.algorithms.flashsac.FlashSAC`).
        log_fn, checkpoint_fn, log_interval, checkpoint_interval, episode_window, seed: as
            :class:`~unilab_rl.runner.OffPolicyRunner`.
        start_timeout_s: seconds the learner waits for the first block (collector start: imports,
            env build) before failing.
        env_seed: base env seed of the shards when there are several (``num_collectors`` x
            ``collector_shards`` > 1; then
            ``env_fn`` is called with ``num_envs`` and ``seed`` keywords; default: ``seed``).

    Attributes:
        collector_exitcode: exit code of the last collector (None before one ran, or if it could
            not be reaped); negative: killed by that signal. Several collectors: the first
            non-zero one.
        collector_exitcodes: every collector's exit code, in shard order.
        cleanup_errors: problems met while stopping the collector (strings).
        transfer: counters: ``blocks``, ``bytes_to_learner``, ``weight_broadcasts``,
            ``weight_bytes``, ``weight_pulls``, and ``pinned`` (1 when the block ring is page-locked
            for CUDA copies).
        policy_device: where the collectors run the exploration policy (``"cpu"``, or the
            learner's device for ``cfg.policy_device="learner"``; :func:`collector_policy_device`).

    Raises:
        ValueError: an interval or window out of range, or ``cfg.policy_device`` not ``"cpu"`` /
            ``"learner"``.
        TypeError: ``algo`` lacks a member of :class:`AsyncLearner` (all missing ones are named).
    """

    def __init__(
        self,
        env_fn: Callable[[], VecEnv],
        algo: AsyncLearner,
        *,
        log_fn: Callable[[int, dict[str, float]], None] | None = None,
        checkpoint_fn: Callable[[int], None] | None = None,
        log_interval: int = 1,
        checkpoint_interval: int = 0,
        episode_window: int | None = None,
        seed: int | None = None,
        start_timeout_s: float = 300.0,
        env_seed: int | None = None,
    ) -> None:
        missing = missing_async_members(algo)
        if missing:
            raise TypeError(f"{type(algo).__name__} cannot run in the async runtime: it lacks {', '.join(missing)}")
        episode_window = loop_settings(log_interval, checkpoint_interval, episode_window, algo.num_envs)
        self.num_collectors = int(getattr(algo.cfg, "num_collectors", 1))
        self.collector_shards = int(getattr(algo.cfg, "collector_shards", 1))
        if self.num_collectors < 1 or self.collector_shards < 1 or algo.num_envs % (
                self.num_collectors * self.collector_shards):
            raise ValueError(
                f"num_collectors and collector_shards must be >= 1 and their product must divide num_envs, got "
                f"num_collectors={self.num_collectors}, collector_shards={self.collector_shards} and "
                f"num_envs={algo.num_envs}"
            )
        self.policy_device = collector_policy_device(getattr(algo.cfg, "policy_device", "cpu"), algo.device)
        self.env_fn = env_fn
        self.env_seed = env_seed
        self.algo = algo
        self.log_fn = log_fn
        self.checkpoint_fn = checkpoint_fn
        self.log_interval = log_interval
        self.checkpoint_interval = checkpoint_interval
        self.start_timeout_s = start_timeout_s
        self.episode_returns: deque[float] = deque(maxlen=episode_window)
        self.episode_lengths: deque[int] = deque(maxlen=episode_window)
        self.episode_log = EpisodeLogWindow(episode_window)
        self.seed = draw_seed() if seed is None else seed
        self.collector_exitcode: int | None = None
        self.collector_exitcodes: list[int | None] = []
        self.cleanup_errors: list[str] = []
        self.transfer = {"blocks": 0, "bytes_to_learner": 0, "weight_broadcasts": 0, "weight_bytes": 0,
                         "weight_pulls": 0, "pinned": 0}
        self._proc = None
        self._procs: list = []

    # -- process management -------------------------------------------------------------
    def _name(self, k: int) -> str:
        """How messages name collector ``k``: "collector process" alone, else with index and pid."""
        if len(self._procs) <= 1:
            return "collector process"
        try:
            pid = self._procs[k].pid
        except ValueError:  # closed
            pid = None
        return f"collector {k} of {len(self._procs)} (pid {pid})"

    def _start(self, num_steps: int, ctx) -> tuple:
        """Start the K collector processes; shard ``j = k * S + s`` (S = ``collector_shards``) is
        thread s of process k, with its own queue pair ``free_qs[j]``, ``full_qs[j]``."""
        algo, cfg = self.algo, self.algo.cfg
        k_all, s_all = self.num_collectors, self.collector_shards
        j_all = k_all * s_all
        shard_n = algo.num_envs // j_all
        blocks = SharedBlocks(cfg.num_blocks, cfg.block_steps, algo.num_envs, algo.replay.obs_dims, algo.num_actions)
        live = algo.exploration_policy()
        policy = copy.deepcopy(live).to("cpu")
        weights = SharedWeights(flat_state(live).numel(), ctx)
        stop = ctx.Event()
        free_qs, full_qs, procs = [], [], []
        env_seed = self.seed if self.env_seed is None else self.env_seed
        self._procs = procs
        # The child inherits an ignored SIGINT from the moment it exists (Python keeps SIG_IGN at
        # start-up), so a Ctrl-C during its imports cannot kill it with a traceback.
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            for k in range(k_all):
                specs = []
                for j in range(k * s_all, (k + 1) * s_all):
                    free_q, full_q = ctx.Queue(), ctx.Queue()
                    for i in range(cfg.num_blocks):
                        free_q.put(i)
                    free_qs.append(free_q)
                    full_qs.append(full_q)
                    specs.append(CollectorSpec(
                        total_steps=num_steps,
                        start_iteration=algo.iteration,
                        learning_starts=cfg.learning_starts,
                        seed=self.seed + j * SHARD_SEED_STRIDE,
                        torch_threads=cfg.collector_threads,
                        parent_pid=os.getpid(),
                        action_low=algo.action_low.detach().cpu(),
                        action_high=algo.action_high.detach().cpu(),
                        shard=j,
                        num_shards=j_all,
                        env_start=j * shard_n,
                        num_envs=shard_n,
                        env_kwargs=None if j_all == 1 else {"num_envs": shard_n,
                                                            "seed": env_seed + j * SHARD_SEED_STRIDE},
                        policy_device=self.policy_device,
                    ))
                proc = ctx.Process(
                    target=_collector_main,
                    args=(self.env_fn, policy, blocks, weights, free_qs[k * s_all:], full_qs[k * s_all:], stop, specs),
                    name="unilab-collector" if k_all == 1 else f"unilab-collector-{k}",
                    daemon=True,
                )
                procs.append(proc)
                proc.start()
        except BaseException:
            self._stop(procs, stop, (*free_qs, *full_qs))
            raise
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
        self._proc = procs[0]
        return procs, blocks, weights, free_qs, full_qs, stop

    def _stop(self, procs, stop, queues, timeout_s: float = 10.0) -> None:
        """Stop and reap every collector, holding back SIGINT/SIGTERM until they are reaped (they
        are re-raised afterwards, so the caller's handlers still see them). Never raises itself."""
        held: list[int] = []
        previous = {}
        if threading.current_thread() is threading.main_thread():
            previous = {s: signal.signal(s, lambda signum, frame: held.append(signum))
                        for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self._reap(procs, stop, queues, timeout_s)
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
            for signum in dict.fromkeys(held):
                signal.raise_signal(signum)

    def _reap(self, procs, stop, queues, timeout_s: float) -> None:
        """Event; join all (one shared deadline); terminate, join; kill, join; then close the
        queues and the processes. Records every exit code and the first non-zero one."""
        try:
            stop.set()
        except Exception as exc:  # noqa: BLE001
            self.cleanup_errors.append(f"stop event: {type(exc).__name__}: {exc}")
        started = [(k, p) for k, p in enumerate(procs) if getattr(p, "_popen", None) is not None]
        for action, wait in (("join", timeout_s), ("terminate", 5.0), ("kill", 5.0)):
            deadline = time.monotonic() + wait
            for k, proc in started:
                try:
                    if action == "terminate" and proc.is_alive():
                        self.cleanup_errors.append(f"{self._name(k)} did not stop within {timeout_s:.0f} s; terminated")
                        proc.terminate()
                    elif action == "kill" and proc.is_alive():
                        self.cleanup_errors.append(f"{self._name(k)} ignored SIGTERM; killed")
                        proc.kill()
                except Exception as exc:  # noqa: BLE001
                    self.cleanup_errors.append(f"{self._name(k)} {action}: {type(exc).__name__}: {exc}")
            for k, proc in started:
                try:
                    proc.join(max(0.0, deadline - time.monotonic()))
                except Exception as exc:  # noqa: BLE001
                    self.cleanup_errors.append(f"{self._name(k)} join: {type(exc).__name__}: {exc}")
            if not any(p.is_alive() for _, p in started):
                break
        self.collector_exitcodes = [p.exitcode if getattr(p, "_popen", None) is not None else None for p in procs]
        codes = self.collector_exitcodes
        self.collector_exitcode = next((c for c in codes if c not in (0, None)),
                                       None if (not codes or None in codes) else 0)
        for q in queues:
            try:
                q.cancel_join_thread()
                q.close()
            except Exception as exc:  # noqa: BLE001
                self.cleanup_errors.append(f"queue close: {type(exc).__name__}: {exc}")
        for k, proc in started:
            try:
                proc.close()
            except Exception as exc:  # noqa: BLE001
                self.cleanup_errors.append(f"{self._name(k)} close: {type(exc).__name__}: {exc}")
        self._proc = None

    def _alive(self) -> bool:
        return all(p.is_alive() for p in self._procs)

    def _raise_if_dead(self, full_qs) -> None:
        """Raise :class:`CollectorDied` for the first collector that exited (its error report
        when it sent one, on any of its shards' queues)."""
        s_all = self.collector_shards
        for k, proc in enumerate(self._procs):
            if proc.is_alive():
                continue
            for full_q in full_qs[k * s_all:(k + 1) * s_all]:
                try:  # it may have reported something just before exiting
                    while True:
                        block, info = full_q.get(timeout=POLL_S)
                        if block == "error":
                            self._raise_error(k, info)
                except queue.Empty:
                    pass
            raise CollectorDied(
                f"{self._name(k)} exited with code {proc.exitcode} at iteration {self.algo.iteration}",
                proc.exitcode, self.algo.iteration,
            )

    def _raise_error(self, k: int, info: str) -> None:
        self._procs[k].join(5.0)
        last = info.strip().splitlines()[-1] if info.strip() else "unknown error"
        raise CollectorDied(
            f"{self._name(k)} failed at iteration {self.algo.iteration}: {last}\n{info}",
            self._procs[k].exitcode, self.algo.iteration,
        )

    def _next_block(self, j: int, full_qs, first: bool) -> tuple[int, dict[str, Any]]:
        """The next full block of shard ``j`` (of process ``j // collector_shards``)."""
        k = j // self.collector_shards
        deadline = time.monotonic() + self.start_timeout_s if first else math.inf
        while True:
            try:
                block, info = full_qs[j].get(timeout=POLL_S)
            except queue.Empty:
                self._raise_if_dead(full_qs)
                if time.monotonic() > deadline:
                    raise CollectorDied(
                        f"{self._name(k)} sent no data within {self.start_timeout_s:.0f} s of starting",
                        None, self.algo.iteration,
                    ) from None
                continue
            if block == "error":
                self._raise_error(k, info)
            return block, info

    def _next_group(self, full_qs, first: bool) -> tuple[int, dict[str, Any]]:
        """The next block filled by every shard of every collector (each wrote its env columns),
        and the shards' reports merged: episodes concatenated in shard order, env logs averaged
        (``Episode_*`` keys weighted by the episodes each shard finished at that step), times
        and policy version of the slowest / most behind collector, weight pulls summed, the step
        time split (``phase_time``) averaged over the shards."""
        parts = [self._next_block(j, full_qs, first) for j in range(len(full_qs))]
        block = parts[0][0]
        if any(b != block or i["steps"] != parts[0][1]["steps"] for b, i in parts):
            raise RuntimeError(f"collectors out of step: blocks {[(b, i['steps']) for b, i in parts]}")
        infos = [i for _, i in parts]
        if len(infos) == 1:
            return block, infos[0]
        steps = infos[0]["steps"]
        episodes, logs = [], []
        for t in range(steps):
            shard_eps = [i["episodes"][t] for i in infos]
            episodes.append(([r for rs, _ in shard_eps for r in rs], [n for _, ns in shard_eps for n in ns]))
            logs.append(_merge_logs([i["logs"][t] for i in infos], [len(rs) for rs, _ in shard_eps]))
        return block, {
            "steps": steps,
            "episodes": episodes,
            "logs": logs,
            "collect_time": max(i["collect_time"] for i in infos),
            "wait_time": max(i["wait_time"] for i in infos),
            "weight_pulls": sum(i["weight_pulls"] for i in infos),
            "policy_version": min(i["policy_version"] for i in infos),
            "phase_time": {p: sum(i["phase_time"][p] for i in infos) / len(infos) for p in COLLECTOR_PHASES},
        }

    # -- training loop --------------------------------------------------------------------
    def learn(
        self,
        num_iterations: int,
        start_iteration: int | None = None,
        on_iteration: Callable[[int, dict[str, float]], None] | None = None,
    ) -> LearnSummary:
        """Train for ``num_iterations`` iterations with a collector process.

        Starts a collector (spawn), consumes exactly ``num_iterations`` env steps from it and
        stops it before returning or raising; each call starts from ``env.reset()`` in a fresh
        collector.

        Args and metrics: as :meth:`unilab_rl.runner.OffPolicyRunner.learn`, plus
            ``Perf/utd_ratio`` (cumulative updates × batch / transitions), ``Perf/learner_wait_time``
            and ``Perf/collector_wait_time`` (a block's waits spread over its iterations), and
            ``Perf/policy_lag`` (broadcasts the collector's policy is behind, at block end).
            ``Perf/collection_time`` is measured in the collector (overlapping learning), and so is
            its split ``Perf/collector_<phase>_time`` (:data:`COLLECTOR_PHASES`, per env step,
            the mean over shards);
            ``Perf/total_fps`` is the env steps per second since the call started.

        Returns:
            :class:`LearnSummary` with ``runtime="async"``, waits and ``transfer`` counters.

        Raises:
            ValueError: ``num_iterations`` < 0.
            CollectorDied: the collector exited, raised, or sent nothing within ``start_timeout_s``.
            FloatingPointError: a learner metric became NaN or infinite.
        """
        if num_iterations < 0:
            raise ValueError(f"num_iterations must be >= 0, got {num_iterations}")
        algo, cfg = self.algo, self.algo.cfg
        if start_iteration is not None:
            algo.iteration = start_iteration
        first_iteration = algo.iteration
        n = algo.num_envs
        best_mean_reward: float | None = None
        last_saved: int | None = None
        updates = updates_since_broadcast = 0
        times = {"collection": 0.0, "learning": 0.0, "learner_wait": 0.0, "collector_wait": 0.0,
                 "collector_start": 0.0}
        phase_times = dict.fromkeys(COLLECTOR_PHASES, 0.0)
        live = algo.exploration_policy()
        self.cleanup_errors = []
        t_start = time.perf_counter()
        if num_iterations == 0:
            return self._summary(0, 0.0, best_mean_reward, updates, times, phase_times)

        ctx = tmp.get_context("spawn")
        procs, blocks, weights, free_qs, full_qs, stop = self._start(num_iterations, ctx)
        alive = self._alive
        # Pinned after the child holds its handles; copies stay blocking, so a slot is only
        # handed back once its data is on the device.
        self.transfer["pinned"] = int(algo.device.type == "cuda" and blocks.pin())
        try:
            first = True
            while algo.iteration < first_iteration + num_iterations:
                t0 = time.perf_counter()
                block, info = self._next_group(full_qs, first)
                t1 = time.perf_counter()
                if first:  # process start, imports and env build: not a steady-state wait
                    times["collector_start"] = t1 - t0
                    t0 = t1
                    first = False
                steps = info["steps"]
                base_rows = len(algo.replay)
                self.transfer["bytes_to_learner"] += algo.store_steps(
                    *blocks.view(block, steps), truncated=blocks.view_truncated(block, steps)
                )
                for free_q in free_qs:  # the data is in the replay: the collectors may refill the slot
                    free_q.put(block)
                t2 = time.perf_counter()
                self.transfer["blocks"] += 1
                self.transfer["weight_pulls"] = info["weight_pulls"]
                times["learner_wait"] += t1 - t0
                times["collector_wait"] += info["wait_time"]
                times["collection"] += info["collect_time"]
                for p in COLLECTOR_PHASES:
                    phase_times[p] += info["phase_time"][p]
                times["learning"] += t2 - t1
                lag = self.transfer["weight_broadcasts"] - info["policy_version"]
                for t in range(steps):
                    t3 = time.perf_counter()
                    metrics: dict[str, float] = {}
                    if min(base_rows + (t + 1) * n, algo.replay.capacity) >= cfg.learning_starts * n:
                        metrics |= algo.update()
                        bad = [k for k, v in metrics.items() if not math.isfinite(v)]
                        if bad:
                            raise FloatingPointError(f"non-finite learner metrics at iteration {algo.iteration}: {bad}")
                        updates += cfg.num_updates
                        updates_since_broadcast += cfg.num_updates
                        if updates_since_broadcast >= cfg.sync_weights_every:
                            try:
                                self.transfer["weight_bytes"] += weights.publish(flat_state(live), alive)
                            except CollectorDied:
                                self._raise_if_dead(full_qs)
                                raise
                            self.transfer["weight_broadcasts"] += 1
                            updates_since_broadcast = 0
                    t4 = time.perf_counter()
                    times["learning"] += t4 - t3
                    algo.iteration += 1

                    returns, lengths = info["episodes"][t]
                    self.episode_returns.extend(returns)
                    self.episode_lengths.extend(lengths)
                    if self.episode_returns:
                        metrics["Train/mean_reward"] = sum(self.episode_returns) / len(self.episode_returns)
                        metrics["Train/mean_episode_length"] = sum(self.episode_lengths) / len(self.episode_lengths)
                        if best_mean_reward is None or metrics["Train/mean_reward"] > best_mean_reward:
                            best_mean_reward = metrics["Train/mean_reward"]
                    metrics |= self.episode_log.means()
                    metrics |= self.episode_log.add(info["logs"][t], len(lengths))
                    done = algo.iteration - first_iteration
                    metrics["Perf/collection_time"] = info["collect_time"] / steps
                    for p in COLLECTOR_PHASES:
                        metrics[f"Perf/collector_{p}_time"] = info["phase_time"][p] / steps
                    metrics["Perf/learning_time"] = (t2 - t1) / steps + (t4 - t3)
                    metrics["Perf/learner_wait_time"] = (t1 - t0) / steps
                    metrics["Perf/collector_wait_time"] = info["wait_time"] / steps
                    metrics["Perf/total_fps"] = done * n / max(time.perf_counter() - t_start, 1e-9)
                    metrics["Perf/utd_ratio"] = updates * cfg.batch_size / (done * n)
                    metrics["Perf/policy_lag"] = float(lag)
                    if self.transfer["blocks"] == 1 and t == 0:
                        metrics["Perf/collector_start_time"] = times["collector_start"]
                    if self.log_fn is not None and algo.iteration % self.log_interval == 0:
                        self.log_fn(algo.iteration, metrics)
                    if (self.checkpoint_fn is not None and self.checkpoint_interval
                            and algo.iteration % self.checkpoint_interval == 0):
                        self.checkpoint_fn(algo.iteration)
                        last_saved = algo.iteration
                    if on_iteration is not None:
                        on_iteration(algo.iteration, metrics)
        finally:
            self._stop(procs, stop, (*free_qs, *full_qs))
            blocks.unpin()

        if self.checkpoint_fn is not None and last_saved != algo.iteration:
            self.checkpoint_fn(algo.iteration)
        return self._summary(num_iterations, time.perf_counter() - t_start, best_mean_reward, updates, times,
                             phase_times)

    def _summary(self, iterations: int, wall: float, best: float | None, updates: int, times: dict,
                 phase_times: dict[str, float]) -> LearnSummary:
        steps = iterations * self.algo.num_envs
        mean = lambda v: sum(v) / len(v) if v else None  # noqa: E731
        return LearnSummary(
            iterations=iterations,
            final_iteration=self.algo.iteration,
            env_steps=steps,
            wall_time_s=wall,
            fps=steps / wall if wall > 0 else 0.0,
            final_mean_reward=mean(self.episode_returns),
            best_mean_reward=best,
            final_mean_episode_length=mean(self.episode_lengths),
            runtime="async",
            updates=updates,
            utd_ratio=updates * self.algo.cfg.batch_size / steps if steps else None,
            collection_time_s=times["collection"],
            learning_time_s=times["learning"],
            learner_wait_time_s=times["learner_wait"],
            collector_wait_time_s=times["collector_wait"],
            transfer=dict(self.transfer),
            collector_start_time_s=times["collector_start"],
            policy_device=self.policy_device,
            collector_phase_time_s=dict(phase_times),
        )


def make_off_policy_runner(env: VecEnv, agent: Any, *, env_fn: Callable[..., VecEnv] | None = None, **kwargs):
    """The runner ``agent.cfg.runtime`` asks for (the ``make_runner`` of SAC and FlashSAC).

    Args:
        env: the vector env (used by the synchronous runner).
        agent: the learner; ``agent.cfg.runtime`` (``"sync"`` when absent) chooses the runner.
        env_fn: picklable env factory, required for ``runtime="async"`` (each collector process
            builds its own env with it).
        **kwargs: passed to the runner (``log_fn``, ``checkpoint_fn``, intervals, ``seed``;
            ``env_seed`` only for async).

    Returns:
        :class:`~unilab_rl.runner.OffPolicyRunner` or :class:`AsyncOffPolicyRunner`.

    Raises:
        ValueError: ``runtime="async"`` without ``env_fn``.
        TypeError: ``runtime="async"`` and the agent is no :class:`AsyncLearner`.
    """
    if getattr(agent.cfg, "runtime", "sync") == "async":
        if env_fn is None:
            raise ValueError("runtime='async' needs env_fn, a picklable factory of the env for the collector process")
        return AsyncOffPolicyRunner(env_fn, agent, **kwargs)
    from unilab_rl.runner import OffPolicyRunner

    return OffPolicyRunner(env, agent, **kwargs)


__all__ = [
    "ASYNC_CONFIG_KEYS",
    "COLLECTOR_PHASES",
    "POLICY_DEVICES",
    "AsyncLearner",
    "AsyncOffPolicyRunner",
    "CollectorDied",
    "ShardNoise",
    "SharedBlocks",
    "SharedWeights",
    "collector_policy_device",
    "flat_state",
    "load_flat_state",
    "make_off_policy_runner",
    "missing_async_members",
]
