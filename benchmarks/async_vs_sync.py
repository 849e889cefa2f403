"""Env steps/s of training in the sync and async runtimes, against physics alone.

From the repository root (packages installed), e.g. on the 16-core GPU machine, the default
SAC g1_walk_flat settings (owner YAML, no preset), every row of the table below in one run:

    python benchmarks/async_vs_sync.py --preset '' --num-envs 1024 --iterations 300 --device cuda --out async.json

and the same side by side with another checkout (e.g. ``git worktree add /tmp/old907 907c15a``),
each run in a child process whose ``PYTHONPATH`` puts that checkout's ``src`` folders first:

    python benchmarks/async_vs_sync.py --preset '' --num-envs 1024 --iterations 300 --device cuda --ab /tmp/old907

Uses SAC on the ``g1_walk_flat`` task unless ``--algo`` and ``--task`` say otherwise (e.g.
``--algo flashsac --task g1_motion_tracking``), with the ``laptop`` preset's settings unless
``--preset`` says otherwise (``--preset ''``: the owner defaults), ``--set key=value`` to override, as ``unilab
train``; no run directory. The async rows use the config's collectors, shards and policy device
unless ``--num-collectors``, ``--collector-shards`` or ``--policy-device`` list others. The rows,
one after the other in this process:

* ``backend``: ``MujocoBackend.step`` alone (mjbatch_uni, decimation 4, the reset pose's joint
  targets held, no env code, no resets) with the async runtime's physics threads: the
  physics-only denominator, same nworld and threads, same run.
* ``env_step``: ``env.step`` with uniform random actions, no learner: the env's ceiling (robots
  fall and reset, as early in training).
* ``inference``: one actor forward (sampled action, normalizer included) for ``num_envs`` rows on
  the collector's CPU with ``--collector-threads`` torch threads, and on the learner device
  including the host->device and device->host copies: where acting is cheaper.
* ``sync``: :class:`unilab_rl.OffPolicyRunner`, ``--iterations`` iterations.
* ``policy_physics`` (after the training rows): physics alone on the states training visits.
  The last training row's learner acts (its exploration policy on the learner device) in a fresh
  env with the async split's physics threads, nothing else running, for ``2 * --iterations`` env
  steps. The rate counts only the time inside ``MujocoBackend.step`` (``env.physics_time_s``)
  over the last 3/4 of them; ``env_step_training`` is the whole ``env.step`` over the same steps
  (policy excluded). The ``backend`` row holds every robot still at its reset pose; this
  one moves and falls them as training does, which costs MuJoCo more solver work per step.
* ``async``: :class:`unilab_rl.AsyncOffPolicyRunner`, the same; ``steady`` excludes the
  collector's start-up (spawn, imports, env build). With ``--num-collectors 1,2,4`` it runs once
  per collector count (``runtime.num_collectors``; keys ``async`` for 1, ``async_k2``, ``async_k4``...),
  each collector with ``physics // K`` physics threads; ``--collector-shards 1,2`` likewise runs
  each count of env shards per collector (``runtime.collector_shards``, one thread each; keys
  ``async_s2``, ``async_k2_s2``...), e.g.

    python benchmarks/async_vs_sync.py --num-envs 1024 --iterations 300 --device cuda --num-collectors 1,2,4

  With ``--shard-stepping threads,pipeline`` each count of shards above 1 runs once per way of
  stepping them (``runtime.shard_stepping``; keys ``async_s2``, ``async_s2_pipe``...), e.g.

    python benchmarks/async_vs_sync.py --preset '' --num-envs 1024 --iterations 300 --device cuda --collector-shards 2 --shard-stepping threads,pipeline

  With ``--policy-device cpu,learner`` each collector count runs once per place of the
  collector's policy (``runtime.policy_device``: its own CPU threads, or the learner's device with a
  host->device->host copy per env step; keys ``async_learner``, ``async_k2_learner``...), with the
  same thread split, so the rows differ in where the policy runs alone, e.g.

    python benchmarks/async_vs_sync.py --num-envs 1024 --iterations 300 --device cuda --policy-device cpu,learner

  ``server`` is the third place (the learner's process acts on its device for every shard,
  :mod:`unilab_rl.async_runtime.acting_server`; keys ``..._server``), and the report prints each
  server row's rate over the same row acting on the learner's device, e.g. the tracking collector
  rows with the policy in each collector's CUDA context against the server:

    python benchmarks/async_vs_sync.py --preset= --algo sac --task g1_motion_tracking --num-envs 1024 --iterations 300 --device cuda --nthread 14 --num-collectors 2 --collector-shards 2 --shard-stepping pipeline --skip sync --set runtime.compile=false --policy-device learner,server

Before the first training row, an untimed ``warmup`` (sync, ``learning_starts + 3`` iterations)
compiles the update once, so that no row pays the first ``torch.compile`` (tens of seconds on the
GPU machine; it also takes CPU cores from physics) and the rows' order does not decide the
comparison; ``--no-warmup`` skips it.

After the rows it prints the collector's phase split of each async row (ms per iteration and share:
``pull`` weights, ``policy``, ``physics``, ``env`` = the rest of ``env.step``, ``write``) and the
ratios: physics on training states / at the reset pose, ``env.step`` on training states /
physics on training states, and sync and async steady / physics on training states (async
should reach 0.9 of the physics).

Physics threads: ``--nthread`` (0 = :func:`unilab.train.thread_split`'s choice: in async mode the
cores left after the collector and learner threads; in sync mode every core); each of K async
collectors gets ``physics // K`` of them, or ``--physics-per-collector`` (e.g. all of them each, so
that the pools oversubscribe the cores and one collector's env code runs while another's physics
does). Learner torch
threads: ``--learner-threads`` in both runtimes when given (on a busy CPU, torch's default thread
count can be far slower than 1 for these small networks), else the split's choice (sync: torch's
default).
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from pathlib import Path

import torch


def _time(fn, repeats: int) -> float:
    fn()  # warm-up
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - t0) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algo", default="sac", help="algorithm, as `unilab train --algo` (sac, flashsac)")
    parser.add_argument("--task", default="g1_walk_flat", help="task, as `unilab train --task`")
    parser.add_argument("--num-envs", type=int, default=32)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--device", default="auto", help="learner device (auto, cpu, cuda, ...)")
    parser.add_argument("--nthread", type=int, default=0, help="physics threads; 0 = automatic split")
    parser.add_argument("--collector-threads", type=int, default=1)
    parser.add_argument("--physics-per-collector", type=int, default=0,
                        help="physics threads of each async collector; 0 = the split's physics // K")
    parser.add_argument("--learner-threads", type=int, default=0)
    parser.add_argument("--block-steps", type=int, default=None)
    parser.add_argument("--num-collectors", default=None,
                        help="async collector processes, a comma-separated list runs each (e.g. 1,2,4)")
    parser.add_argument("--collector-shards", default=None,
                        help="env shards per async collector (runtime.collector_shards, one thread each), a "
                             "comma-separated list runs each (e.g. 1,2)")
    parser.add_argument("--shard-stepping", default=None,
                        help="how a collector with several shards steps them (runtime.shard_stepping), a "
                             "comma-separated list runs each (threads,pipeline)")
    parser.add_argument("--policy-device", default=None,
                        help="where async collectors act (runtime.policy_device), a comma-separated list runs each "
                             "(e.g. cpu,learner or learner,server)")
    parser.add_argument("--preset", default="laptop")
    parser.add_argument("--set", action="append", default=[], help="extra key=value override (repeatable)")
    parser.add_argument("--skip", action="append", default=[],
                        choices=["backend", "env_step", "inference", "sync", "async", "policy_physics"])
    parser.add_argument("--no-warmup", dest="warmup", action="store_false",
                        help="skip the untimed compile warm-up before the first training row")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--ab", default=None, metavar="ROOT",
                        help="another checkout: run this benchmark on it and on this one (child processes), "
                             "print both and the new/old ratios")
    parser.add_argument("--ab-rounds", type=int, default=1, metavar="N",
                        help="with --ab: N rounds, alternating which checkout goes first (old-new, new-old, ...); "
                             "each row's rate is the mean over the rounds, so a drift of the host over the call "
                             "cancels to first order with an even N")
    args = parser.parse_args()
    if args.ab_rounds < 1:
        parser.error(f"--ab-rounds: expected an integer >= 1, got {args.ab_rounds}")
    if args.ab:
        return ab(args, parser)
    from unilab.build import prepare

    algo_reg, task_reg, backend_reg, cfg = prepare(
        args.algo, args.task, "mujoco", [f"training.num_envs={args.num_envs}", *args.set], args.preset or None)
    for key, default in (("num_collectors", 1), ("collector_shards", 1), ("policy_device", "cpu"),
                         ("shard_stepping", "threads")):
        if getattr(args, key) is None:  # the config's own value (owner YAML, preset, --set)
            setattr(args, key, str(_cfg_value(cfg, key, default)))
    collector_counts = [int(k) for k in str(args.num_collectors).split(",") if k.strip()]
    bad = [k for k in collector_counts if k < 1 or args.num_envs % k]
    if not collector_counts or bad:
        parser.error(f"--num-collectors: each must be >= 1 and divide --num-envs={args.num_envs}, got {bad}")
    shard_counts = [int(s) for s in str(args.collector_shards).split(",") if s.strip()]
    bad = [s for s in shard_counts if s < 1 or args.num_envs % (s * max(collector_counts))]
    if not shard_counts or bad:
        parser.error(f"--collector-shards: each must be >= 1 and, times each collector count, divide --num-envs, "
                     f"got {bad}")
    policy_devices = [p.strip() for p in str(args.policy_device).split(",") if p.strip()]
    bad = [p for p in policy_devices if p not in ("cpu", "learner", "server")]
    if not policy_devices or bad:
        parser.error(f"--policy-device: each must be cpu, learner or server, got {bad or args.policy_device!r}")
    steppings = [p.strip() for p in str(args.shard_stepping).split(",") if p.strip()]
    bad = [p for p in steppings if p not in ("threads", "pipeline")]
    if not steppings or bad:
        parser.error(f"--shard-stepping: each must be threads or pipeline, got {bad or args.shard_stepping!r}")

    import dataclasses

    from unilab.build import algo_settings, seed_everything, thread_split
    from unilab_rl import AsyncOffPolicyRunner, OffPolicyRunner
    from unilab_rl.device import resolve_device

    overrides = [f"training.num_envs={args.num_envs}", f"training.max_iterations={max(args.iterations, 1)}",
                 f"runtime.collector_threads={args.collector_threads}",
                 f"runtime.learner_threads={args.learner_threads}", *args.set]
    if args.block_steps:
        overrides.append(f"runtime.block_steps={args.block_steps}")
    algo_reg, task_reg, backend_reg, cfg = prepare(args.algo, args.task, "mujoco", overrides, args.preset or None)
    device = resolve_device(args.device)
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")
    results: dict = {"num_envs": args.num_envs, "iterations": args.iterations, "device": str(device),
                     "torch_threads_default": torch.get_num_threads()}

    def env_fn(nthread: int):
        return functools.partial(
            task_reg.item.make_env, cfg.env, backend_cls=backend_reg.item, num_envs=args.num_envs,
            nthread=nthread, cpu_ids=cfg.sim.cpu_ids, robot=cfg.robot, seed=cfg.training.seed,
        )

    default_threads = torch.get_num_threads()
    trained = None
    runs = [(r, 1, 1, "cpu", "threads") for r in ("backend", "env_step", "inference", "sync") if r not in args.skip]
    if "async" not in args.skip:  # one shard has nothing to pipeline: its row runs once
        runs += [("async" + ("" if k == 1 else f"_k{k}") + ("" if s == 1 else f"_s{s}")
                  + ("" if st == "threads" else "_pipe") + ("" if p == "cpu" else f"_{p}"), k, s, p, st)
                 for k in collector_counts for s in shard_counts for p in policy_devices
                 for st in (steppings if s > 1 else steppings[:1])]
    if args.warmup and any(r[0] == "sync" or r[0].startswith("async") for r in runs):
        first = next(i for i, r in enumerate(runs) if r[0] == "sync" or r[0].startswith("async"))
        runs.insert(first, ("warmup", 1, 1, "cpu", "threads"))
    for key, num_collectors, shards, policy_device, stepping in runs:
        runtime = "async" if key.startswith("async") or key == "backend" else "sync" if key == "warmup" else key
        seed_everything(cfg.training.seed)
        algo_cfg, run_settings = algo_settings(algo_reg, cfg)
        run_settings = dataclasses.replace(run_settings, mode="async" if runtime == "async" else "sync",
                                           num_collectors=num_collectors, collector_shards=shards,
                                           policy_device=policy_device, shard_stepping=stepping)
        threads = thread_split(run_settings.mode, args.nthread, args.collector_threads, args.learner_threads, device,
                               num_collectors)
        if runtime == "async":
            threads |= {"collectors": num_collectors, "collector_shards": shards,
                        "physics_per_collector": args.physics_per_collector
                        or max(1, threads["physics"] // num_collectors)}
        if run_settings.mode == "sync" and args.learner_threads:  # same learner threads in both runtimes
            threads["learner"] = args.learner_threads
        torch.set_num_threads(threads["learner"] or default_threads)
        env = env_fn(threads["physics"])()
        try:
            agent = algo_reg.item.make_agent(env, algo_cfg, device=device, runtime=run_settings,
                                             max_iterations=cfg.training.max_iterations)
            if key == "backend":  # the async split's physics threads, as the training run uses
                env.reset()
                ctrl = env.robot.joint_pos.clone()
                dt = _time(lambda: env.backend.step(ctrl, env.cfg.decimation), args.iterations)
                results["backend"] = {"env_steps_per_s": args.num_envs / dt, "threads": threads}
            elif runtime == "env_step":
                env.reset()
                gen = torch.Generator().manual_seed(0)
                step = lambda: env.step(agent.random_actions(env.num_envs, gen))  # noqa: E731
                dt = _time(step, args.iterations)
                results["env_step"] = {"env_steps_per_s": args.num_envs / dt, "threads": threads}
            elif runtime == "inference":
                obs = env.reset()["actor"]
                cpu_policy = __import__("copy").deepcopy(agent.exploration_policy()).to("cpu")
                live = agent.exploration_policy()
                torch.set_num_threads(args.collector_threads)
                cpu_s = _time(lambda: cpu_policy(obs), 50)
                torch.set_num_threads(threads["learner"] or default_threads)

                def on_device():
                    out = live(obs.to(device, non_blocking=True)).to("cpu")
                    return out

                dev_s = _time(on_device, 50)
                results["inference"] = {
                    "collector_cpu_ms": cpu_s * 1e3, "learner_device_ms": dev_s * 1e3,
                    "collector_threads": args.collector_threads,
                    "faster": "collector_cpu" if cpu_s <= dev_s else "learner_device",
                }
            else:
                if runtime == "sync":
                    runner = OffPolicyRunner(env, agent)
                else:
                    runner = AsyncOffPolicyRunner(env_fn(threads["physics_per_collector"]), agent,
                                                  env_seed=cfg.training.seed)
                if key == "warmup":  # compile the update once; not a measurement
                    summary = runner.learn(algo_cfg.learning_starts + 3)
                    results[key] = {"iterations": summary.iterations, "wall_time_s": summary.wall_time_s,
                                    "learning_time_s": summary.learning_time_s, "threads": threads}
                else:
                    summary = runner.learn(args.iterations)
                    trained = (agent, threads)  # the last training row's learner, for policy_physics
                    steady = summary.wall_time_s - summary.collector_start_time_s
                    results[key] = {
                        "env_steps_per_s": summary.fps,
                        "steady_env_steps_per_s": summary.env_steps / steady if steady > 0 else None,
                        "wall_time_s": summary.wall_time_s,
                        "collector_start_time_s": summary.collector_start_time_s,
                        "collection_time_s": summary.collection_time_s,
                        "learning_time_s": summary.learning_time_s,
                        "learner_wait_time_s": summary.learner_wait_time_s,
                        "collector_wait_time_s": summary.collector_wait_time_s,
                        "utd_ratio": summary.utd_ratio,
                        "transfer": summary.transfer,
                        "collector_phase_time_s": summary.collector_phase_time_s,
                        "policy_device": summary.policy_device or str(device),  # sync: the learner acts
                        "threads": threads,
                        "compile_backend": getattr(agent, "compile_backend", "eager"),
                    }
        finally:
            env.close()
        print(key, json.dumps(results[key], default=str), flush=True)

    if trained is not None and "policy_physics" not in args.skip:
        agent, threads = trained
        env = env_fn(threads["physics"])()
        try:  # the learner's exploration policy acts, on the learner device, nothing else runs
            policy = agent.exploration_policy()
            obs = env.reset()
            env_time = 0.0
            for t in range(2 * args.iterations):
                if t == args.iterations // 2:  # after a warm-up of iterations / 2 steps
                    physics0, env_time = env.physics_time_s, 0.0
                with torch.no_grad():
                    actions = policy(obs["actor"].to(device)).to("cpu")
                t1 = time.perf_counter()
                obs = env.step(actions)[0]
                env_time += time.perf_counter() - t1
            steps = 2 * args.iterations - args.iterations // 2
            results["policy_physics"] = {
                "env_steps_per_s": steps * args.num_envs / (env.physics_time_s - physics0),
                "env_step_env_steps_per_s": steps * args.num_envs / env_time,
                "steps": steps, "threads": threads,
            }
        finally:
            env.close()
        print("policy_physics", json.dumps(results["policy_physics"], default=str), flush=True)

    report(results, [r[0] for r in runs], args.iterations)
    if "inference" in results:
        r = results["inference"]
        print(f"policy inference at {args.num_envs} envs: collector CPU ({r['collector_threads']} thread) "
              f"{r['collector_cpu_ms']:.3f} ms, learner {device} {r['learner_device_ms']:.3f} ms -> {r['faster']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=2, default=str)


def _cfg_value(cfg, key: str, default):
    """``key`` of the resolved config's ``algo`` section (or a ``runtime`` section, where the
    execution settings may live), else ``default``."""
    for section in ("algo", "runtime"):
        value = getattr(getattr(cfg, section, None), key, None)
        if value is not None:
            return value
    return default


def _rates(results: dict) -> dict[str, float]:
    """Row label -> env steps/s (the steady rate for the training rows)."""
    out = {}
    for key, r in results.items():
        if not isinstance(r, dict) or key in ("warmup", "inference"):
            continue
        out[key] = r.get("steady_env_steps_per_s") or r.get("env_steps_per_s")
        if key == "policy_physics":
            out["env_step_training"] = r["env_step_env_steps_per_s"]
    return out


def report(results: dict, order: list[str], iterations: int) -> None:
    """Print the rows, the async rows' collector phase split and the ratios."""
    print()
    print(f"{'':22s} {'env steps/s':>12s} {'steady':>10s} {'physics thr':>11s}  policy on")
    first = ("backend", "env_step", "policy_physics")
    for key in (*first, *(k for k in order if k not in first)):
        if key in results and key not in ("warmup", "inference"):
            r = results[key]
            steady = r.get("steady_env_steps_per_s")
            print(f"{key:22s} {r['env_steps_per_s']:12.1f} {'' if steady is None else f'{steady:10.1f}':>10s} "
                  f"{r['threads']['physics']:11d}  {r.get('policy_device', '')}")
            if key == "policy_physics":
                print(f"{'env_step_training':22s} {r['env_step_env_steps_per_s']:12.1f}")
    for key in (k for k in order if k.startswith("async") and k in results):
        phases = results[key].get("collector_phase_time_s") or {}
        # pipelined shards: the physics runs on the worker beside the thread's other phases
        total = sum(v for p, v in phases.items() if not (p == "physics" and "_pipe" in key))
        if total > 0:
            print(f"{key} collector phases, ms per iteration (share): " + ", ".join(
                f"{p} {1e3 * v / iterations:.2f} "
                + ("(on the worker)" if p == "physics" and "_pipe" in key else f"({v / total:.0%})")
                for p, v in phases.items()))
    rates = _rates(results)
    pairs = [("policy_physics", "backend"), ("env_step_training", "policy_physics"), ("env_step", "backend")]
    pairs += [(k, base) for base in ("policy_physics", "backend") for k in order
              if (k == "sync" or k.startswith("async")) and k in rates]
    # acting served by the learner's process against each collector acting on the learner's device
    pairs += [(k, k[: -len("_server")] + "_learner") for k in order if k.endswith("_server")]
    for num, den in pairs:
        if rates.get(num) and rates.get(den):
            target = " (target >= 0.9)" if den == "policy_physics" and num.startswith("async") else ""
            print(f"{num} / {den} = {rates[num] / rates[den]:.3f}{target}")


