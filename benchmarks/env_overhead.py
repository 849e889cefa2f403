"""Env step overhead: what ``ManagerBasedRlEnv.step`` costs on top of the physics.

One command, from the repository root (packages installed):

    python benchmarks/env_overhead.py --num-envs 256,1024,4096 --steps 100 --repeats 3
    python benchmarks/env_overhead.py --num-envs 1024 --profile          # + top costs
    python benchmarks/env_overhead.py --task g1_motion_tracking --action-scale 0.3 --num-envs 512,1024

``--task``: g1_walk_flat (the shipped recipe, ``SHIPPED``; the default) or g1_motion_tracking
(its registered config, built as ``unilab train`` builds it) on ``MujocoBackend`` with ``--nthread`` physics threads
(default 1) and ``torch.set_num_threads(--torch-threads)`` (default 1). Per env step it measures

* ``total``: the whole ``env.step(actions)``;
* ``physics``: ``MujocoBackend.step`` alone, timed inside the same env steps (the backend's
  ``step`` is wrapped; the physics of resets, ``backend.reset``/``set_state`` (mj_forward of the
  reset or pushed rows), counts as overhead);
* ``overhead`` = total - physics: the env's Python/torch work between physics steps.

Each is reported as wall time (``time.perf_counter``) and as CPU time of the process
(``time.process_time``; with 1 physics thread and 1 torch thread that is one core's work, and it
is robust to other load on a shared machine). Actions (``--actions``): ``uniform`` in the env's
action box, drawn from a separate seeded generator, so robots fall and reset as in early training
(the default; ``--action-scale s`` shrinks the box to ``s * [low, high]``, e.g. 0.3 for the
tracking task, whose robots then move and sometimes reset); ``standing``, all zero, i.e. the default pose's joint targets, so robots stand and
only pushes and time-outs interrupt them, as with a trained policy. A warm-up of
``--warmup`` steps runs first; each repeat is ``--steps`` steps; medians over repeats are printed.

``--profile`` times the phases of ``env.step`` (CPU time per phase, one block) and runs cProfile over one extra block of steps at the first num_envs and prints the top
functions by own time (tottime) and by cumulative time, and the torch profiler's top ops.

Old against new, side by side in one run (``--ab ROOT``): ROOT is another checkout of the
repository (e.g. ``git worktree add /tmp/old907 907c15a``). Each repeat runs this script once
per checkout in a child process whose ``PYTHONPATH`` puts that checkout's four ``src`` folders
first, alternating which goes first, and the medians and the old/new ratios are printed:

    python benchmarks/env_overhead.py --ab /tmp/old907 --num-envs 512,1024 --steps 40 --repeats 5

Equivalence of two checkouts on a seeded rollout: ``--rollout-save FILE`` writes every
observation, reward, termination flag and ``final_obs`` of ``--rollout-steps`` steps (uniform
actions, then standing: resets, pushes and command resamples all happen) at the first num_envs;
``--rollout-compare FILE``, run from the other checkout, prints the largest difference per
tensor and whether all are bit-identical.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch


# The shipped g1_walk_flat recipe, spelled out so that an older checkout (whose code defaults
# kept these off and whose owner YAML turned them on) builds the same env.
SHIPPED = {
    "rewards": {"alive": 1.0, "feet_phase": 5.0, "orientation_l2": -10.0, "pose_l2": -0.5},
    "gait": {"enabled": True}, "penalty_curriculum": {"enabled": True},
}  # fmt: skip


TASKS = ("g1_walk_flat", "g1_motion_tracking")


def build(num_envs: int, nthread: int, seed: int, task: str = "g1_walk_flat"):
    if task == "g1_motion_tracking":
        from unilab.build import prepare

        _, task_reg, backend_reg, cfg = prepare("sac", task, "mujoco", [f"training.num_envs={num_envs}"], None)
        return task_reg.item.make_env(cfg.env, backend_cls=backend_reg.item, num_envs=num_envs, nthread=nthread,
                                      cpu_ids=cfg.sim.cpu_ids, robot=cfg.robot, seed=seed)
    from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
    from unisim.backends.mujoco import MujocoBackend

    return make_env(G1WalkFlatConfig(**SHIPPED), backend_cls=MujocoBackend, num_envs=num_envs,
                    nthread=nthread, seed=seed)


class PhysicsTimer:
    """Wraps ``backend.step`` and accumulates its wall and CPU time."""

    def __init__(self, backend) -> None:
        self.inner = backend.step
        self.wall = 0.0
        self.cpu = 0.0
        backend.step = self

    def __call__(self, *args, **kwargs):
        w, c = time.perf_counter(), time.process_time()
        self.inner(*args, **kwargs)
        self.cpu += time.process_time() - c
        self.wall += time.perf_counter() - w

    def reset(self) -> None:
        self.wall = self.cpu = 0.0


SECTIONS = (
    "action_manager.process", "robot.refresh", "contact.update", "command.update",
    "termination_manager.compute", "reward_manager.compute", "observation_manager.compute",
    "_reset_rows", "backend.reset", "backend.set_state", "event_manager.step",
)


class SectionTimer:
    """Wraps the env's step phases (instance attributes) and accumulates their CPU time; nested
    phases (robot.refresh and backend.reset inside _reset_rows) are counted in both."""

    def __init__(self, env) -> None:
        self.cpu: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        targets = {
            "action_manager.process": (env.action_manager, "process"),
            "robot.refresh": (env.robot, "refresh"),
            "termination_manager.compute": (env.termination_manager, "compute"),
            "reward_manager.compute": (env.reward_manager, "compute"),
            "observation_manager.compute": (env.observation_manager, "compute"),
            "_reset_rows": (env, "_reset_rows"),
            "backend.reset": (env.backend, "reset"),
            "backend.set_state": (env.backend, "set_state"),
            "event_manager.step": (env.event_manager, "step"),
        }
        for sensor in env.contact_sensors.values():
            targets[f"contact.update[{sensor.name}]"] = (sensor, "update")
        for name, command in env.commands.items():
            for hook in ("advance", "update"):  # clocks advance after physics, targets update later
                if hasattr(command, hook):
                    targets[f"command.{hook}[{name}]"] = (command, hook)
        for key, (obj, attr) in targets.items():
            setattr(obj, attr, self._wrap(key, getattr(obj, attr)))

    def _wrap(self, key, fn):
        self.cpu[key], self.calls[key] = 0.0, 0

        def timed(*args, **kwargs):
            c = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.cpu[key] += time.thread_time() - c
                self.calls[key] += 1

        return timed


def sections(env, timer, steps: int, gen: torch.Generator, actions: str = "uniform", scale: float = 1.0) -> None:
    st = SectionTimer(env)
    run_block(env, timer, steps, gen, actions, scale)
    print(f"\n--- phases of env.step, CPU (thread) ms per env step, {steps} steps ---")
    for key in st.cpu:
        print(f"{key:>40}: {1e3 * st.cpu[key] / steps:7.3f} ms  ({st.calls[key] / steps:.2f} calls/step)")


def run_block(env, timer: PhysicsTimer, steps: int, gen: torch.Generator,
              actions: str = "uniform", scale: float = 1.0) -> dict[str, float]:
    """One timed block of ``steps`` env steps; ``actions``: ``"uniform"`` in ``scale`` times the
    action box, or ``"standing"`` (--actions, --action-scale)."""
    lo, hi = scale * env.action_low, scale * env.action_high
    if actions == "standing":  # the default pose's joint targets: robots stand (trained-policy regime)
        batches = [torch.zeros(env.num_envs, env.num_actions) for _ in range(steps)]
    else:
        batches = [lo + (hi - lo) * torch.rand(env.num_envs, env.num_actions, generator=gen)
                   for _ in range(steps)]
    timer.reset()
    resets = 0
    w, c = time.perf_counter(), time.process_time()
    for a in batches:
        _, _, term, trunc, _ = env.step(a)
        resets += int((term | trunc).sum())
    cpu = time.process_time() - c
    wall = time.perf_counter() - w
    ms = 1e3 / steps
    return {
        "total_wall": wall * ms, "total_cpu": cpu * ms,
        "physics_wall": timer.wall * ms, "physics_cpu": timer.cpu * ms,
        "overhead_wall": (wall - timer.wall) * ms, "overhead_cpu": (cpu - timer.cpu) * ms,
        "resets_per_step": resets / steps,
    }


def profile(env, timer, steps: int, gen: torch.Generator, top: int, actions: str = "uniform",
            scale: float = 1.0) -> None:
    prof = cProfile.Profile()
    prof.enable()
    run_block(env, timer, steps, gen, actions, scale)
    prof.disable()
    for key in ("tottime", "cumulative"):
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats(key).print_stats(top)
        print(f"\n--- cProfile, {steps} steps, by {key} ---")
        print("\n".join(line for line in s.getvalue().splitlines() if line.strip())[:8000])
    from torch.profiler import ProfilerActivity, profile as tprofile

    with tprofile(activities=[ProfilerActivity.CPU]) as p:
        run_block(env, timer, steps, gen, actions, scale)
    print(f"\n--- torch profiler, {steps} steps, by self CPU time ---")
    print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=top))


def rollout(n: int, nthread: int, seed: int, steps: int, task: str = "g1_walk_flat",
            scale: float = 1.0) -> dict[str, torch.Tensor]:
    """Every output of ``steps`` env steps from a seeded start: uniform actions in ``scale``
    times the action box for the first half (falls and resets), zero actions after (standing,
    pushes, command resamples); with each reward term's weighted value."""
    env = build(n, nthread, seed, task)
    try:
        gen = torch.Generator().manual_seed(seed + 1)
        out: dict[str, list[torch.Tensor]] = {}

        def keep(key, value):
            out.setdefault(key, []).append(value.detach().clone().float())

        obs = env.reset()
        for g, v in obs.items():
            keep(f"reset/{g}", v)
        lo, hi = scale * env.action_low, scale * env.action_high
        for t in range(steps):
            if t < steps // 2:
                a = lo + (hi - lo) * torch.rand(n, env.num_actions, generator=gen)
            else:
                a = torch.zeros(n, env.num_actions)
            obs, reward, terminated, truncated, extras = env.step(a)
            for g, v in obs.items():
                keep(f"obs/{g}", v)
                keep(f"final_obs/{g}", extras["final_obs"][g])
            keep("reward", reward)
            keep("reward_terms", env.reward_manager.last)
            keep("terminated", terminated)
            keep("truncated", truncated)
            keep("log", torch.tensor([v for _, v in sorted(extras["log"].items())], dtype=torch.float64))
        return {k: torch.stack(v) if k != "log" else torch.cat(v) for k, v in out.items()}
    finally:
        env.close()


