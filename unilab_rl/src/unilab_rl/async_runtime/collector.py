"""The collector side: a process steps one or more env shards with a copy of the exploration
policy and writes their transitions into shared blocks (:mod:`~unilab_rl.async_runtime.transport`).
With ``runtime.policy_device=server`` the learner's process runs the policy's forward pass
(:mod:`~unilab_rl.async_runtime.acting_server`) and the copy only draws the noise.

A collector ignores SIGINT (a terminal's Ctrl-C reaches the whole process group; the learner
decides), stops cleanly on SIGTERM or when the learner sets the stop event, and dies with its
parent (Linux ``PR_SET_PDEATHSIG``). Any error is reported to the learner on the shard's full
queue, followed by a non-zero exit.
"""

from __future__ import annotations

import concurrent.futures
import copy
import ctypes
import os
import queue
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from unilab_rl.async_runtime.transport import POLL_S, ActingSlots, SharedBlocks, SharedWeights
from unilab_rl.learner import uniform_actions
from unilab_rl.vecenv import VecEnv

SHARD_SEED_STRIDE = 1_000_003
"""Shard ``j`` seeds its env with ``env_seed + j * SHARD_SEED_STRIDE`` and its action sampling
with ``seed + j * SHARD_SEED_STRIDE`` (a prime: shards never share a stream)."""

COLLECTOR_PHASES = ("pull", "policy", "physics", "env", "wait", "write")
"""How a collector's step time splits (seconds per block, reported with it): ``pull`` (actor weights),
``policy`` (acting, or the warm-up's uniform draw), ``physics`` (the env's ``backend.step``, when
the env reports ``physics_time_s``; else 0 and counted in ``env``), ``env`` (the rest of
``env.step``: action processing, terms, resets, events), ``wait`` (``runtime.shard_stepping=
pipeline``: the shard's thread idle until the physics worker finished this shard's physics; 0
with threads) and ``write`` (the block write and episode bookkeeping). With the pipeline, physics
runs on the worker beside the other phases, so it is not part of their sum."""


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
    shard_stepping: str = "threads"
    """How a collector with several shards steps them (:attr:`unilab_rl.RuntimeConfig.shard_stepping`)."""
    policy_device: str = "cpu"
    """Where the policy copy runs (:func:`collector_policy_device`: ``"cpu"`` or the learner's
    device, e.g. ``"cuda:1"``; ``"cpu"`` when an acting server runs the forward pass). Unless it
    is a CUDA device, ``CUDA_VISIBLE_DEVICES`` is emptied."""


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


def collector_main(env_fn, policy, blocks: SharedBlocks, weights: SharedWeights, free_qs, full_qs, stop_event,
                    specs: list[CollectorSpec], slots: ActingSlots | None = None) -> None:
    """Collector process body (spawned): one env shard per entry of ``specs``, each with its own
    free and full queue (``free_qs[s]``, ``full_qs[s]``). One shard steps in this thread; several
    step in one thread each (:func:`shard_loop`), so one shard's env code and policy run while
    another's physics (which releases the GIL) runs, or, with ``shard_stepping="pipeline"``, in
    this thread round robin with their physics on one worker thread (:func:`pipeline_loop`).
    ``slots``: the acting server's request slots (``runtime.policy_device=server``; shard ``j``
    uses slot ``j``), or None when the policy copy acts here. Exit code 0 when stopped, 1 after
    reporting an error."""
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
            shard_loop(envs[0], policies[0], blocks, weights, free_qs[0], full_qs[0], specs[0], stopping,
                       slots=slots)
        elif spec.shard_stepping == "pipeline":
            noises = [ShardNoise(sp.seed + 1, policy_device, threading.Lock()) for sp in specs]
            try:
                pipeline_loop(envs, policies, blocks, weights, free_qs, full_qs, specs, stopping, noises, slots)
            except ShardFailure as f:
                failed.append((f.position, f.error))
                raise RuntimeError(f"collector shard {specs[f.position].shard} failed: "
                                   f"{type(f.error).__name__}: {f.error}") from f.error
        else:
            lock = threading.Lock()
            noises = [ShardNoise(sp.seed + 1, policy_device, lock) for sp in specs]

            def run(s: int) -> None:
                try:
                    shard_loop(envs[s], policies[s], blocks, weights, free_qs[s], full_qs[s], specs[s], stopping,
                                noises[s], slots)
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


def shard_loop(env: VecEnv, policy: nn.Module, blocks: SharedBlocks, weights: SharedWeights, free_q, full_q,
                spec: CollectorSpec, stopping: Callable[[], bool], noise: ShardNoise | None = None,
                slots: ActingSlots | None = None) -> None:
    """Step one env shard: for every free block, ``block_steps`` env steps into the shard's env
    columns, then report the block full. Returns when ``spec.total_steps`` are delivered or
    :func:`stopping` says so; raises on any error. ``noise``: the shard's own policy-noise stream
    when shards share the process (None: the process-wide generator). ``slots``: the acting
    server's slots, or None (the policy copy acts)."""
    policy.to(torch.device(spec.policy_device))  # parameters and buffers (normalizer, batch-norm statistics)
    # Nothing here is differentiated: inference mode drops autograd's per-op bookkeeping from the
    # env's many small tensor ops and the policy's (thread-local, so set in each shard thread).
    with torch.inference_mode():
        shard = _Shard(env, policy, blocks, weights, free_q, full_q, spec, noise, slots)
        while not shard.done:
            if not shard.start_step(stopping, None):
                return
            shard.finish_step()