def _options_of(script: Path) -> set[str]:
    """The ``--options`` that ``script --help`` lists (another checkout's copy of this benchmark)."""
    import re
    import subprocess
    import sys

    text = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True,
                          check=True).stdout
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", text))


def _mean_rates(runs: list[dict[str, float]]) -> dict[str, float]:
    """Each row's mean rate over the runs that have it (rows a run lacks are left out of its mean)."""
    keys = dict.fromkeys(k for r in runs for k in r)
    return {k: sum(r[k] for r in runs if k in r) / sum(k in r for r in runs) for k in keys}


def _argv_for(argv: list[str], known: set[str], parser: argparse.ArgumentParser) -> tuple[list[str], list[str]]:
    """``argv`` without the options outside ``known`` (each with its value): (kept, dropped)."""
    takes_value = {o for a in parser._actions for o in a.option_strings if a.nargs != 0}
    kept, dropped, i = [], [], 0
    while i < len(argv):
        token = argv[i]
        name = token.split("=", 1)[0]
        n = 2 if name in takes_value and "=" not in token else 1
        (kept if not token.startswith("--") or name in known else dropped).extend(argv[i:i + n])
        i += n
    return kept, dropped


def _cell(rate: float | None) -> str:
    return f"{rate:10.1f}" if rate else f"{'-':>10s}"


