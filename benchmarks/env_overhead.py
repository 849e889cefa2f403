"""Env step overhead: what ``ManagerBasedRlEnv.step`` costs on top of the physics (issue 4).

One command, from the repository root (packages installed):

    python benchmarks/env_overhead.py --num-envs 256,1024,4096 --steps 100 --repeats 3
    python benchmarks/env_overhead.py --num-envs 1024 --profile          # + top costs

g1_walk_flat (the owner's task defaults) on ``MujocoBackend`` with ``--nthread`` physics threads
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
(the default); ``standing``, all zero, i.e. the default pose's joint targets, so robots stand and
only pushes and time-outs interrupt them, as with a trained policy. A warm-up of
``--warmup`` steps runs first; each repeat is ``--steps`` steps; medians over repeats are printed.

``--profile`` times the phases of ``env.step`` (CPU time per phase, one block) and runs cProfile over one extra block of steps at the first num_envs and prints the top
functions by own time (tottime) and by cumulative time, and the torch profiler's top ops.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time

import torch


def build(num_envs: int, nthread: int, seed: int):
    from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
    from unisim.backends.mujoco import MujocoBackend

    return make_env(G1WalkFlatConfig(), backend_cls=MujocoBackend, num_envs=num_envs,
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
            targets[f"command.update[{name}]"] = (command, "update")
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


def sections(env, timer, steps: int, gen: torch.Generator, actions: str = "uniform") -> None:
    st = SectionTimer(env)
    run_block(env, timer, steps, gen, actions)
    print(f"\n--- phases of env.step, CPU (thread) ms per env step, {steps} steps ---")
    for key in st.cpu:
        print(f"{key:>40}: {1e3 * st.cpu[key] / steps:7.3f} ms  ({st.calls[key] / steps:.2f} calls/step)")


def run_block(env, timer: PhysicsTimer, steps: int, gen: torch.Generator,
              actions: str = "uniform") -> dict[str, float]:
    """One timed block of ``steps`` env steps; ``actions``: ``"uniform"`` or ``"standing"`` (--actions)."""
    lo, hi = env.action_low, env.action_high
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


def profile(env, timer, steps: int, gen: torch.Generator, top: int, actions: str = "uniform") -> None:
    prof = cProfile.Profile()
    prof.enable()
    run_block(env, timer, steps, gen, actions)
    prof.disable()
    for key in ("tottime", "cumulative"):
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats(key).print_stats(top)
        print(f"\n--- cProfile, {steps} steps, by {key} ---")
        print("\n".join(line for line in s.getvalue().splitlines() if line.strip())[:8000])
    from torch.profiler import ProfilerActivity, profile as tprofile

    with tprofile(activities=[ProfilerActivity.CPU]) as p:
        run_block(env, timer, steps, gen, actions)
    print(f"\n--- torch profiler, {steps} steps, by self CPU time ---")
    print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=top))


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
    args = ap.parse_args()
    torch.set_num_threads(args.torch_threads)

    rows = []
    sizes = [int(x) for x in args.num_envs.split(",")]
    for i, n in enumerate(sizes):
        env = build(n, args.nthread, args.seed)
        timer = PhysicsTimer(env.backend)
        gen = torch.Generator().manual_seed(args.seed + 1)
        env.reset()
        run_block(env, timer, args.warmup, gen, args.actions)
        blocks = [run_block(env, timer, args.steps, gen, args.actions) for _ in range(args.repeats)]
        med = {k: statistics.median(b[k] for b in blocks) for k in blocks[0]}
        rows.append((n, med, blocks))
        print(f"num_envs={n}: " + ", ".join(f"{k}={v:.3f}" for k, v in med.items()), flush=True)
        if args.profile and i == 0:
            sections(env, timer, args.profile_steps, gen, args.actions)
            profile(env, timer, args.profile_steps, gen, args.top, args.actions)
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
