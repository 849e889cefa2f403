"""When a training run's iterations happened: its start-up stall and its steady rate.

A whole run's ``env_steps_per_s`` (``run_summary.json``) mixes three things: the collectors'
start-up, the learner's first ``torch.compile`` (tens of seconds when the inductor cache is cold,
a few when an earlier run on the machine filled it) and the steady rate. Comparing two runs'
whole-run rates therefore compares their start-ups too. This script reads each run's TensorBoard
events (iteration and wall time of every logged point) and prints, per run:

* ``first_log_s``: seconds from the event writer's opening (the start of training) to the first
  logged iteration: start-up, warm-up iterations and the first compile;
* ``steady_its_per_s`` and ``steady_env_steps_per_s``: iterations (and env steps:
  ``num_envs`` per iteration) per second between the first logged iteration at or after
  ``--from-iteration`` and the last logged one;
* the last logged iteration and its time, and the run summary's whole-run ``env_steps_per_s``
  and ``first_update_time_s`` (the first update's own time: the compile; runs written before
  that field print ``-``).

From the repository root, each run given as ``LABEL=RUN_DIR`` (a run directory, or a folder with
its events and ``run_config.json``, as ``benchmarks/device_seeds.sh`` brings back):

    python benchmarks/run_timeline.py Q0=runs/Q0 Q1=runs/Q1 --from-iteration 1000

Exit 2 with one ``error:`` line for a run without events, without ``num_envs`` (in
``run_summary.json``, else ``run_config.json``'s ``training.num_envs``), or without a logged iteration at or after ``--from-iteration``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NoReturn

from unilab.plots import _load, _num_envs


def _fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _json(path: Path) -> dict:
    """The JSON object in ``path``; {} when the file is missing or not a JSON object."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def timeline(run: Path, from_iteration: int) -> dict[str, float | int | None]:
    """One run's start-up stall and steady rate (the module docstring's fields).

    Args:
        run: a run directory (TensorBoard events, ``run_config.json``, optionally ``run_summary.json``).
        from_iteration: first iteration of the steady window.

    Raises:
        SystemExit: exit code 2 after one ``error:`` line when the run has no events, no
            ``num_envs`` (``run_summary.json``, else ``run_config.json``'s ``training.num_envs``) or no
            logged iteration at or after ``from_iteration`` (before its last one).
    """
    scalars, opened = _load(run) if run.is_dir() else ({}, None)
    if not scalars or opened is None:
        _fail(f"{run}: no TensorBoard events; expected a run directory")
    summary = _json(run / "run_summary.json")
    num_envs = _num_envs(run)
    if num_envs is None or num_envs < 1:
        _fail(f"{run}: no num_envs in run_summary.json nor config.training.num_envs in run_config.json")
    # the tag logged most often sets the time grid (every logged iteration carries it)
    points = max(scalars.values(), key=len)
    first, last = points[0], points[-1]
    window = [p for p in points if p[0] >= from_iteration]
    if len(window) < 2 or window[0][0] >= last[0]:
        _fail(f"--from-iteration {from_iteration}: {run} logged iterations {first[0]} to {last[0]}; expected a "
              f"value below its last logged iteration")
    start = window[0]
    its_per_s = (last[0] - start[0]) / (last[1] - start[1])
    whole = summary.get("env_steps_per_s")
    return {
        "num_envs": num_envs,
        "first_log_iteration": first[0],
        "first_log_s": first[1] - opened,
        "last_log_iteration": last[0],
        "last_log_s": last[1] - opened,
        "steady_from_iteration": start[0],
        "steady_its_per_s": its_per_s,
        "steady_env_steps_per_s": its_per_s * num_envs,
        "whole_run_env_steps_per_s": whole,
        "first_update_time_s": summary.get("first_update_time_s"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", metavar="LABEL=RUN_DIR")
    parser.add_argument("--from-iteration", type=int, default=1000,
                        help="first iteration of the steady window (default 1000)")
    parser.add_argument("--json", default=None, help="also write the rows here")
    args = parser.parse_args()
    rows = {}
    for item in args.runs:
        label, sep, path = item.partition("=")
        if not sep or not label or not path:
            _fail(f"run {item!r}: expected LABEL=RUN_DIR")
        rows[label] = timeline(Path(path), args.from_iteration)
    print(f"{'run':10s} {'first log (it, s)':>18s} {'last log (it, s)':>18s} {'steady it/s':>12s} "
          f"{'steady env steps/s':>19s} {'whole-run env steps/s':>22s} {'first update s':>15s}")
    for label, r in rows.items():
        whole, first_update = r["whole_run_env_steps_per_s"], r["first_update_time_s"]
        print(f"{label:10s} {r['first_log_iteration']:>8d} {r['first_log_s']:8.1f} s "
              f"{r['last_log_iteration']:>8d} {r['last_log_s']:8.1f} s {r['steady_its_per_s']:12.2f} "
              f"{r['steady_env_steps_per_s']:19.0f} {'-' if whole is None else f'{whole:.0f}':>22s} "
              f"{'-' if first_update is None else f'{first_update:.1f}':>15s}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
