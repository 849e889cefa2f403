"""How much of an env's own per-step code ``torch.compile`` could remove on the CPU.

Times, on one torch thread and one physics thread, after ``--warmup`` steps with uniform actions
in ``--action-scale`` x the action box (robots move, some rows reset):

1. each manager's ``compute()`` alone, eager and through ``torch.compile(dynamic=False)``
   (rewards, terminations, observations; ``step_cache`` cleared before each call, so every call
   recomputes the values terms share), with the first compile's wall time and the largest
   difference from the eager output (observations draw their noise from the env's generator, which
   compiled code advances differently, so their difference is the noise's, not the math's);
2. the env's own code per ``env.step`` (physics excluded, from ``env.physics_time_s``) with the
   reward manager eager and compiled, two envs built alike, in ``--repeats`` interleaved blocks of
   ``--steps`` steps (the order alternates each block).

Nothing here changes the env: the compiled reward manager exists only in this script. Example::

    python benchmarks/compile_terms.py --task g1_motion_tracking --num-envs 256

Prints one line per manager and the A/B's medians; exits 1 if a compile fails.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from env_overhead import TASKS, build  # noqa: E402


def median_ms(fn, calls: int, repeats: int = 5) -> float:
    """Median over ``repeats`` of the mean wall ms per call of ``fn`` over ``calls`` calls."""
    for _ in range(10):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - t) / calls * 1e3)
    return statistics.median(times)


def max_abs_diff(a, b) -> float:
    """Largest |a - b| over a tensor, a tuple of tensors or a dict of tensors."""
    if isinstance(a, dict):
        return max(max_abs_diff(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return max(max_abs_diff(x, y) for x, y in zip(a, b))
    return float((a.float() - b.float()).abs().max())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", choices=TASKS, default="g1_motion_tracking")
    p.add_argument("--num-envs", type=int, default=256)
    p.add_argument("--action-scale", type=float, default=0.3)
    p.add_argument("--warmup", type=int, default=20, help="env steps before timing")
    p.add_argument("--calls", type=int, default=200, help="compute() calls per timing")
    p.add_argument("--steps", type=int, default=30, help="env steps per A/B block")
    p.add_argument("--repeats", type=int, default=6, help="A/B blocks per side")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    torch.set_num_threads(1)

    env = build(args.num_envs, 1, args.seed, args.task)
    num_actions = env.num_actions

    def actions(n: int, generator: torch.Generator) -> list[torch.Tensor]:
        """``n`` uniform actions (num_envs, num_actions) in ``--action-scale`` x the box."""
        return [(torch.rand((args.num_envs, num_actions), generator=generator) * 2 - 1) * args.action_scale
                for _ in range(n)]

    env.reset()
    for a in actions(args.warmup, torch.Generator().manual_seed(args.seed)):
        env.step(a)

    def call(manager):
        def fn():
            env.step_cache.clear()
            return manager.compute()
        return fn

    failed = False
    print(f"{args.task}, {args.num_envs} envs, 1 torch thread: compute() per call")
    for name, manager in (("rewards", env.reward_manager), ("terminations", env.termination_manager),
                          ("observations", env.observation_manager)):
        fn = call(manager)
        eager = median_ms(fn, args.calls)
        reference = fn()
        t0 = time.perf_counter()
        compiled = torch.compile(fn, dynamic=False)
        try:
            out = compiled()
        except Exception as error:  # report and go on: the other managers still tell something
            print(f"  {name}: eager {eager:.3f} ms; compile failed: {type(error).__name__}: {error}"[:400])
            failed = True
            continue
        first = time.perf_counter() - t0
        fast = median_ms(compiled, args.calls)
        print(f"  {name}: eager {eager:.3f} ms, compiled {fast:.3f} ms ({eager / fast:.2f} x), "
              f"first compile {first:.1f} s, max |eager - compiled| {max_abs_diff(reference, out):.2e}")
    env.close()

    # A/B: the env's own code per step with the reward manager eager and compiled.
    sides = {}
    for side in ("eager", "compiled"):
        e = build(args.num_envs, 1, args.seed, args.task)
        e.reset()
        if side == "compiled":
            e.reward_manager.compute = torch.compile(e.reward_manager.compute, dynamic=False)
        sides[side] = e
    script = actions(args.warmup + args.steps * args.repeats, torch.Generator().manual_seed(args.seed + 1))
    for e in sides.values():
        for a in script[:args.warmup]:
            e.step(a)
    own = {side: [] for side in sides}
    at = args.warmup
    for block in range(args.repeats):
        for side in (("eager", "compiled") if block % 2 == 0 else ("compiled", "eager")):
            e = sides[side]
            physics0, t = e.physics_time_s, time.perf_counter()
            for a in script[at:at + args.steps]:
                e.step(a)
            own[side].append((time.perf_counter() - t - (e.physics_time_s - physics0)) / args.steps * 1e3)
        at += args.steps
    for e in sides.values():
        e.close()
    eager, fast = statistics.median(own["eager"]), statistics.median(own["compiled"])
    faster = sum(c < x for x, c in zip(own["eager"], own["compiled"]))
    print(f"env code per step (physics excluded), median of {args.repeats} blocks of {args.steps}: "
          f"eager rewards {eager:.3f} ms, compiled rewards {fast:.3f} ms: {eager / fast:.3f} x "
          f"({faster} of {args.repeats} blocks faster)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
