"""How long one acting call waits for a GPU that a learner keeps busy, from another process or
from the learner's own process.

A collector process that acts on the learner's GPU (``runtime.policy_device=learner``) holds its
own CUDA context. While the learner's process replays its update, the GPU runs one context at a
time and switches between them in time slices, so a small forward pass from the collector may
wait for a slice. Kernels from two streams of one context can instead run side by side, and a
high-priority stream's blocks are scheduled first. This script times the acting call (host ->
device copy of the observations, an MLP forward, device -> host copy of the actions) three ways:

* ``alone``: nothing else on the GPU;
* ``other_process``: a child process keeps the GPU busy with learner-like work (a CUDA graph of
  matrix products at batch ``--learner-batch``, replayed back to back), as a learner beside the
  collector processes does;
* ``same_process``: the same work from a thread of this process on its own stream, and the acting
  call on a high-priority stream, as acting served by the learner's own process would run.

It prints the median and 90th percentile of each, in ms. GPU machine, e.g.::

    python benchmarks/acting_latency.py --rows 256 --obs-dim 160 --iters 400

If the time slices between contexts set the wait, ``other_process`` is well above ``alone`` and
``same_process`` close to ``alone``; if the learner's kernels filling the GPU set it, both are
well above ``alone``. The sizes default to SAC's actor (512-256-128, LayerNorm and SiLU) and its
g1_motion_tracking observation and action sizes at 256 rows per shard. Needs CUDA.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time

import torch
import torch.multiprocessing as mp
from torch import nn


def actor(obs_dim: int, hidden: list[int], actions: int) -> nn.Module:
    """An MLP of SAC's actor's shape: ``Linear -> LayerNorm -> SiLU`` per width, then a linear head
    of mean and log std (2 x actions)."""
    layers: list[nn.Module] = []
    width = obs_dim
    for h in hidden:
        layers += [nn.Linear(width, h), nn.LayerNorm(h), nn.SiLU()]
        width = h
    layers.append(nn.Linear(width, 2 * actions))
    return nn.Sequential(*layers)


def learner_graph(batch: int, width: int, depth: int, device: torch.device, stream: torch.cuda.Stream):
    """A CUDA graph of ``depth`` chained ``tanh((batch, width) x (width, width))`` products,
    captured on ``stream``: learner-like GPU work, several ms per replay."""
    x = torch.randn(batch, width, device=device)
    weights = [torch.randn(width, width, device=device) / width**0.5 for _ in range(depth)]

    def chain() -> torch.Tensor:
        y = x
        for w in weights:
            y = torch.tanh(y @ w)
        return y

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        for _ in range(2):  # warm the kernels up outside the capture
            chain()
        torch.cuda.synchronize(device)
        with torch.cuda.graph(graph, stream=stream):
            chain()
    return graph


def busy_child(batch: int, width: int, depth: int, ready, stop) -> None:
    """Child process: replay the learner-like graph until ``stop`` is set."""
    device = torch.device("cuda")
    stream = torch.cuda.Stream(device)
    graph = learner_graph(batch, width, depth, device, stream)
    ready.set()
    with torch.cuda.stream(stream):
        while not stop.is_set():
            graph.replay()
            stream.synchronize()


def time_acting(policy: nn.Module, rows: int, obs_dim: int, iters: int, stream: torch.cuda.Stream) -> list[float]:
    """``iters`` acting calls on ``stream``: pinned observations to the GPU, the forward, the
    actions back to the host, waited for. Returns each call's ms, after 20 untimed."""
    obs = torch.randn(rows, obs_dim).pin_memory()
    out = []
    with torch.no_grad(), torch.cuda.stream(stream):
        for i in range(iters + 20):
            t = time.perf_counter()
            actions = policy(obs.to("cuda", non_blocking=True)).to("cpu", non_blocking=True)
            stream.synchronize()
            if i >= 20:
                out.append((time.perf_counter() - t) * 1e3)
            time.sleep(0.002)  # a collector acts between env steps, not back to back
    assert actions.shape == (rows, policy[-1].out_features)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=256, help="observations per acting call (one shard)")
    p.add_argument("--obs-dim", type=int, default=160)
    p.add_argument("--actions", type=int, default=29)
    p.add_argument("--hidden", default="512,256,128")
    p.add_argument("--iters", type=int, default=400)
    p.add_argument("--learner-batch", type=int, default=8192)
    p.add_argument("--learner-width", type=int, default=1024)
    p.add_argument("--learner-depth", type=int, default=24, help="products per replay")
    args = p.parse_args(argv)
    if not torch.cuda.is_available():
        print("error: torch.cuda.is_available() is False; expected a CUDA GPU (this script times GPU acting)")
        sys.exit(2)
    device = torch.device("cuda")
    policy = actor(args.obs_dim, [int(h) for h in args.hidden.split(",")], args.actions).to(device)
    # Lower numbers are higher priorities; torch maps a number past the device's range to its end.
    acting_stream = torch.cuda.Stream(device, priority=-100)
    results: dict[str, list[float]] = {}

    results["alone"] = time_acting(policy, args.rows, args.obs_dim, args.iters, acting_stream)

    ctx = mp.get_context("spawn")
    ready, stop = ctx.Event(), ctx.Event()
    child = ctx.Process(target=busy_child, args=(args.learner_batch, args.learner_width, args.learner_depth,
                                                 ready, stop), daemon=True)
    child.start()
    try:
        if not ready.wait(120):
            print(f"error: the busy child process did not start within 120 s (exit code {child.exitcode}); "
                  "expected it to build its CUDA graph")
            sys.exit(1)
        results["other_process"] = time_acting(policy, args.rows, args.obs_dim, args.iters, acting_stream)
    finally:
        stop.set()
        child.join(30)

    stop_thread = threading.Event()
    busy_stream = torch.cuda.Stream(device, priority=0)
    graph = learner_graph(args.learner_batch, args.learner_width, args.learner_depth, device, busy_stream)

    def busy() -> None:
        with torch.cuda.stream(busy_stream):
            while not stop_thread.is_set():
                graph.replay()
                busy_stream.synchronize()

    thread = threading.Thread(target=busy, daemon=True)
    thread.start()
    try:
        results["same_process"] = time_acting(policy, args.rows, args.obs_dim, args.iters, acting_stream)
    finally:
        stop_thread.set()
        thread.join(30)

    torch.cuda.synchronize(device)
    t = time.perf_counter()
    graph.replay()  # on the current stream
    torch.cuda.synchronize(device)
    replay_ms = (time.perf_counter() - t) * 1e3
    print(f"acting call at {args.rows} rows (obs {args.obs_dim}, MLP {args.hidden}, {args.actions} actions); "
          f"learner-like replay {replay_ms:.1f} ms ({args.learner_depth} products of {args.learner_batch} x "
          f"{args.learner_width})")
    print(f"{'':14s} {'median ms':>10s} {'p90 ms':>8s}")
    for name, ms in results.items():
        print(f"{name:14s} {statistics.median(ms):10.3f} {statistics.quantiles(ms, n=10)[-1]:8.3f}")


if __name__ == "__main__":
    main()
