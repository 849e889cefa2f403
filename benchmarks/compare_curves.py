"""Several runs' curves in one PNG, against env steps: for a figure in the docs.

From the repository root, each run named ``LABEL=RUN_DIR`` (a run directory, or a folder with its
TensorBoard events and ``run_config.json``, as ``benchmarks/device_seeds.sh`` brings back):

    python benchmarks/compare_curves.py --out docs/curves.png D1=runs/D1 D3=runs/D3 ...

One panel per ``--tag`` (default: ``Train/mean_episode_length`` and ``Eval/headline``), one line per
run, x = iteration x the run's ``training.num_envs`` (env steps, millions). ``--goal TAG=VALUE``
draws a horizontal line (default: mean episode length 900). Reads the events with
:func:`unilab.plots.read_scalars`; draws with matplotlib's object API on the Agg canvas.

Exit 2 with one ``error:`` line for a run without events or without ``num_envs`` (in
``run_summary.json``, else ``run_config.json``'s ``training.num_envs``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NoReturn

from unilab.plots import _num_envs as plots_num_envs
from unilab.plots import read_scalars


def _fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _num_envs(run: Path) -> int:
    """``num_envs`` of the run (:func:`unilab.plots._num_envs`: its summary, else its config)."""
    n = plots_num_envs(run)
    if n is None:
        _fail(f"{run}: no num_envs in run_summary.json nor config.training.num_envs in run_config.json")
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", metavar="LABEL=RUN_DIR")
    parser.add_argument("--out", required=True, help="PNG to write")
    parser.add_argument("--tag", action="append", default=None,
                        help="scalar tag, one panel each (default: Train/mean_episode_length, Eval/headline)")
    parser.add_argument("--goal", action="append", default=["Train/mean_episode_length=900"], metavar="TAG=VALUE")
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    tags = args.tag or ["Train/mean_episode_length", "Eval/headline"]
    goals = {}
    for item in args.goal:
        tag, _, value = item.partition("=")
        goals[tag] = float(value)

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.0 * len(tags), 3.6), dpi=90)
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(tags), squeeze=False)[0]
    for item in args.runs:
        label, sep, path = item.partition("=")
        if not sep:
            _fail(f"run {item!r}: expected LABEL=RUN_DIR")
        run = Path(path)
        scalars = read_scalars(run) if run.is_dir() else {}
        if not scalars:
            _fail(f"run {label}={run}: no TensorBoard events there")
        n = _num_envs(run)
        for ax, tag in zip(axes, tags):
            points = scalars.get(tag, [])
            ax.plot([s * n / 1e6 for s, _, _ in points], [v for _, _, v in points], label=label, lw=1.2)
    for ax, tag in zip(axes, tags):
        if tag in goals:
            ax.axhline(goals[tag], color="grey", ls="--", lw=0.8)
        ax.set_title(tag, fontsize=9)
        ax.set_xlabel("env steps (M)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    if args.title:
        fig.suptitle(args.title, fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
