"""The learner's side of the collector processes: start them, receive their blocks, notice their
death, and stop and reap them whatever happens.

Shard ``j = k * S + s`` (S = ``runtime.collector_shards``) is thread ``s`` of collector process
``k``, with its own queue pair ``free_qs[j]``, ``full_qs[j]``. The learner hands every free block
index to all shards and stores a block once every shard has filled its env columns.
"""

from __future__ import annotations

import copy
import math
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import torch

from unilab_rl.async_runtime.acting_server import ActingServer
from unilab_rl.async_runtime.collector import COLLECTOR_PHASES, SHARD_SEED_STRIDE, CollectorSpec, collector_main
from unilab_rl.async_runtime.transport import (
    POLL_S,
    CollectorDied,
    SharedBlocks,
    SharedWeights,
    flat_state,
)
from unilab_rl.learner import Learner
from unilab_rl.runtime import POLICY_DEVICES, RuntimeConfig
from unilab_rl.vecenv import VecEnv


def collector_policy_device(policy_device: str, learner_device: torch.device | str) -> str:
    """Where the collectors' exploration policy runs, as runs record it
    (``run_summary.json``'s ``collector_policy_device``, :attr:`LearnSummary.policy_device`).

    Args:
        policy_device: ``runtime.policy_device``, ``"cpu"``, ``"learner"`` or ``"server"``.
        learner_device: the learner's device, e.g. ``cuda:1`` on rank 1.

    Returns:
        ``"cpu"``; ``str(learner_device)`` for ``"learner"`` (``"cpu"`` for a CPU learner); or
        ``"server:" + str(learner_device)`` for ``"server"`` (the learner's process acts on its
        device, e.g. ``"server:cuda:0"`` or ``"server:cpu"``).

    Raises:
        ValueError: ``policy_device`` is none of those.
    """
    if policy_device not in POLICY_DEVICES:
        raise ValueError(f"policy_device must be 'cpu', 'learner' or 'server', got {policy_device!r}")
    if policy_device == "cpu":
        return "cpu"
    device = str(torch.device(learner_device))
    return f"server:{device}" if policy_device == "server" else device


def merge_logs(logs: list[dict[str, float]], finished: list[int]) -> dict[str, float]:
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


