"""Cost of the evaluation during training (``training.eval_interval``): the same training run with
and without it, side by side.

One command, from the repository root (packages installed):

    python benchmarks/eval_overhead.py --algo sac --task g1_walk_flat --iterations 1500 --eval-interval 250
    python benchmarks/eval_overhead.py --algo sac --task g1_walk_flat --preset laptop --iterations 60 \\
        --eval-interval 20 --repeats 2 training.num_envs=32

Each repeat trains twice (``training.eval_interval=0``, then the given interval; the order
alternates between repeats so a drift of the machine's load does not favour one), with
``training.no_play=true`` and the remaining arguments as overrides, and reads each run's
``run_summary.json``: ``learn_wall_time_s`` (the training loop, which the final policy's
evaluation at the end does not enter), ``env_steps_per_s``, and for the evaluated run its
``eval_during_training`` (evaluations, skipped snapshots, seconds the worker was busy). It prints
one line per run and the overhead: the mean learn wall time with evaluation over the mean
without, minus 1 (the project's bar: at most 3 % on the GPU machine), and the same for env
steps/s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def train_once(args, interval: int, log_dir: Path) -> dict:
    """One ``unilab train`` run; its summary plus the process's wall time."""
    unilab = str(Path(sys.executable).parent / "unilab")
    cmd = [unilab, "train", "--algo", args.algo, "--task", args.task, "--sim", args.sim,
           *(["--preset", args.preset] if args.preset else []),
           f"training.max_iterations={args.iterations}", f"training.eval_interval={interval}",
           "training.no_play=true", "training.progress=false", f"training.log_dir={log_dir}", *args.overrides]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"training failed ({out.returncode}): {out.stderr.strip().splitlines()[-1:]}")
    (summary_path,) = sorted(log_dir.glob("*/*/*/run_summary.json"))
    summary = json.loads(summary_path.read_text())
    summary["process_wall_s"] = wall
    return summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--algo", default="sac")
    p.add_argument("--task", default="g1_walk_flat")
    p.add_argument("--sim", default="mujoco")
    p.add_argument("--preset", default=None)
    p.add_argument("--iterations", type=int, default=1500)
    p.add_argument("--eval-interval", type=int, default=250)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--json", type=Path, default=None, help="write every run's figures here")
    p.add_argument("overrides", nargs="*", default=[], help="key=value overrides for both runs")
    args = p.parse_args(argv)

    runs: dict[int, list[dict]] = {0: [], args.eval_interval: []}
    for r in range(args.repeats):
        order = (0, args.eval_interval) if r % 2 == 0 else (args.eval_interval, 0)
        for interval in order:
            with tempfile.TemporaryDirectory(prefix="unilab-eval-overhead-") as tmp:
                s = train_once(args, interval, Path(tmp))
            e = s.get("eval_during_training") or {}
            runs[interval].append({
                "interval": interval, "learn_wall_time_s": s["learn_wall_time_s"],
                "env_steps_per_s": s["env_steps_per_s"], "process_wall_s": round(s["process_wall_s"], 1),
                "evals": e.get("evals"), "skipped": e.get("skipped"), "busy_s": e.get("busy_s"),
                "eval_error": e.get("error"),
            })
            row = runs[interval][-1]
            print(f"repeat {r} eval_interval {interval:>5}: learn {row['learn_wall_time_s']:8.1f} s, "
                  f"{row['env_steps_per_s']:9.1f} env steps/s, process {row['process_wall_s']:7.1f} s"
                  + (f", {row['evals']} evaluations ({row['skipped']} skipped, worker busy {row['busy_s']} s)"
                     if interval else ""), flush=True)
    base, with_eval = runs[0], runs[args.eval_interval]
    wall = statistics.mean(r["learn_wall_time_s"] for r in with_eval) / statistics.mean(
        r["learn_wall_time_s"] for r in base) - 1.0
    fps = statistics.mean(r["env_steps_per_s"] for r in with_eval) / statistics.mean(
        r["env_steps_per_s"] for r in base) - 1.0
    print(f"overhead of training.eval_interval={args.eval_interval}: learn wall time {100 * wall:+.1f} %, "
          f"env steps/s {100 * fps:+.1f} % (mean of {args.repeats} run(s) each)")
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)}, "runs": runs,
                                         "wall_overhead": wall, "fps_change": fps}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