def ab(args, parser: argparse.ArgumentParser) -> None:
    """Run this benchmark on the checkout ``args.ab`` (old) and on this one (new), each in a child
    process with that checkout's ``src`` folders first on ``PYTHONPATH``; print both and new/old.

    Each side runs its own checkout's copy of this script (``benchmarks/async_vs_sync.py``), so an
    older checkout is measured with the code it shipped (this copy imports modules it may lack);
    options the older copy does not list in ``--help`` are left out of its run and named. Rows
    only one side has print ``-`` for the other, except a single async row on each side, which
    is one row whatever its name (``async/async_s2``). Its results must be JSON as ``--out`` writes it.
    With ``--ab-rounds N`` both sides run N times, the first of each pair alternating, and each row
    is the mean over the rounds; the per-round ratios are printed too.

    Raises:
        SystemExit: ``args.ab`` has no ``benchmarks/async_vs_sync.py``.
    """
    import os
    import subprocess
    import sys
    import tempfile

    roots = {"old": Path(args.ab).resolve(), "new": Path(__file__).resolve().parents[1]}
    scripts = {label: root / "benchmarks" / "async_vs_sync.py" for label, root in roots.items()}
    if not scripts["old"].is_file():
        raise SystemExit(f"error: --ab {args.ab}: no benchmarks/async_vs_sync.py there; expected a checkout of this repository")
    # each side runs without --ab and with its own --out (each given with its value or as --opt=value)
    own = {o for action in parser._actions for o in action.option_strings}
    argv, _ = _argv_for(sys.argv[1:], own - {"--ab", "--ab-rounds", "--out"}, parser)
    rounds: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
    # Rounds alternate which checkout runs first (old-new, new-old, ...): a host that speeds up or
    # slows down over the call then favours neither side once the rounds are averaged.
    order = [label for i in range(args.ab_rounds) for label in (("old", "new") if i % 2 == 0 else ("new", "old"))]
    with tempfile.TemporaryDirectory() as tmp:
        for i, label in enumerate(order):
            root = roots[label]
            out = Path(tmp) / f"{label}_{i}.json"
            path = os.pathsep.join(str(root / p / "src") for p in ("unilab", "unisim", "unilab_rl", "mjbatch_uni"))
            rest = os.environ.get("PYTHONPATH")  # e.g. where the dependencies were installed
            env = {**os.environ, "PYTHONPATH": path + (os.pathsep + rest if rest else "")}
            run_argv = argv
            if label == "old":
                run_argv, dropped = _argv_for(argv, _options_of(scripts["old"]), parser)
                changed = [o for o in ("--algo", "--task") if any(d == o or d.startswith(o + "=") for d in dropped)
                           and getattr(args, o[2:]) != parser.get_default(o[2:])]
                if changed:  # the old copy would measure another task or algorithm
                    raise SystemExit(f"error: --ab {args.ab}: its copy of the benchmark has no {' or '.join(changed)}; "
                                     f"expected the defaults (--algo sac --task g1_walk_flat) for such a checkout")
                if dropped:
                    print(f"== old: options its copy lacks, left out: {' '.join(dropped)}", flush=True)
            print(f"== {label}: {root} (round {i // 2 + 1} of {args.ab_rounds})", flush=True)
            subprocess.run([sys.executable, str(scripts[label]), *run_argv, "--out", str(out)], check=True, env=env)
            rounds[label].append(_rates(json.loads(out.read_text())))
    rates = {label: _mean_rates(runs) for label, runs in rounds.items()}
    if args.ab_rounds > 1:
        for i, (o, n) in enumerate(zip(rounds["old"], rounds["new"])):
            ratios = ", ".join(f"{k} {n[k] / o[k]:.3f}" for k in o if k in n and o[k])
            print(f"round {i + 1} ({'old first' if i % 2 == 0 else 'new first'}) new/old: {ratios}")
    # One async row on each side under different names (e.g. the newer default has more shards,
    # so its row is async_s2): they are the same training, compared as one row.
    asyncs = {label: [k for k in r if k.startswith("async")] for label, r in rates.items()}
    if all(len(v) == 1 for v in asyncs.values()) and asyncs["old"] != asyncs["new"]:
        name = f"{asyncs['old'][0]}/{asyncs['new'][0]}"
        for label, r in rates.items():
            r[name] = r.pop(asyncs[label][0])
    print(f"\n{'env steps/s':24s} {'old':>10s} {'new':>10s} {'new/old':>8s}")
    for key in dict.fromkeys([*rates["old"], *rates["new"]]):
        o, n = rates["old"].get(key), rates["new"].get(key)
        ratio = f"{n / o:8.3f}" if o and n else f"{'-':>8s}"
        print(f"{key:24s} {_cell(o)} {_cell(n)} {ratio}")

if __name__ == "__main__":
    main()
