"""CPU time per call of the env's per-step phases, on a fixed state: the observation manager's
full compute and its compute of 10 reset rows, the reward and the termination managers' compute,
and the reset of 6 rows with their fresh observations (``reset6``: what ``step`` does for the
rows that end, physics of the reset included).

One command per checkout, from its repository root (alternate the checkouts for an A/B):

    PYTHONPATH=unilab/src:unilab_rl/src:unisim/src:mjbatch_uni/src python benchmarks/env_phase_calls.py

It builds ``--task`` (as ``env_overhead.py`` builds it) at each of ``--num-envs``, takes 10 standing
steps, then calls each phase 30 times to warm up and 300 times timed (``time.thread_time``, torch
threads 1) and prints one JSON line: ``"<num_envs>/<phase>"`` -> median µs per call. Repeated
calls see the same state, so this times a phase's own ops without the between-run spread of a
whole env step (resets, physics), which is larger than a cut of a few hundred µs. ``reset6``
resets the same 6 rows on every call (each call draws new starts from the env's generator, so
two checkouts that draw alike reset to the same states), and runs last.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import env_overhead  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--num-envs", default="512,1024")
    ap.add_argument("--task", default="g1_motion_tracking", choices=env_overhead.TASKS)
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    torch.set_num_threads(1)
    out = {}
    for n in (int(x) for x in args.num_envs.split(",")):
        env = env_overhead.build(n, 1, 0, args.task)
        env.reset()
        standing = torch.zeros(n, env.num_actions)
        for _ in range(10):
            env.step(standing)
        rows = torch.arange(0, n, max(1, n // 10))[:10]
        rows6 = torch.arange(0, n, max(1, n // 6))[:6]
        om = env.observation_manager
        phases = {"obs_full": om.compute, "obs_rows10": lambda: om.compute(rows),
                  "reward": env.reward_manager.compute, "termination": env.termination_manager.compute,
                  "reset6": lambda: (env._reset_rows(rows6), om.compute(rows6))}
        for name, call in phases.items():
            for _ in range(30):
                call()
            times = []
            for _ in range(args.calls):
                c = time.thread_time()
                call()
                times.append(time.thread_time() - c)
            out[f"{n}/{name}"] = round(1e6 * sorted(times)[len(times) // 2], 1)
        env.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
