"""Learner update speed per algorithm and ``torch.compile`` mode, without physics.

From the repository root (packages installed), e.g. on the GPU machine:

    python benchmarks/update_speed.py --device cuda --algos sac,flashsac \\
        --modes eager,default,reduce-overhead,max-autotune-no-cudagraphs

For each algorithm x mode, in a fresh Python process (so no compile cache or dynamo state carries
over from the previous mode; inductor's on-disk cache may), it builds the agent exactly as
``unilab train --algo A --task T --sim mujoco`` would (owner YAML, ``--preset``, ``--set``
overrides; ``runtime.compile_mode`` = the mode, ``runtime.compile=false`` for ``eager``;
``runtime.cuda_graph`` stays as configured, ``auto`` by default, so on CUDA every mode of SAC and
FlashSAC runs inside whole-step CUDA graphs unless ``--set runtime.cuda_graph=false``), fills its
replay buffer with ``learning_starts`` env steps of random transitions (Gaussian observations,
uniform actions in the action box, rewards N(0, 1), 1 % terminations), then calls
``agent.update()``:

* ``first``: the first call, which compiles (s);
* ``ms/update``: the median over ``--repeats`` timings of ``--updates`` calls each, after
  ``--warmup`` untimed calls, with the device synchronized around each timing. One call is one
  iteration's learning: ``num_updates`` critic updates plus the actor and temperature updates due
  (FlashSAC: every ``actor_update_period``-th);
* ``ms/critic update``: that divided by ``num_updates``; ``samples/s``: transitions drawn per
  second (``num_updates * batch_size`` per call); ``ms/1k samples``: the sample cost, ms per
  1,000 transitions drawn, the figure to compare across batch sizes;
* ``graphs``: whether the timed calls replayed CUDA graphs (the learner's ``cuda_graphs``);
* with ``--flops``, ``GFLOP/update`` and ``kFLOP/sample``: the floating-point operations of one
  ``update()`` call as :class:`torch.utils.flop_counter.FlopCounterMode` counts them (matrix
  products and convolutions, forward and backward; elementwise ops are not counted), and per
  transition drawn: what the algorithm's networks cost per sample whatever the hardware. Counted
  on an extra call after the warm-up; use ``--modes eager`` (compiled graphs hide their ops
  from the counter), e.g. on a CPU:

    python benchmarks/update_speed.py --device cpu --modes eager --flops --updates 1 --repeats 1 --warmup 0

The replay is shrunk to ``--buffer-per-env`` steps per env (sampling cost does not depend on the
capacity; FlashSAC's owner replay alone is about 19 GB). The env is built once per process, only
for its observation and action sizes, mirror and bounds; it is not stepped.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

MODES = ("eager", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def filled_agent(algo: str, task: str, preset: str | None, overrides: list[str], device_name: str):
    """The agent ``unilab train --algo ALGO --task TASK`` would build (owner YAML, ``preset``,
    ``overrides``) on ``device_name``, its replay filled with ``learning_starts`` iterations of
    random rows (N(0, 1) observations, uniform actions in the env's box), the env closed again.

    Returns:
        ``(agent, algo_cfg, device, num_envs, obs_dims, num_actions)``.

    Raises:
        SystemExit: ``algo.buffer_size_per_env`` below ``learning_starts``.
    """
    import torch

    from unilab.build import algo_settings, prepare, seed_everything
    from unilab_rl.device import resolve_device

    algo_reg, task_reg, backend_reg, cfg = prepare(algo, task, "mujoco", overrides, preset)
    device = resolve_device(device_name)
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")
    seed_everything(cfg.training.seed)
    algo_cfg, runtime = algo_settings(algo_reg, cfg)
    n = cfg.training.num_envs
    env = task_reg.item.make_env(cfg.env, backend_cls=backend_reg.item, num_envs=n, nthread=1,
                                 cpu_ids=None, robot=cfg.robot, seed=cfg.training.seed)
    try:
        agent = algo_reg.item.make_agent(env, algo_cfg, device=device, runtime=runtime,
                                         max_iterations=cfg.training.max_iterations)
        obs_dims = dict(env.obs_dims)
        gen = torch.Generator().manual_seed(0)
        low, high = env.action_low.cpu(), env.action_high.cpu()
    finally:
        env.close()
    fill = max(algo_cfg.learning_starts, 1)
    if fill > algo_cfg.buffer_size_per_env:
        raise SystemExit(f"algo.buffer_size_per_env {algo_cfg.buffer_size_per_env} < learning_starts {fill}: raise it")

    def rand_obs() -> dict[str, torch.Tensor]:
        return {g: torch.randn(n, d, generator=gen) for g, d in obs_dims.items()}

    obs = rand_obs()
    for _ in range(fill):
        nxt = rand_obs()
        actions = low + (high - low) * torch.rand(n, low.numel(), generator=gen)
        agent.store(obs, actions, torch.randn(n, generator=gen), torch.rand(n, generator=gen) < 0.01, nxt,
                    torch.zeros(n, dtype=torch.bool))
        obs = nxt
    return agent, algo_cfg, device, n, obs_dims, low.numel()


def one(args: argparse.Namespace, algo: str, mode: str) -> dict:
    """Build, fill and time one agent; returns the row (see the module docstring)."""
    import torch

    overrides = [f"algo.buffer_size_per_env={args.buffer_per_env}", *args.set]
    overrides += ["runtime.compile=false"] if mode == "eager" else ["runtime.compile=true",
                                                                     f"runtime.compile_mode={mode}"]
    agent, algo_cfg, device, n, _, _ = filled_agent(algo, args.task, args.preset or None, overrides, args.device)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    sync()
    t0 = time.perf_counter()
    agent.update()
    sync()
    first = time.perf_counter() - t0
    for _ in range(args.warmup):
        agent.update()
    flops = None
    if args.flops:
        from torch.utils.flop_counter import FlopCounterMode

        with FlopCounterMode(display=False) as counter:
            agent.update()
        flops = counter.get_total_flops()
    times = []
    for _ in range(args.repeats):
        sync()
        t0 = time.perf_counter()
        for _ in range(args.updates):
            agent.update()
        sync()
        times.append((time.perf_counter() - t0) / args.updates)
    ms = 1e3 * statistics.median(times)
    k, batch = algo_cfg.num_updates, algo_cfg.batch_size
    return {"algo": algo, "mode": mode, "device": str(device), "num_envs": n, "batch_size": batch,
            "num_updates": k, "first_s": first, "ms_per_update_call": ms, "ms_per_critic_update": ms / k,
            "samples_per_s": k * batch / (ms / 1e3), "ms_per_1k_samples": ms / (k * batch / 1e3),
            "timings_ms": [1e3 * t for t in times], "compile_backend": getattr(agent, "compile_backend", "eager"),
            "cuda_graphs": bool(getattr(agent, "cuda_graphs", False)),
            "gflop_per_update_call": None if flops is None else flops / 1e9,
            "kflop_per_sample": None if flops is None else flops / (k * batch) / 1e3}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--algos", default="sac,flashsac")
    p.add_argument("--modes", default="eager,default,reduce-overhead")
    p.add_argument("--task", default="g1_walk_flat")
    p.add_argument("--device", default="auto")
    p.add_argument("--preset", default="")
    p.add_argument("--set", action="append", default=[], help="extra key=value override (repeatable)")
    p.add_argument("--updates", type=int, default=20, help="update() calls per timing")
    p.add_argument("--repeats", type=int, default=5, help="timings; the median is reported")
    p.add_argument("--warmup", type=int, default=5, help="untimed update() calls after the first")
    p.add_argument("--buffer-per-env", type=int, default=256)
    p.add_argument("--flops", action="store_true", help="also count the FLOPs of one update() call")
    p.add_argument("--timeout", type=float, default=900, help="s per algorithm x mode process")
    p.add_argument("--out", default=None, help="write the rows as JSON here")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)  # ALGO:MODE, in the child process
    args = p.parse_args(argv)
    for name in ("updates", "repeats", "buffer_per_env"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.one:
        algo, mode = args.one.split(":", 1)
        print("ROW " + json.dumps(one(args, algo, mode)), flush=True)
        return 0

    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        p.error(f"--modes: each must be one of {', '.join(MODES)}, got {bad or args.modes!r}")
    child = list(argv if argv is not None else sys.argv[1:])
    rows = []
    for algo in algos:
        for mode in modes:
            cmd = [sys.executable, __file__, *child, "--one", f"{algo}:{mode}"]
            try:
                res = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                row = {"algo": algo, "mode": mode, "error": f"no result within --timeout {args.timeout:g} s"}
            else:
                found = [ln[4:] for ln in res.stdout.splitlines() if ln.startswith("ROW ")]
                row = json.loads(found[-1]) if found else {
                    "algo": algo, "mode": mode,
                    "error": (res.stderr.strip().splitlines() or [f"exit code {res.returncode}"])[-1]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    print()
    print(f"{'algo':10s} {'mode':28s} {'batch':>6s} {'upd':>4s} {'first (s)':>9s} {'ms/update':>10s} "
          f"{'ms/critic':>10s} {'samples/s':>11s} {'ms/1k samples':>13s} {'graphs':>6s}"
          + (f" {'GFLOP/update':>12s} {'kFLOP/sample':>12s}" if args.flops else ""))
    for r in rows:
        if "error" in r:
            print(f"{r['algo']:10s} {r['mode']:28s} error: {r['error']}")
            continue
        print(f"{r['algo']:10s} {r['mode']:28s} {r['batch_size']:6d} {r['num_updates']:4d} {r['first_s']:9.1f} "
              f"{r['ms_per_update_call']:10.2f} {r['ms_per_critic_update']:10.2f} {r['samples_per_s']:11.0f} "
              f"{r['ms_per_1k_samples']:13.3f} {str(r['cuda_graphs']).lower():>6s}"
              + (f" {r['gflop_per_update_call']:12.1f} {r['kflop_per_sample']:12.1f}" if args.flops else ""))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
