"""The learner's loop of the asynchronous runtime: take full blocks, store them, update, record."""

from __future__ import annotations

import time
from collections.abc import Callable

import torch.multiprocessing as tmp

from unilab_rl.async_runtime.acting_server import ActingServer, check_server_policy
from unilab_rl.async_runtime.collector import COLLECTOR_PHASES
from unilab_rl.async_runtime.processes import CollectorPool, collector_policy_device
from unilab_rl.async_runtime.transport import ActingSlots, CollectorDied, flat_state
from unilab_rl.learner import Learner, missing_members
from unilab_rl.runner.loop import LearnSummary, RunBook, RunnerBase, RunnerHooks
from unilab_rl.runtime import RuntimeConfig
from unilab_rl.vecenv import VecEnv


class AsyncOffPolicyRunner(RunnerBase):
    """Off-policy training with collection in separate processes (see :mod:`unilab_rl.async_runtime`).

    Args:
        env_fn: picklable callable building the :class:`VecEnv` in a collector (e.g.
            ``functools.partial(module_level_make_env, config)``): a CPU env with the learner's
            ``num_envs`` envs and observation groups; with several shards it is called with
            ``num_envs`` and ``seed`` keywords for each.
        algo: the learner (:class:`~unilab_rl.learner.Learner`).
        runtime: execution settings (``num_collectors``, ``collector_shards``, ``block_steps``,
            ``num_blocks``, ``sync_weights_every``, ``collector_threads``, ``policy_device``).
        hooks, log_fn, checkpoint_fn, log_interval, checkpoint_interval, episode_window, seed,
            steps_per_iteration, goal_episode_length: as :class:`~unilab_rl.runner.OffPolicyRunner`.
        start_timeout_s: seconds the learner waits for the first block (collector start: imports,
            env build) before failing.
        env_seed: base env seed of the shards when there are several (default: ``seed``).

    Attributes:
        summary: the :class:`~unilab_rl.runner.LearnSummary` of the last :meth:`learn` call,
            with the async fields (waits, transfer counters, collector exit codes, cleanup errors).
        transfer: counters: ``blocks``, ``bytes_to_learner``, ``weight_broadcasts``,
            ``weight_bytes``, ``weight_pulls``, ``pinned`` (1 when the block ring is page-locked
            for CUDA copies), and with ``runtime.policy_device=server`` ``acting_calls`` (requests
            the acting server answered), ``weight_snapshots`` (copies of the live weights it
            acted with) and ``acting_graph`` (1 when its calls replayed its CUDA graph).
        policy_device: where the exploration policy runs
            (:func:`~unilab_rl.async_runtime.collector_policy_device`: ``"cpu"``, the learner's
            device, or ``"server:<device>"``).
        server: the acting server of the last :meth:`learn` call (``runtime.policy_device=server``),
            else None.

    Raises:
        ValueError: an interval or window out of range; ``num_envs`` not divisible by the shards;
            ``runtime.policy_device=server`` with an exploration policy that lacks ``gaussian`` or
            ``explore_from``.
        TypeError: ``algo`` lacks a member of :class:`~unilab_rl.learner.Learner` (all named).
    """

    def __init__(
        self,
        env_fn: Callable[..., VecEnv],
        algo: Learner,
        runtime: RuntimeConfig | None = None,
        *,
        hooks: RunnerHooks | None = None,
        log_fn: Callable[[int, dict[str, float]], None] | None = None,
        checkpoint_fn: Callable[[int], None] | None = None,
        log_interval: int = 1,
        checkpoint_interval: int = 0,
        episode_window: int | None = None,
        seed: int | None = None,
        steps_per_iteration: int | None = None,
        goal_episode_length: int | None = None,
        start_timeout_s: float = 300.0,
        env_seed: int | None = None,
    ) -> None:
        missing = missing_members(algo)
        if missing:
            raise TypeError(f"{type(algo).__name__} cannot run in the async runtime: it lacks {', '.join(missing)}")
        self.runtime = runtime if runtime is not None else algo.runtime
        if algo.num_envs % (self.runtime.num_collectors * self.runtime.collector_shards):
            raise ValueError(
                f"num_envs={algo.num_envs} must be divisible by runtime.num_collectors * runtime.collector_shards "
                f"= {self.runtime.num_collectors} * {self.runtime.collector_shards}"
            )
        super().__init__(algo, algo.num_envs, hooks=hooks, log_fn=log_fn, checkpoint_fn=checkpoint_fn,
                         log_interval=log_interval, checkpoint_interval=checkpoint_interval,
                         episode_window=episode_window, seed=seed, steps_per_iteration=steps_per_iteration,
                         goal_episode_length=goal_episode_length)
        self.policy_device = collector_policy_device(self.runtime.policy_device, algo.device)
        self.serving = self.runtime.policy_device == "server"
        if self.serving:
            check_server_policy(algo.exploration_policy())
        self.env_fn = env_fn
        self.env_seed = env_seed
        self.start_timeout_s = start_timeout_s
        self.transfer = {"blocks": 0, "bytes_to_learner": 0, "weight_broadcasts": 0, "weight_bytes": 0,
                         "weight_pulls": 0, "pinned": 0}
        if self.serving:
            self.transfer |= {"acting_calls": 0, "weight_snapshots": 0, "acting_graph": 0}
        self.summary = LearnSummary(runtime="async", policy_device=self.policy_device)
        self.pool: CollectorPool | None = None
        self.server: ActingServer | None = None

    @property
    def collector_exitcode(self) -> int | None:
        """The last pool's first non-zero exit code (0: all stopped cleanly; None: none ran)."""
        return self.summary.collector_exitcode

    @property
    def collector_exitcodes(self) -> list[int | None]:
        """Every collector's exit code of the last pool, in order."""
        return self.summary.collector_exitcodes or []

    @property
    def cleanup_errors(self) -> list[str]:
        """Problems met while stopping the last pool."""
        return self.summary.cleanup_errors

    def learn(
        self,
        num_iterations: int,
        start_iteration: int | None = None,
        on_iteration: Callable[[int, dict[str, float]], None] | None = None,
    ) -> LearnSummary:
        """Train for ``num_iterations`` iterations with collector processes.

        Starts the collectors (spawn), consumes exactly ``num_iterations`` env steps from them
        and stops them before returning or raising; each call starts from ``env.reset()`` in fresh
        collectors.

        Args and metrics: as :meth:`unilab_rl.runner.OffPolicyRunner.learn`, plus
            ``Perf/learner_wait_time`` and ``Perf/collector_wait_time`` (a block's waits spread
            over its iterations), ``Perf/policy_lag`` (broadcasts the collectors' policy is behind,
            at block end; 0 with ``runtime.policy_device=server``) and
            ``Perf/collector_start_time`` (once). ``Perf/collection_time`` is
            measured in the collectors (overlapping learning), and so is its split
            ``Perf/collector_<phase>_time`` (:data:`~unilab_rl.async_runtime.COLLECTOR_PHASES`, per
            env step, the mean over shards; with ``runtime.policy_device=server`` the ``policy``
            phase is the round trip to the acting server plus the noise); ``Perf/total_fps`` is the
            env steps per second since the call started.

        Returns:
            :class:`~unilab_rl.runner.LearnSummary` with ``runtime="async"``.

        Raises:
            ValueError: ``num_iterations`` < 0.
            CollectorDied: a collector exited, raised, or sent nothing within ``start_timeout_s``;
                :class:`~unilab_rl.async_runtime.ActingServerDied` (a subclass): the acting server
                thread failed.
            FloatingPointError: a learner metric became NaN or infinite.
        """
        algo = self.algo
        book = self._open_book(num_iterations, start_iteration, on_iteration, LearnSummary(
            runtime="async", policy_device=self.policy_device,
            collector_phase_time_s=dict.fromkeys(COLLECTOR_PHASES, 0.0)))
        env_seed = self.seed if self.env_seed is None else self.env_seed
        self._blocks = None
        self.server = None
        self.pool = CollectorPool(self.env_fn, algo, self.runtime, "cpu" if self.serving else self.policy_device,
                                  self.seed, env_seed, self.start_timeout_s)
        if num_iterations == 0:
            return book.run(lambda: None)
        return book.run(lambda: self._loop(num_iterations, book), cleanup=self._stop)

    def _stop(self) -> None:
        """Stop the pool, then the acting server, and copy their exit codes, cleanup errors and
        the transfer counters into the summary."""
        pool, s, server = self.pool, self.summary, self.server
        blocks = getattr(self, "_blocks", None)
        pool.stop()
        if server is not None:
            s.cleanup_errors.extend(server.stop())
            server.slots.unpin()
            self.transfer["acting_calls"], self.transfer["weight_snapshots"] = server.calls, server.snapshots
            self.transfer["acting_graph"] = int(server.graphed)
        if blocks is not None:
            blocks.unpin()
        s.collector_exitcode, s.collector_exitcodes = pool.exitcode, list(pool.exitcodes)
        s.cleanup_errors.extend(pool.cleanup_errors)
        s.transfer = dict(self.transfer)

    def _loop(self, num_iterations: int, book: RunBook) -> None:
        algo, rt, pool = self.algo, self.runtime, self.pool
        n = algo.num_envs
        first_iteration = algo.iteration
        live = algo.exploration_policy()
        updates_since_broadcast = 0
        phases = self.summary.collector_phase_time_s
        ctx = tmp.get_context("spawn")
        slots, server = None, None
        if self.serving:  # shard j asks through slot j
            shards = rt.num_collectors * rt.collector_shards
            slots = ActingSlots(shards, n // shards, algo.replay.obs_dims["actor"], algo.num_actions, ctx)
            server = self.server = ActingServer(algo, slots)
        blocks, weights = pool.start(num_iterations, ctx, server)
        self._blocks = blocks
        # Pinned after the children hold their handles; copies stay blocking, so a slot is only
        # handed back once its data is on the device.
        self.transfer["pinned"] = int(algo.device.type == "cuda" and blocks.pin())
        if server is not None:
            if algo.device.type == "cuda":
                slots.pin()
            server.start()
        first = True
        while algo.iteration < first_iteration + num_iterations:
            # Take the next block every shard has filled; copy it into the replay; free the slot.
            t0 = time.perf_counter()
            block, info = pool.next_group(first)
            t1 = time.perf_counter()
            if first:  # process start, imports and env build: not a steady-state wait
                self.summary.collector_start_time_s = t1 - t0
                t0 = t1
            steps = info["steps"]
            base_rows = len(algo.replay)
            self.transfer["bytes_to_learner"] += algo.store_steps(
                *blocks.view(block, steps), truncated=blocks.view_truncated(block, steps)
            )
            pool.release(block)
            t2 = time.perf_counter()
            self.transfer["blocks"] += 1
            self.transfer["weight_pulls"] = info["weight_pulls"]
            for p in COLLECTOR_PHASES:
                phases[p] += info["phase_time"][p]
            lag = self.transfer["weight_broadcasts"] - info["policy_version"]

            # One iteration per env step of the block: its updates (once the warm-up rows are in),
            # a weight broadcast every sync_weights_every updates, and the record.
            for t in range(steps):
                t3 = time.perf_counter()
                metrics: dict[str, float] = {}
                if min(base_rows + (t + 1) * n, algo.replay.capacity) >= algo.learning_starts * n:
                    metrics |= book.update()
                    updates_since_broadcast += algo.updates_per_iteration
                    if server is not None:  # the server acts with this update's weights
                        server.publish()
                    elif updates_since_broadcast >= rt.sync_weights_every:
                        try:
                            self.transfer["weight_bytes"] += weights.publish(flat_state(live), pool.alive)
                        except CollectorDied:
                            pool.raise_if_dead()
                            raise
                        self.transfer["weight_broadcasts"] += 1
                        updates_since_broadcast = 0
                t4 = time.perf_counter()
                algo.iteration += 1

                returns, lengths = info["episodes"][t]
                metrics["Perf/collection_time"] = info["collect_time"] / steps
                for p in COLLECTOR_PHASES:
                    metrics[f"Perf/collector_{p}_time"] = info["phase_time"][p] / steps
                metrics["Perf/learning_time"] = (t2 - t1) / steps + (t4 - t3)
                metrics["Perf/learner_wait_time"] = (t1 - t0) / steps
                metrics["Perf/collector_wait_time"] = info["wait_time"] / steps
                metrics["Perf/total_fps"] = (algo.iteration - first_iteration) * n / max(book.elapsed(), 1e-9)
                metrics["Perf/policy_lag"] = float(lag)
                if first and t == 0:
                    metrics["Perf/collector_start_time"] = self.summary.collector_start_time_s
                book.end_iteration(metrics, returns, lengths, info["logs"][t], {
                    "collection": info["collect_time"] / steps,
                    "learning": (t2 - t1) / steps + (t4 - t3),
                    "learner_wait": (t1 - t0) / steps,
                    "collector_wait": info["wait_time"] / steps,
                })
            first = False


__all__ = ["AsyncOffPolicyRunner"]
