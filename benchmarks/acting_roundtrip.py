"""The acting server's round trip (``runtime.policy_device=server``), as a collector sees it.

A spawned client process (as a collector is) sends ``--iters`` acting requests through
:class:`unilab_rl.async_runtime.ActingSlots` to an :class:`unilab_rl.async_runtime.ActingServer`
thread in this process and times each from writing its observations to reading the answer
(``mean``, ``log_std``). Two policies:

* ``null``: ``gaussian`` returns zeros: the signalling alone (pipe write, server wake-up, slot
  copies, semaphore wake-up);
* ``sac``: SAC's exploration policy (512-256-128, LayerNorm and SiLU, a normalizer) at ``--rows``
  rows, on ``--device`` (``cpu``: the learner's torch threads, ``--threads``).

Beside each round trip it prints the same ``gaussian`` call made directly in this process
(``direct``), so ``round trip - direct`` is what serving costs. Dev machine (CPU)::

    python benchmarks/acting_roundtrip.py --rows 256 --obs-dim 160 --iters 2000

On the GPU machine add ``--device cuda`` (the server acts on a high-priority stream).

Two options bring the probe closer to training, where one server answers several shards while
the learner updates in the same process:

* ``--clients N``: N client processes at once, each on its own slot (2 collectors x 2 shards:
  4), so requests queue on the one server thread;
* ``--learner TASK:ALGO`` (e.g. ``g1_motion_tracking:sac``): the task's real exploration policy
  (its owner YAML, ``--preset`` and ``--set KEY=VALUE`` overrides, e.g. ``runtime.compile=false``)
  replaces ``sac``'s stand-in, and each row runs twice: with the learner idle, and with a thread
  of this process calling ``update()`` on random replay and :meth:`ActingServer.publish` after
  each one, as the async runner does. The busy row prints the learner's updates per second.
  On the GPU machine, the two rows say how much of a shard's acting time in training is the
  learner's doing (its GIL holds, its kernels, its snapshot copies) and how much is queueing.

On CUDA every row runs with the server's CUDA graph off, then on (``ActingServer(cuda_graph=)``;
the graph is captured after the first eager calls, which the medians' warm-up tenth leaves out
at ``--iters`` of 100 or more)::

    python benchmarks/acting_roundtrip.py --device cuda --clients 4 --learner g1_motion_tracking:sac --set runtime.compile=false
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import types

import torch
import torch.multiprocessing as mp
from torch import nn


class NullPolicy(nn.Module):
    """``gaussian(obs)`` = zeros: a server call with no policy work."""

    def __init__(self, num_actions: int) -> None:
        super().__init__()
        self.num_actions = num_actions

    def gaussian(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        zeros = obs.new_zeros(obs.shape[0], self.num_actions)
        return zeros, zeros

    def explore_from(self, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
        return mean


def sac_policy(obs_dim: int, num_actions: int) -> nn.Module:
    """SAC's exploration policy at the G1's default actor widths."""
    from unilab_rl.algorithms.sac.networks import Actor, ExplorationPolicy
    from unilab_rl.normalizer import RunningMeanStd

    box = torch.ones(num_actions)
    return ExplorationPolicy(Actor(obs_dim, -box, box, (512, 256, 128)), RunningMeanStd(obs_dim))


def client(slots, slot: int, iters: int, results) -> None:
    """Spawned: ``iters`` requests on ``slot``, each round trip in seconds, sent back on ``results``."""
    torch.set_num_threads(1)
    obs = torch.randn(slots.rows, slots.obs.shape[-1])
    times = []
    with torch.inference_mode():
        for _ in range(iters):
            t0 = time.perf_counter()
            answer = slots.request(slot, obs, lambda: False)
            answer[0].sum()  # read the answer, as the collector's noise draw does
            times.append(time.perf_counter() - t0)
    results.put(times)


def task_learner(spec: str, device: torch.device, preset: str | None, overrides: list[str]):
    """``TASK:ALGO`` -> (the task's agent on ``device`` with its replay filled with random rows
    (:func:`update_speed.filled_agent`), its actor observation width, its number of actions),
    after its first update (compile, graph capture)."""
    from update_speed import filled_agent  # benchmarks/, this script's folder

    task, _, algo = spec.partition(":")
    agent, _, _, _, obs_dims, num_actions = filled_agent(algo, task, preset, overrides, str(device))
    agent.update()
    return agent, obs_dims["actor"], num_actions


def keep_updating(agent, server, stop: threading.Event, counts: list[int]) -> None:
    """Thread: ``agent.update()`` then ``server.publish()`` until ``stop``, as the async runner's
    learner does between blocks; ``counts[0]`` counts the updates."""
    while not stop.is_set():
        agent.update()
        server.publish()
        counts[0] += 1


def stats(times: list[float]) -> dict[str, float]:
    """Median and 90th percentile in ms, after the first tenth (warm-up)."""
    times = sorted(times[len(times) // 10:])
    return {"median_ms": statistics.median(times) * 1e3, "p90_ms": times[int(0.9 * (len(times) - 1))] * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--obs-dim", type=int, default=160, help="without --learner")
    parser.add_argument("--actions", type=int, default=29)
    parser.add_argument("--iters", type=int, default=2000, help="requests per client")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of this (the learner's) process")
    parser.add_argument("--clients", type=int, default=1, help="client processes at once, one slot each")
    parser.add_argument("--learner", default="", help="TASK:ALGO: act with that learner's policy, idle and updating")
    parser.add_argument("--preset", default="", help="with --learner: its owner preset")
    parser.add_argument("--set", action="append", default=[], help="with --learner: KEY=VALUE override (repeatable)")
    args = parser.parse_args()
    from unilab_rl.async_runtime import ActingServer, ActingSlots

    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")
    ctx = mp.get_context("spawn")
    graphs = (False, True) if device.type == "cuda" else (False,)  # the server's CUDA graph off, then on
    if args.learner:
        agent, obs_dim, num_actions = task_learner(args.learner, device, args.preset or None, args.set)
        rows = [("learner", agent, busy, graph) for graph in graphs for busy in (False, True)]
    else:
        obs_dim, num_actions = args.obs_dim, args.actions
        rows = [(name, None, False, graph) for graph in graphs for name in ("null", "sac")]
    for name, agent, busy, graph in rows:
        if agent is None:
            policy = (NullPolicy(num_actions) if name == "null" else sac_policy(obs_dim, num_actions)).to(device)
            learner = types.SimpleNamespace(device=device, exploration_policy=lambda policy=policy: policy)
        else:
            learner = agent
        slots = ActingSlots(args.clients, args.rows, obs_dim, num_actions, ctx)
        server = ActingServer(learner, slots, cuda_graph=graph)
        results = ctx.Queue()
        procs = [ctx.Process(target=client, args=(slots, i, args.iters, results), daemon=True)
                 for i in range(args.clients)]
        for proc in procs:
            proc.start()
        if device.type == "cuda":
            slots.pin()
        server.start()
        stop, counts, updater = threading.Event(), [0], None
        if busy:
            updater = threading.Thread(target=keep_updating, args=(agent, server, stop, counts), daemon=True)
        t_start = time.perf_counter()
        if updater is not None:
            updater.start()
        try:
            times = [t for _ in procs for t in results.get(timeout=600)]
        finally:
            elapsed = time.perf_counter() - t_start
            stop.set()
            if updater is not None:
                updater.join(60)
            for proc in procs:
                proc.join(30)
            problems = server.stop()
            slots.unpin()
        server.raise_if_failed()
        obs = torch.randn(args.rows, obs_dim, device=device)

        def direct() -> None:
            with torch.inference_mode():
                mean, log_std = server.policy.gaussian(obs)
                mean.cpu(), log_std.cpu()

        direct_times = []
        for _ in range(min(args.iters, 500)):
            t0 = time.perf_counter()
            direct()
            direct_times.append(time.perf_counter() - t0)
        rt, dt = stats(times), stats(direct_times)
        label = name + (" (updating)" if busy else " (idle)" if agent is not None else "") + (", graph" if graph else "")
        print(f"{label:25s} rows {args.rows} x {args.clients} clients on {device}: round trip median "
              f"{rt['median_ms']:.3f} ms (p90 {rt['p90_ms']:.3f}); direct gaussian {dt['median_ms']:.3f} ms "
              f"(p90 {dt['p90_ms']:.3f}); serving costs {rt['median_ms'] - dt['median_ms']:.3f} ms; "
              f"calls {server.calls}" + (f"; learner {counts[0] / elapsed:.1f} updates/s" if busy else "")
              + ("" if server.graphed == graph else f"; graph capture failed: {server.graph_error}")
              + (f"; {problems}" if problems else ""), flush=True)


if __name__ == "__main__":
    main()