def pipeline_loop(envs: list[VecEnv], policies: list[nn.Module], blocks: SharedBlocks, weights: SharedWeights,
                  free_qs, full_qs, specs: list[CollectorSpec], stopping: Callable[[], bool],
                  noises: list[ShardNoise], slots: ActingSlots | None = None) -> None:
    """Step several env shards from this one thread, their physics on one worker thread
    (``runtime.shard_stepping="pipeline"``): round robin, each shard's step is finished (wait for
    its physics, then its env code and the block write), its next action chosen and its next
    physics queued behind the other shards', so the worker always has physics to run while this
    thread works. Shard ``s`` uses ``envs[s]``, ``policies[s]``, ``free_qs[s]``, ``full_qs[s]``,
    ``specs[s]`` and ``noises[s]`` (and slot ``specs[s].shard`` of the acting server's ``slots``
    when given). Returns when every shard delivered its steps or
    :func:`stopping` says so; raises on any error (a physics error re-raised here)."""
    for policy, spec in zip(policies, specs):
        policy.to(torch.device(spec.policy_device))
    with torch.inference_mode(), concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="unilab-physics") as pool:
        worker = _InferenceModeExecutor(pool)
        shards = [_Shard(envs[s], policies[s], blocks, weights, free_qs[s], full_qs[s], specs[s], noises[s], slots)
                  for s in range(len(specs))]
        try:
            for s, shard in enumerate(shards):
                if not _as_shard(s, shard.start_step, stopping, worker):
                    return
            while any(shard.in_flight for shard in shards):
                for s, shard in enumerate(shards):
                    if not shard.in_flight:
                        continue
                    _as_shard(s, shard.finish_step)
                    if not shard.done and not _as_shard(s, shard.start_step, stopping, worker):
                        return
        finally:
            for shard in shards:  # no physics left running on an env that is about to close
                shard.drain()


class ShardFailure(Exception):
    """An error of the shard at ``position`` (in the collector's list) in :func:`pipeline_loop`."""

    def __init__(self, position: int, error: BaseException) -> None:
        super().__init__(position, error)
        self.position, self.error = position, error


