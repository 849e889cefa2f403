"""Learning-curve PNG of a run, drawn from the TensorBoard scalars in its directory.

``unilab train`` calls :func:`write_learning_curve` when a run ends (whatever ended it), so every
run directory holds ``learning_curve.png``; it can also be called on an existing run::

    python -c "from unilab.plots import write_learning_curve; write_learning_curve('logs/sac/...')"

Drawing uses matplotlib's object API on the Agg canvas (no pyplot, no GUI, no global backend
switch), so it is safe in a headless training process.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from unilab.runs import atomic_write

FILENAME = "learning_curve.png"

#: (tag, panel title) of the default panels, one column each. The last one is the task's headline
#: reward term: the first of :data:`HEADLINE_TERMS` that the run logged (see :func:`default_panels`).
DEFAULT_PANELS: tuple[tuple[str, str], ...] = (
    ("Train/mean_episode_length", "mean episode length (env steps)"),
    ("Train/mean_reward", "mean episode return"),
    ("Episode_Reward/track_linear_velocity", "track_linear_velocity (per second)"),
)

#: Headline reward terms, per task: g1_walk_flat's velocity tracking, g1_motion_tracking's
#: relative body positions (the term a tracking run is judged by).
HEADLINE_TERMS: tuple[tuple[str, str], ...] = (
    ("Episode_Reward/track_linear_velocity", "track_linear_velocity (per second)"),
    ("Episode_Reward/motion_body_pos", "motion_body_pos (per second)"),
)


#: The evaluation panel (``training.eval_interval``): the suite's headline, a share in [0, 1].
EVAL_PANEL: tuple[str, str] = ("Eval/headline", "eval: suite headline (share, deterministic policy)")


def default_panels(tags) -> tuple[tuple[str, str], ...]:
    """:data:`DEFAULT_PANELS` with its last panel set to the first of :data:`HEADLINE_TERMS` among
    ``tags`` (the run's logged scalar tags; unchanged when none was logged), then
    :data:`EVAL_PANEL` when the run logged evaluations."""
    tags = set(tags)
    headline = next((term for term in HEADLINE_TERMS if term[0] in tags), DEFAULT_PANELS[-1])
    panels = (*DEFAULT_PANELS[:-1], headline)
    return (*panels, EVAL_PANEL) if EVAL_PANEL[0] in tags else panels


def read_scalars(run_dir: str | Path) -> dict[str, list[tuple[int, float, float]]]:
    """Every TensorBoard scalar of a run.

    Args:
        run_dir: directory holding ``events.out.tfevents.*`` files.

    Returns:
        tag -> [(step, wall_time, value), ...] sorted by step; step is the training iteration,
        wall_time seconds since the epoch (float), value as logged. Empty if there are no events.
    """
    return _load(run_dir)[0]


def _load(run_dir: str | Path) -> tuple[dict[str, list[tuple[int, float, float]]], float | None]:
    """(scalars as :func:`read_scalars`, wall time of the first event: when the writer opened)."""
    from tensorboard.backend.event_processing.event_accumulator import SCALARS, EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={SCALARS: 0})  # 0: keep every point
    acc.Reload()
    out: dict[str, list[tuple[int, float, float]]] = {}
    for tag in acc.Tags().get("scalars", []):
        events = sorted(acc.Scalars(tag), key=lambda e: e.step)
        out[tag] = [(int(e.step), float(e.wall_time), float(e.value)) for e in events]
    try:
        first = float(acc.FirstEventTimestamp())
    except ValueError:  # no events at all
        first = None
    return out, first


def _num_envs(run_dir: Path) -> int | None:
    """``num_envs`` of a run: its summary's, else its config's (``training.num_envs``, or
    ``algo.num_envs`` in runs of older versions); None when neither file has it."""
    for name, keys in (("run_summary.json", ("num_envs",)), ("run_config.json", ("config", "training", "num_envs")),
                       ("run_config.json", ("config", "algo", "num_envs"))):
        try:
            value = json.loads((run_dir / name).read_text())
            for k in keys:
                value = value[k]
            return int(value)
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return None


def write_learning_curve(
    run_dir: str | Path,
    *,
    num_envs: int | None = None,
    panels: Sequence[tuple[str, str]] | None = None,
    targets: Mapping[str, float] | None = None,
    filename: str = FILENAME,
) -> Path:
    """Write ``<run_dir>/learning_curve.png``: each panel's scalar against env steps (top row)
    and against wall-clock minutes since the TensorBoard writer opened, i.e. since training
    started (bottom row).

    Args:
        run_dir: the run directory (TensorBoard events, ``run_summary.json``).
        num_envs: env steps per iteration; default from ``run_summary.json`` / ``run_config.json``,
            else the x axis shows iterations.
        panels: (tag, title) per column; a tag without data shows "no data". Default:
            :func:`default_panels` of the run's tags.
        targets: optional tag -> value drawn as a dashed horizontal line (e.g. an acceptance gate).
        filename: output file name inside ``run_dir``.

    Returns:
        The PNG path.

    Raises:
        FileNotFoundError: ``run_dir`` does not exist.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"no run directory {run_dir}")
    scalars, t0 = _load(run_dir)
    panels = default_panels(scalars) if panels is None else panels
    num_envs = num_envs if num_envs is not None else _num_envs(run_dir)
    per_step = num_envs or 1
    if t0 is None:
        t0 = min((p[1] for points in scalars.values() for p in points), default=0.0)
    targets = dict(targets or {})

    fig = Figure(figsize=(4.2 * len(panels), 6.4), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, len(panels), squeeze=False)
    for col, (tag, title) in enumerate(panels):
        points = scalars.get(tag, [])
        for row in range(2):
            ax = axes[row][col]
            ax.set_title(title, fontsize=10)
            ax.grid(True, alpha=0.3)
            ax.xaxis.set_major_locator(MaxNLocator(5))
            if row == 0:
                ax.set_xlabel("env steps" if num_envs else "iterations")
            else:
                ax.set_xlabel("wall-clock (min)")
            if not points:
                ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
                continue
            x = [p[0] * per_step for p in points] if row == 0 else [(p[1] - t0) / 60.0 for p in points]
            ax.plot(x, [p[2] for p in points], lw=1.2, marker="o" if tag == EVAL_PANEL[0] else None, ms=3)
            if tag == EVAL_PANEL[0]:
                ax.set_ylim(-0.03, 1.03)
            if tag in targets:
                ax.axhline(targets[tag], ls="--", lw=1.0, color="tab:red")
    fig.suptitle("/".join(run_dir.resolve().parts[-3:]), fontsize=11)
    path = run_dir / filename
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=110, format="png")
    atomic_write(path, buffer.getvalue())
    return path


__all__ = ["DEFAULT_PANELS", "EVAL_PANEL", "FILENAME", "HEADLINE_TERMS", "default_panels", "read_scalars", "write_learning_curve"]