def compare_rollouts(ref: dict[str, torch.Tensor], new: dict[str, torch.Tensor]) -> bool:
    """Print the largest absolute difference per tensor; True when all are bit-identical."""
    same = True
    for key in sorted(set(ref) | set(new)):
        if key not in ref or key not in new or ref[key].shape != new[key].shape:
            print(f"{key:>24}: differs in presence or shape", flush=True)
            same = False
            continue
        a, b = ref[key].double(), new[key].double()
        equal = torch.equal(ref[key], new[key])
        diff = (a - b).abs().nan_to_num(nan=float("inf")).max().item() if a.numel() else 0.0
        same &= equal
        print(f"{key:>24}: {'identical' if equal else f'max |diff| {diff:.3g}'}  {tuple(a.shape)}")
    print("rollouts bit-identical" if same else "rollouts differ")
    return same


def _src_path(root: Path) -> str:
    return os.pathsep.join(str(root / pkg / "src") for pkg in ("unilab", "unisim", "unilab_rl", "mjbatch_uni"))


def ab(args) -> None:
    """Run this script alternately on ``args.ab`` (old) and on this checkout (new)."""
    old, new = Path(args.ab).resolve(), Path(__file__).resolve().parents[1]
    child = [sys.executable, __file__, "--num-envs", args.num_envs, "--steps", str(args.steps),
             "--warmup", str(args.warmup), "--repeats", "1", "--nthread", str(args.nthread),
             "--torch-threads", str(args.torch_threads), "--seed", str(args.seed), "--actions", args.actions,
             "--task", args.task, "--action-scale", str(args.action_scale)]
    results: dict[str, list[dict]] = {"old": [], "new": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            order = (("old", old), ("new", new)) if r % 2 == 0 else (("new", new), ("old", old))
            for label, root in order:
                out = Path(tmp) / f"{label}{r}.json"
                rest = os.environ.get("PYTHONPATH")  # e.g. where the dependencies were installed
                env = {**os.environ, "PYTHONPATH": _src_path(root) + (os.pathsep + rest if rest else "")}
                subprocess.run([*child, "--json", str(out)], env=env, check=True, stdout=subprocess.DEVNULL)
                rows = [json.loads(line) for line in out.read_text().splitlines()]
                results[label] += rows
                print(f"repeat {r} {label}: " + ", ".join(
                    f"n={x['num_envs']} ovh_cpu={x['overhead_cpu']:.2f} resets={x['resets_per_step']:.1f}"
                    for x in rows), flush=True)
    print(f"\nold = {old}, new = {new}; ms per env step, median of {args.repeats} runs x {args.steps} steps, "
          f"task {args.task}, actions {args.actions} x {args.action_scale:g}, physics threads {args.nthread}, torch threads {args.torch_threads}")
    print(f"{'num_envs':>8} | {'old ovh cpu':>11} {'new ovh cpu':>11} {'old/new':>7} | "
          f"{'old total cpu':>13} {'new total cpu':>13} | {'old phys cpu':>12} {'new phys cpu':>12}")
    for n in (int(x) for x in args.num_envs.split(",")):
        med = {lab: {k: statistics.median(x[k] for x in results[lab] if x["num_envs"] == n)
                     for k in ("overhead_cpu", "total_cpu", "physics_cpu")} for lab in results}
        o, w = med["old"], med["new"]
        print(f"{n:>8} | {o['overhead_cpu']:>11.2f} {w['overhead_cpu']:>11.2f} "
              f"{o['overhead_cpu'] / w['overhead_cpu']:>7.2f} | {o['total_cpu']:>13.2f} {w['total_cpu']:>13.2f} | "
              f"{o['physics_cpu']:>12.2f} {w['physics_cpu']:>12.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--num-envs", default="256,1024,4096")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--nthread", type=int, default=1, help="physics threads")
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--profile-steps", type=int, default=50)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--actions", choices=("uniform", "standing"), default="uniform",
                    help="uniform in the action box (robots fall, many resets) or zero (robots stand)")
    ap.add_argument("--task", choices=TASKS, default="g1_walk_flat")
    ap.add_argument("--action-scale", type=float, default=1.0,
                    help="uniform actions in this fraction of the action box (e.g. 0.3 for tracking)")
    ap.add_argument("--json", default=None, help="append one JSON line per num_envs to this file")
    ap.add_argument("--ab", default=None, metavar="ROOT",
                    help="another checkout: run old (ROOT) and new (this one) alternately, print ratios")
    ap.add_argument("--rollout-save", default=None, metavar="FILE")
    ap.add_argument("--rollout-compare", default=None, metavar="FILE")
    ap.add_argument("--rollout-steps", type=int, default=200)
    args = ap.parse_args()
    torch.set_num_threads(args.torch_threads)
    if args.ab:
        ab(args)
        return
    if args.rollout_save or args.rollout_compare:
        n = int(args.num_envs.split(",")[0])
        data = rollout(n, args.nthread, args.seed, args.rollout_steps, args.task, args.action_scale)
        if args.rollout_save:
            torch.save(data, args.rollout_save)
            print(f"saved {len(data)} tensors of a {args.rollout_steps}-step rollout at {n} envs to {args.rollout_save}")
        if args.rollout_compare:
            sys.exit(0 if compare_rollouts(torch.load(args.rollout_compare), data) else 1)
        return

    rows = []
    sizes = [int(x) for x in args.num_envs.split(",")]
    for i, n in enumerate(sizes):
        env = build(n, args.nthread, args.seed, args.task)
        timer = PhysicsTimer(env.backend)
        gen = torch.Generator().manual_seed(args.seed + 1)
        env.reset()
        run_block(env, timer, args.warmup, gen, args.actions, args.action_scale)
        blocks = [run_block(env, timer, args.steps, gen, args.actions, args.action_scale)
                  for _ in range(args.repeats)]
        med = {k: statistics.median(b[k] for b in blocks) for k in blocks[0]}
        rows.append((n, med, blocks))
        print(f"num_envs={n}: " + ", ".join(f"{k}={v:.3f}" for k, v in med.items()), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps({"num_envs": n, **med}) + "\n")
        if args.profile and i == 0:
            sections(env, timer, args.profile_steps, gen, args.actions, args.action_scale)
            profile(env, timer, args.profile_steps, gen, args.top, args.actions, args.action_scale)
        env.close()

    print(f"\nms per env step, median of {args.repeats} x {args.steps} steps "
          f"(physics threads {args.nthread}, torch threads {args.torch_threads})")
    print(f"{'num_envs':>8} | {'total cpu':>9} {'phys cpu':>9} {'ovh cpu':>8} | "
          f"{'total wall':>10} {'phys wall':>9} {'ovh wall':>8} | {'resets/step':>11}")
    for n, m, _ in rows:
        print(f"{n:>8} | {m['total_cpu']:>9.2f} {m['physics_cpu']:>9.2f} {m['overhead_cpu']:>8.2f} | "
              f"{m['total_wall']:>10.2f} {m['physics_wall']:>9.2f} {m['overhead_wall']:>8.2f} | "
              f"{m['resets_per_step']:>11.1f}")
    print("overhead cpu per repeat: " + "; ".join(
        f"{n}: " + ", ".join(f"{b['overhead_cpu']:.2f}" for b in bl) for n, _, bl in rows))


if __name__ == "__main__":
    main()