def _as_shard(position: int, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, its error raised as a :class:`ShardFailure` of ``position``."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - named and re-raised
        raise ShardFailure(position, exc) from exc


class _InferenceModeExecutor:
    """Submits to ``pool`` with every call run under ``torch.inference_mode`` (thread-local, so
    the worker thread does not inherit the collector thread's): an env's tensors made in
    inference mode may only be written in it."""

    def __init__(self, pool: concurrent.futures.Executor) -> None:
        self.pool = pool

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future:
        return self.pool.submit(_in_inference_mode, fn, *args)


def _in_inference_mode(fn: Callable[..., Any], *args: Any) -> Any:
    with torch.inference_mode():
        return fn(*args)


class _Shard:
    """One env shard's collection state: its env, policy copy, noise stream, block and counters.
    A step is :meth:`start_step` (a free block when needed, weights, action, the env step
    started) then :meth:`finish_step` (the step's results written into the block, which is
    reported full after ``block_steps`` steps). With the acting server's ``slots`` the policy's
    forward pass is asked of the server (slot ``spec.shard``) and the copy only draws the noise."""

    def __init__(self, env: VecEnv, policy: nn.Module, blocks: SharedBlocks, weights: SharedWeights, free_q, full_q,
                 spec: CollectorSpec, noise: ShardNoise | None, slots: ActingSlots | None = None) -> None:
        self.env, self.policy, self.blocks, self.weights = env, policy, blocks, weights
        self.free_q, self.full_q, self.spec, self.noise = free_q, full_q, spec, noise
        self.slots = slots
        self.policy_device = torch.device(spec.policy_device)
        self.generator = torch.Generator().manual_seed(spec.seed)  # warm-up actions, as the sync runner
        self.obs = env.reset()
        self.ep_return = torch.zeros(env.num_envs)
        self.ep_length = torch.zeros(env.num_envs, dtype=torch.long)
        self.version, self.pulls, self.iteration, self.produced = 0, 0, spec.start_iteration, 0
        self.block: int | None = None
        self.pending: tuple | None = None  # the started step: (actions, future or None)

    @property
    def done(self) -> bool:
        """Every step of ``spec.total_steps`` is delivered."""
        return self.produced >= self.spec.total_steps

    @property
    def in_flight(self) -> bool:
        """A step is started and not yet finished."""
        return self.pending is not None

    def _take_block(self, stopping: Callable[[], bool]) -> bool:
        t_wait = time.perf_counter()
        while True:
            if stopping():
                return False
            try:
                self.block = self.free_q.get(timeout=POLL_S)
                break
            except queue.Empty:
                continue
        self.t0 = time.perf_counter()
        self.wait_time = self.t0 - t_wait
        self.steps = min(self.blocks.block_steps, self.spec.total_steps - self.produced)
        self.t = 0
        self.finished: list[tuple[list[float], list[int]]] = []
        self.logs: list[dict[str, float]] = []
        self.phase = dict.fromkeys(COLLECTOR_PHASES, 0.0)
        self.physics_before = getattr(self.env, "physics_time_s", None)
        self.inline = True  # every step of the block ran in this thread (physics inside env.step)
        return True

    def start_step(self, stopping: Callable[[], bool], worker: _InferenceModeExecutor | None) -> bool:
        """Take a free block if none is open, pull new weights, act, and start the env step: at
        once (``worker`` None, the step runs in :meth:`finish_step`), or its physics queued on
        ``worker`` (``env.step_async``; an env without it runs its whole ``step`` there). False
        when stopping first, or while waiting for the acting server's answer."""
        if self.block is None and not self._take_block(stopping):
            return False
        ta = time.perf_counter()
        new = self.weights.pull(self.policy, self.version, lambda: not stopping())
        self.pulls += new != self.version
        self.version = new
        tb = time.perf_counter()
        if self.iteration < self.spec.learning_starts:  # drawn on the CPU whatever the policy device
            actions = uniform_actions(self.spec.action_low, self.spec.action_high, self.env.num_envs, self.generator)
        elif self.slots is not None:  # the server's Gaussian, this shard's own noise
            gaussian = self.slots.request(self.spec.shard, self.obs["actor"], stopping)
            if gaussian is None:  # told to stop while waiting for the answer
                return False
            draw = self.policy.explore_from
            actions = draw(*gaussian) if self.noise is None else self.noise(draw, *gaussian)
        else:
            actor_obs = self.obs["actor"].to(self.policy_device)
            policy = self.policy
            actions = (policy(actor_obs) if self.noise is None else self.noise(policy, actor_obs)).to("cpu")
        tc = time.perf_counter()
        if worker is None:
            future = None
        elif hasattr(self.env, "step_async"):
            future = self.env.step_async(actions, worker)
        else:
            future = worker.submit(self.env.step, actions)
        td = time.perf_counter()
        self.inline = self.inline and worker is None
        self.phase["pull"] += tb - ta
        self.phase["policy"] += tc - tb
        self.phase["env"] += td - tc
        self.pending = (actions, future)
        return True

    def finish_step(self) -> None:
        """Finish the started step: wait for its physics, finish the env step, write the
        transition into the block and keep the episode counters; report the block full after
        its last step."""
        actions, future = self.pending
        self.pending = None
        ta = time.perf_counter()
        if future is not None:
            concurrent.futures.wait([future])
        tb = time.perf_counter()
        if future is None:
            result = self.env.step(actions)
        elif hasattr(self.env, "step_async"):
            result = self.env.step_wait()
        else:
            result = future.result()
        next_obs, rewards, terminated, truncated, extras = result
        tc = time.perf_counter()
        self.phase["wait"] += tb - ta
        self.phase["env"] += tc - tb
        if "final_obs" not in extras:
            raise KeyError("env.step extras lack 'final_obs' (the pre-reset observation), required by VecEnv")
        self.blocks.write(self.block, self.t, self.obs, actions, rewards, terminated, extras["final_obs"],
                          self.spec.env_start, truncated)
        self.obs = next_obs
        self.ep_return += rewards
        self.ep_length += 1
        done = terminated | truncated
        if bool(done.any()):
            self.finished.append((self.ep_return[done].tolist(), self.ep_length[done].tolist()))
            self.ep_return[done] = 0.0
            self.ep_length[done] = 0
        else:
            self.finished.append(([], []))
        self.logs.append({k: float(v) for k, v in extras.get("log", {}).items()})
        self.iteration += 1
        self.t += 1
        self.phase["write"] += time.perf_counter() - tc
        if self.t == self.steps:
            self._report_block()

    def _report_block(self) -> None:
        phase = self.phase
        if self.physics_before is not None:  # env.step's time split: physics and the env's own work
            phase["physics"] = self.env.physics_time_s - self.physics_before
            if self.inline:  # else the physics ran on the worker, outside this thread's env calls
                phase["env"] -= phase["physics"]
        self.produced += self.steps
        info = {
            "steps": self.steps,
            "episodes": self.finished,
            "logs": self.logs,
            "collect_time": time.perf_counter() - self.t0,
            "wait_time": self.wait_time,
            "weight_pulls": self.pulls,
            "policy_version": self.version,
            "phase_time": phase,
        }
        self.full_q.put((self.block, info))
        self.block = None

    def drain(self) -> None:
        """Wait for a started step's physics to end (its result is dropped)."""
        if self.pending is not None and self.pending[1] is not None:
            concurrent.futures.wait([self.pending[1]])
        self.pending = None


__all__ = ["COLLECTOR_PHASES", "SHARD_SEED_STRIDE", "CollectorSpec", "ShardNoise", "collector_main", "pipeline_loop",
           "shard_loop"]
