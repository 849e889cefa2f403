"""The collector side: a process steps one or more env shards with a copy of the exploration
policy and writes their transitions into shared blocks (:mod:`~unilab_rl.async_runtime.transport`).

A collector ignores SIGINT (a terminal's Ctrl-C reaches the whole process group; the learner
decides), stops cleanly on SIGTERM or when the learner sets the stop event, and dies with its
parent (Linux ``PR_SET_PDEATHSIG``). Any error is reported to the learner on the shard's full
queue, followed by a non-zero exit.
"""

from __future__ import annotations

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

from unilab_rl.async_runtime.transport import POLL_S, SharedBlocks, SharedWeights
from unilab_rl.learner import uniform_actions
from unilab_rl.vecenv import VecEnv

SHARD_SEED_STRIDE = 1_000_003
"""Shard ``j`` seeds its env with ``env_seed + j * SHARD_SEED_STRIDE`` and its action sampling
with ``seed + j * SHARD_SEED_STRIDE`` (a prime: shards never share a stream)."""

COLLECTOR_PHASES = ("pull", "policy", "physics", "env", "write")
"""How a collector's step time splits (seconds per block, reported with it): ``pull`` (actor weights),
``policy`` (acting, or the warm-up's uniform draw), ``physics`` (the env's ``backend.step``, when
the env reports ``physics_time_s``; else 0 and counted in ``env``), ``env`` (the rest of
``env.step``: action processing, terms, resets, events) and ``write`` (the block write and episode
bookkeeping)."""


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


def collector_main(env_fn, policy, blocks: SharedBlocks, weights: SharedWeights, free_qs, full_qs, stop_event,
                    specs: list[CollectorSpec]) -> None:
    """Collector process body (spawned): one env shard per entry of ``specs``, each with its own
    free and full queue (``free_qs[s]``, ``full_qs[s]``). One shard steps in this thread; several
    step in one thread each (:func:`shard_loop`), so one shard's env code and policy run while
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
            shard_loop(envs[0], policies[0], blocks, weights, free_qs[0], full_qs[0], specs[0], stopping)
        else:
            lock = threading.Lock()
            noises = [ShardNoise(sp.seed + 1, policy_device, lock) for sp in specs]

            def run(s: int) -> None:
                try:
                    shard_loop(envs[s], policies[s], blocks, weights, free_qs[s], full_qs[s], specs[s], stopping,
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


def shard_loop(env: VecEnv, policy: nn.Module, blocks: SharedBlocks, weights: SharedWeights, free_q, full_q,
                spec: CollectorSpec, stopping: Callable[[], bool], noise: ShardNoise | None = None) -> None:
    """Step one env shard: for every free block, ``block_steps`` env steps into the shard's env
    columns, then report the block full. Returns when ``spec.total_steps`` are delivered or
    :func:`stopping` says so; raises on any error. ``noise``: the shard's own policy-noise stream
    when shards share the process (None: the process-wide generator)."""
    policy_device = torch.device(spec.policy_device)
    policy.to(policy_device)  # parameters and buffers (normalizer, batch-norm statistics)
    # Nothing here is differentiated: inference mode drops autograd's per-op bookkeeping from the
    # env's many small tensor ops and the policy's (thread-local, so set in each shard thread).
    with torch.inference_mode():
        _shard_loop(env, policy, blocks, weights, free_q, full_q, spec, stopping, noise, policy_device)


def _shard_loop(env: VecEnv, policy: nn.Module, blocks: SharedBlocks, weights: SharedWeights, free_q, full_q,
                spec: CollectorSpec, stopping: Callable[[], bool], noise: ShardNoise | None,
                policy_device: torch.device) -> None:
    generator = torch.Generator().manual_seed(spec.seed)  # warm-up actions, as the sync runner
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


__all__ = ["COLLECTOR_PHASES", "SHARD_SEED_STRIDE", "CollectorSpec", "ShardNoise", "collector_main", "shard_loop"]
