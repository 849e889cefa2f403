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

On the GPU machine add ``--device cuda`` (the server acts on a high-priority stream). Nothing else
runs on the learner's side here: with a learner updating, the server thread also waits for the
GIL between the learner's torch calls and, on CUDA, shares the GPU with the learner's kernels.
"""

from __future__ import annotations

import argparse
import statistics
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


def client(slots, iters: int, results) -> None:
    """Spawned: ``iters`` requests on slot 0, each round trip in seconds, sent back on ``results``."""
    torch.set_num_threads(1)
    obs = torch.randn(slots.rows, slots.obs.shape[-1])
    times = []
    with torch.inference_mode():
        for _ in range(iters):
            t0 = time.perf_counter()
            answer = slots.request(0, obs, lambda: False)
            answer[0].sum()  # read the answer, as the collector's noise draw does
            times.append(time.perf_counter() - t0)
    results.put(times)


def stats(times: list[float]) -> dict[str, float]:
    """Median and 90th percentile in ms, after the first tenth (warm-up)."""
    times = sorted(times[len(times) // 10:])
    return {"median_ms": statistics.median(times) * 1e3, "p90_ms": times[int(0.9 * (len(times) - 1))] * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=256)
    parser.add_argument("--obs-dim", type=int, default=160)
    parser.add_argument("--actions", type=int, default=29)
    parser.add_argument("--iters", type=int, default=2000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of this (the learner's) process")
    args = parser.parse_args()
    from unilab_rl.async_runtime import ActingServer, ActingSlots

    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    ctx = mp.get_context("spawn")
    for name, policy in (("null", NullPolicy(args.actions)), ("sac", sac_policy(args.obs_dim, args.actions))):
        policy = policy.to(device)
        learner = types.SimpleNamespace(device=device, exploration_policy=lambda policy=policy: policy)
        slots = ActingSlots(1, args.rows, args.obs_dim, args.actions, ctx)
        server = ActingServer(learner, slots)
        results = ctx.Queue()
        proc = ctx.Process(target=client, args=(slots, args.iters, results), daemon=True)
        proc.start()
        if device.type == "cuda":
            slots.pin()
        server.start()
        try:
            times = results.get(timeout=600)
        finally:
            proc.join(30)
            problems = server.stop()
            slots.unpin()
        server.raise_if_failed()
        obs = torch.randn(args.rows, args.obs_dim, device=device)

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
        print(f"{name:5s} rows {args.rows} on {device}: round trip median {rt['median_ms']:.3f} ms "
              f"(p90 {rt['p90_ms']:.3f}); direct gaussian {dt['median_ms']:.3f} ms (p90 {dt['p90_ms']:.3f}); "
              f"serving costs {rt['median_ms'] - dt['median_ms']:.3f} ms; calls {server.calls}"
              + (f"; {problems}" if problems else ""), flush=True)


if __name__ == "__main__":
    main()