class CollectorPool:
    """The collector processes of one ``learn`` call.

    Args:
        env_fn: picklable env factory; with several shards called with ``num_envs`` and ``seed``.
        learner: the learner (sizes, action box, warm-up length, exploration policy).
        runtime: ``num_collectors``, ``collector_shards``, ``num_blocks``, ``block_steps``,
            ``collector_threads``.
        policy_device: where the collectors' policy copies run (``"cpu"`` or a device name;
            ``"cpu"`` when an acting server runs the forward pass).
        seed: base seed of the shards' action sampling; ``env_seed``: of their envs.
        start_timeout_s: seconds to wait for the first block.

    Attributes:
        exitcode: the first non-zero exit code (0 when all stopped cleanly; None before reaping
            or when one could not be reaped); ``exitcodes``: every process's, in order.
        cleanup_errors: problems met while stopping (strings).
    """

    def __init__(self, env_fn: Callable[..., VecEnv], learner: Learner, runtime: RuntimeConfig, policy_device: str,
                 seed: int, env_seed: int, start_timeout_s: float) -> None:
        self.env_fn, self.learner, self.runtime = env_fn, learner, runtime
        self.server = None
        self.policy_device, self.seed, self.env_seed = policy_device, seed, env_seed
        self.start_timeout_s = start_timeout_s
        self.procs: list = []
        self.free_qs: list = []
        self.full_qs: list = []
        self.stop_event = None
        self.exitcode: int | None = None
        self.exitcodes: list[int | None] = []
        self.cleanup_errors: list[str] = []

    # -- start ----------------------------------------------------------------------------
    def start(self, num_steps: int, ctx, server: ActingServer | None = None) -> tuple[SharedBlocks, SharedWeights]:
        """Start every collector process for ``num_steps`` env steps; returns the block ring and
        the weight vector they share with the learner. ``server``: the acting server
        (``runtime.policy_device=server``), whose request slots every collector gets and whose
        failure :meth:`raise_if_dead` raises before any collector's; None: the collectors act
        with their policy copies. A failure stops what was started."""
        self.server = server
        slots = None if server is None else server.slots
        algo, rt = self.learner, self.runtime
        k_all, s_all = rt.num_collectors, rt.collector_shards
        j_all = k_all * s_all
        shard_n = algo.num_envs // j_all
        blocks = SharedBlocks(rt.num_blocks, rt.block_steps, algo.num_envs, algo.replay.obs_dims, algo.num_actions)
        live = algo.exploration_policy()
        policy = copy.deepcopy(live).to("cpu")
        weights = SharedWeights(flat_state(live).numel(), ctx)
        self.stop_event = ctx.Event()
        # The child inherits an ignored SIGINT from the moment it exists (Python keeps SIG_IGN at
        # start-up), so a Ctrl-C during its imports cannot kill it with a traceback.
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            for k in range(k_all):
                specs = []
                for j in range(k * s_all, (k + 1) * s_all):
                    free_q, full_q = ctx.Queue(), ctx.Queue()
                    for i in range(rt.num_blocks):
                        free_q.put(i)
                    self.free_qs.append(free_q)
                    self.full_qs.append(full_q)
                    specs.append(CollectorSpec(
                        total_steps=num_steps,
                        start_iteration=algo.iteration,
                        learning_starts=algo.learning_starts,
                        seed=self.seed + j * SHARD_SEED_STRIDE,
                        torch_threads=rt.collector_threads,
                        parent_pid=os.getpid(),
                        action_low=algo.action_low.detach().cpu(),
                        action_high=algo.action_high.detach().cpu(),
                        shard=j,
                        num_shards=j_all,
                        env_start=j * shard_n,
                        num_envs=shard_n,
                        env_kwargs=None if j_all == 1 else {"num_envs": shard_n,
                                                            "seed": self.env_seed + j * SHARD_SEED_STRIDE},
                        policy_device=self.policy_device,
                        shard_stepping=rt.shard_stepping,
                    ))
                proc = ctx.Process(
                    target=collector_main,
                    args=(self.env_fn, policy, blocks, weights, self.free_qs[k * s_all:], self.full_qs[k * s_all:],
                          self.stop_event, specs, slots),
                    name="unilab-collector" if k_all == 1 else f"unilab-collector-{k}",
                    daemon=True,
                )
                self.procs.append(proc)
                proc.start()
        except BaseException:
            self.stop()
            raise
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
        return blocks, weights

    # -- receive --------------------------------------------------------------------------
    def name(self, k: int) -> str:
        """How messages name collector ``k``: "collector process" alone, else with index and pid."""
        if len(self.procs) <= 1:
            return "collector process"
        try:
            pid = self.procs[k].pid
        except ValueError:  # closed
            pid = None
        return f"collector {k} of {len(self.procs)} (pid {pid})"

    def alive(self) -> bool:
        """True while every collector process runs."""
        return all(p.is_alive() for p in self.procs)

    def release(self, block: int) -> None:
        """Hand ``block`` back to every shard: its data is in the replay."""
        for free_q in self.free_qs:
            free_q.put(block)

    def raise_if_dead(self) -> None:
        """Raise the acting server's failure (:class:`~unilab_rl.async_runtime.acting_server.ActingServerDied`)
        if it failed, else :class:`CollectorDied` for the first collector that exited (with its
        error report when it sent one, on any of its shards' queues)."""
        if self.server is not None:
            self.server.raise_if_failed(self.learner.iteration)
        s_all = self.runtime.collector_shards
        for k, proc in enumerate(self.procs):
            if proc.is_alive():
                continue
            for full_q in self.full_qs[k * s_all:(k + 1) * s_all]:
                try:  # it may have reported something just before exiting
                    while True:
                        block, info = full_q.get(timeout=POLL_S)
                        if block == "error":
                            self._raise_error(k, info)
                except queue.Empty:
                    pass
            raise CollectorDied(
                f"{self.name(k)} exited with code {proc.exitcode} at iteration {self.learner.iteration}",
                proc.exitcode, self.learner.iteration,
            )

    def _raise_error(self, k: int, info: str) -> None:
        self.procs[k].join(5.0)
        last = info.strip().splitlines()[-1] if info.strip() else "unknown error"
        raise CollectorDied(
            f"{self.name(k)} failed at iteration {self.learner.iteration}: {last}\n{info}",
            self.procs[k].exitcode, self.learner.iteration,
        )

    def _next_block(self, j: int, first: bool) -> tuple[int, dict[str, Any]]:
        """The next full block of shard ``j`` (of process ``j // collector_shards``)."""
        k = j // self.runtime.collector_shards
        deadline = time.monotonic() + self.start_timeout_s if first else math.inf
        while True:
            try:
                block, info = self.full_qs[j].get(timeout=POLL_S)
            except queue.Empty:
                self.raise_if_dead()
                if time.monotonic() > deadline:
                    raise CollectorDied(
                        f"{self.name(k)} sent no data within {self.start_timeout_s:.0f} s of starting",
                        None, self.learner.iteration,
                    ) from None
                continue
            if block == "error":
                self._raise_error(k, info)
            return block, info

    def next_group(self, first: bool) -> tuple[int, dict[str, Any]]:
        """The next block filled by every shard (each wrote its env columns), and the shards'
        reports merged: episodes concatenated in shard order, env logs averaged (:func:`merge_logs`),
        times and policy version of the slowest / most behind shard, weight pulls summed, the step
        time split (``phase_time``) averaged over the shards.

        Raises:
            CollectorDied: a collector died, failed, or (``first``) sent nothing in time.
        """
        parts = [self._next_block(j, first) for j in range(len(self.full_qs))]
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
            logs.append(merge_logs([i["logs"][t] for i in infos], [len(rs) for rs, _ in shard_eps]))
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

    # -- stop -----------------------------------------------------------------------------
    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop and reap every collector, holding back SIGINT/SIGTERM until they are reaped (they
        are re-raised afterwards, so the caller's handlers still see them). Never raises itself."""
        held: list[int] = []
        previous = {}
        if threading.current_thread() is threading.main_thread():
            previous = {s: signal.signal(s, lambda signum, frame: held.append(signum))
                        for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self._reap(timeout_s)
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
            for signum in dict.fromkeys(held):
                signal.raise_signal(signum)

    def _reap(self, timeout_s: float) -> None:
        """Event; join all (one shared deadline); terminate, join; kill, join; then close the
        queues and the processes. Records every exit code and the first non-zero one."""
        procs = self.procs
        try:
            if self.stop_event is not None:
                self.stop_event.set()
        except Exception as exc:  # noqa: BLE001
            self.cleanup_errors.append(f"stop event: {type(exc).__name__}: {exc}")
        started = [(k, p) for k, p in enumerate(procs) if getattr(p, "_popen", None) is not None]
        for action, wait in (("join", timeout_s), ("terminate", 5.0), ("kill", 5.0)):
            deadline = time.monotonic() + wait
            for k, proc in started:
                try:
                    if action == "terminate" and proc.is_alive():
                        self.cleanup_errors.append(f"{self.name(k)} did not stop within {timeout_s:.0f} s; terminated")
                        proc.terminate()
                    elif action == "kill" and proc.is_alive():
                        self.cleanup_errors.append(f"{self.name(k)} ignored SIGTERM; killed")
                        proc.kill()
                except Exception as exc:  # noqa: BLE001
                    self.cleanup_errors.append(f"{self.name(k)} {action}: {type(exc).__name__}: {exc}")
            for k, proc in started:
                try:
                    proc.join(max(0.0, deadline - time.monotonic()))
                except Exception as exc:  # noqa: BLE001
                    self.cleanup_errors.append(f"{self.name(k)} join: {type(exc).__name__}: {exc}")
            if not any(p.is_alive() for _, p in started):
                break
        self.exitcodes = [p.exitcode if getattr(p, "_popen", None) is not None else None for p in procs]
        codes = self.exitcodes
        self.exitcode = next((c for c in codes if c not in (0, None)), None if (not codes or None in codes) else 0)
        for q in (*self.free_qs, *self.full_qs):
            try:
                q.cancel_join_thread()
                q.close()
            except Exception as exc:  # noqa: BLE001
                self.cleanup_errors.append(f"queue close: {type(exc).__name__}: {exc}")
        for k, proc in started:
            try:
                proc.close()
            except Exception as exc:  # noqa: BLE001
                self.cleanup_errors.append(f"{self.name(k)} close: {type(exc).__name__}: {exc}")


__all__ = ["CollectorPool", "collector_policy_device", "merge_logs"]
