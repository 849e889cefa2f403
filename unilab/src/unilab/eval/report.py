"""What an evaluation leaves behind: a table on stdout, a JSON record, and an entry in the run's
``run_summary.json``.

The JSON record (schema :data:`SCHEMA`) holds the suite's result (:class:`SuiteResult`: headline,
verdict, one entry per case) and where it came from: run, task, algo, the robot evaluated on
(``robot``: ``name``, ``mjcf``, the model file's absolute path or null for the robot's own model,
``actuators`` and ``feet``; ``transfer``: null, or for ``unilab eval --transfer`` the model the
run trained on and a one-line comparison; ``data_changes``: how the data files the env was built
from differ from those the run trained on, one line per config key, e.g. a clip added to the
motion folder), the evaluated file (checkpoint or ONNX), its
iteration and which actor it holds (``policy.actor``: the actor's moving average with its
``algo.actor_ema``, or the online actor), rows per case, seed, the settings the env was built
with, the wall time and env steps the evaluation took.
docs/eval.md says what every figure means.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from unilab import runs
from unilab.eval.suite import SuiteResult

SCHEMA = 1


def make_record(
    result: SuiteResult,
    *,
    run_dir: Path,
    task: str,
    algo: str,
    policy_kind: str,
    policy_file: str,
    iteration: int,
    final: bool,
    num_envs: int,
    rows: int,
    seed: int,
    overrides: list[str],
    wall_time_s: float,
    robot: dict[str, Any] | None = None,
    transfer: dict[str, Any] | None = None,
    actor: str | None = None,
    data_changes: list[str] | None = None,
) -> dict[str, Any]:
    """The JSON record of one evaluation (module docstring). ``robot``: the robot settings
    evaluated on (:func:`unilab.robots.robot_settings`: name, model file or null, actuators,
    feet). ``transfer``: for an evaluation on another model than the run trained on, ``settings``
    (the ``robot.*`` items), ``trained_robot`` (the run's robot settings) and ``text`` (one line:
    evaluated vs trained); None otherwise. ``actor``: which actor the policy is, in words
    (:attr:`unilab.deploy.loading.LoadedRun.deployed_actor`), kept as ``policy.actor`` when given.
    ``data_changes``: :attr:`unilab.deploy.loading.LoadedRun.data_changes` of the evaluated env ([] or None:
    the files the run trained on)."""
    import unilab

    return {
        "schema": SCHEMA,
        "suite": result.suite,
        "task": task,
        "algo": algo,
        "robot": robot,
        "transfer": transfer,
        "data_changes": list(data_changes or []),
        "run": str(run_dir),
        "policy": {"kind": policy_kind, "file": policy_file, "iteration": iteration, "final": final,
                   **({"actor": actor} if actor else {})},
        "headline": result.headline,
        "headline_text": result.headline_text,
        "passed": result.passed,
        "num_envs": num_envs,
        "rows": rows,
        "seed": seed,
        "settings": result.settings,
        "overrides": list(overrides),
        "cases": result.cases,
        "env_steps": result.steps,
        "wall_time_s": round(wall_time_s, 3),
        "evaluated_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "unilab": unilab.__version__,
    }


def write_record(path: Path, record: dict[str, Any]) -> Path:
    """Write ``record`` as JSON at ``path`` (atomically; its folder created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    runs.write_json(path, record)
    return path


def record_in_summary(run_dir: Path, record: dict[str, Any]) -> None:
    """Put ``record`` in ``run_dir/run_summary.json``: under ``eval[<suite>]`` for the run's final
    policy, under ``eval_checkpoints[<iteration>][<suite>]`` for any other (the newest evaluation
    of each wins); the rest of the summary is kept."""
    path = Path(run_dir) / "run_summary.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    suite = record["suite"]
    if record["policy"]["final"]:
        entries = data.get("eval") if isinstance(data.get("eval"), dict) else {}
        entries[suite] = record
        data["eval"] = entries
    else:
        by_iteration = data.get("eval_checkpoints") if isinstance(data.get("eval_checkpoints"), dict) else {}
        key = str(record["policy"]["iteration"])
        entry = by_iteration.get(key) if isinstance(by_iteration.get(key), dict) else {}
        entry[suite] = record
        by_iteration[key] = entry
        data["eval_checkpoints"] = dict(sorted(by_iteration.items(), key=lambda kv: int(kv[0]) if kv[0].isdigit() else -1))
    runs.write_json(path, data)


def print_report(result: SuiteResult, record: dict[str, Any], file=None) -> None:
    """The table, the headline and the notes, on ``file`` (stdout) with rich."""
    from rich.console import Console
    from rich.table import Table

    file = file or sys.stdout
    console = Console(file=file, width=None if file.isatty() else 160, highlight=False)
    p = record["policy"]
    layout = result.settings.get("layout") or f"{record['num_envs']} rows per case"
    actor = f"; {p['actor']}" if p.get("actor") else ""
    title = (f"{result.suite}: {record['task']} {p['kind']} {p['file']} (iteration {p['iteration']}{actor}), "
             f"{layout}, {record['rows']} env rows")
    transfer = record.get("transfer")
    if transfer:  # a transfer evaluation says so above its table, and on which model
        console.print(f"transfer: {transfer['text']}", style="bold", markup=False)
    for line in record.get("data_changes") or ():  # scored on other data than the run trained on
        console.print(f"not the data the run trained on: {line}", style="bold", markup=False)
    table = Table(*result.columns, title=title, title_justify="left")
    for row in result.rows:
        style = None if row[-1].startswith("pass") else "red"
        table.add_row(*row, style=style)
    console.print(table)
    verdict = "PASS" if result.passed else "FAIL"
    console.print(f"[bold]{result.suite}: {result.headline_text} ({100 * result.headline:.0f} %): {verdict}[/bold]")
    for note in result.notes:
        console.print(note)
    console.print(f"{record['env_steps']} env steps in {record['wall_time_s']:.1f} s")


def headline_metrics(record: dict[str, Any]) -> dict[str, float]:
    """``Eval/*`` scalars of a record for TensorBoard: ``Eval/headline`` (share in [0, 1]),
    ``Eval/passed`` (0 or 1), and per case ``Eval/<case>/passed`` (and the walking suite's
    velocity errors, the tracking suite's body position error from frame 0)."""
    out = {"Eval/headline": float(record["headline"]), "Eval/passed": float(record["passed"])}
    for case in record["cases"]:
        name = case["name"]
        out[f"Eval/{name}/passed"] = float(case["passed"])
        for axis in ("vx", "vy", "yaw_rate"):
            if isinstance(case.get(axis), dict) and case[axis]["error"] is not None:
                out[f"Eval/{name}/{axis}_error"] = float(case[axis]["error"])
        start = case.get("from_start")
        if isinstance(start, dict) and start.get("body_pos_error_rel_m") is not None:
            out[f"Eval/{name}/body_pos_error_rel_m"] = float(start["body_pos_error_rel_m"])
    return out


__all__ = ["SCHEMA", "headline_metrics", "make_record", "print_report", "record_in_summary", "write_record"]
