"""The online actor against its moving average (``algo.actor_ema``), on the same run.

One command, from the repository root (packages installed), for SAC runs trained with
``algo.actor_ema > 0``:

    .venv/bin/python benchmarks/actor_average_ab.py RUN [RUN ...]

For each RUN (a run directory or ``latest``, the newest under ``--log-dir``; with
``model_last.pt``, else its newest checkpoint) it writes
``model_online.pt``, the same checkpoint with the average replaced by the online actor, evaluates
both with ``unilab eval`` (default suite and rows; records ``eval_walking_online.json`` and the
run's usual ``eval_walking.json``, which stays the deployed average's; an ``eval_walking.json``
of the same checkpoint and iteration is reused rather than run again), deletes
``model_online.pt`` again, restores ``run_summary.json`` as it was before the online actor's
evaluation, and prints one line per case: the headline and each axis's error for both
policies. Both come from one run, so the difference is the averaging alone, not the seed. Bad
input (no such run, no checkpoint, a run trained without the average) is one ``error:`` line,
exit code 2.

A diagnostic for recipes, not a pass/fail: ``unilab eval`` judges the policy.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import torch

from unilab.deploy.loading import resolve_checkpoint
from unilab.errors import UserError
from unilab.eval.policy import load_checkpoint
from unilab.runs import resolve_run_dir


def online_checkpoint(checkpoint: Path) -> Path:
    """Write ``model_online.pt`` beside ``checkpoint``: its payload with ``agent.actor_average``
    set to ``agent.actor``.

    Raises:
        UserError: not a unilab checkpoint, or one without ``actor_average`` (trained with
            ``algo.actor_ema=0``).
    """
    payload = load_checkpoint(checkpoint)
    agent = payload["agent"]
    if "actor_average" not in agent:
        raise UserError(f"{checkpoint} has no actor_average: it was trained with algo.actor_ema=0 (SAC, > 0 to compare)")
    agent["actor_average"] = agent["actor"]
    out = checkpoint.with_name("model_online.pt")
    torch.save(payload, out)
    return out


def evaluate(run: Path, checkpoint: str, record: Path) -> dict:
    """``unilab eval RUN --checkpoint CHECKPOINT --json RECORD``; the record."""
    cmd = [sys.executable, "-m", "unilab.cli", "eval", str(run), "--checkpoint", checkpoint, "--json", str(record)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise UserError(f"{' '.join(cmd)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return json.loads(record.read_text())


def axis_errors(case: dict) -> str:
    """``vx -0.24 vy +0.00 yaw +0.01``, each axis's mean error (``--`` when no row stayed up to
    measure it); ``*`` marks one out of tolerance; then the falls, if any."""
    parts = []
    for axis, name in (("vx", "vx"), ("vy", "vy"), ("yaw_rate", "yaw")):
        entry = case[axis]
        error = "  -- " if entry.get("error") is None else f"{entry['error']:+.2f}"
        parts.append(f"{name} {error}{'' if entry.get('ok') else '*'}")
    if case.get("falls"):
        parts.append(f"falls {case['falls']}")
    return " ".join(parts)


def compare(run: Path) -> None:
    """Evaluate both policies of ``run`` and print the comparison."""
    checkpoint = resolve_checkpoint(run)
    online = online_checkpoint(checkpoint)
    summary = run / "run_summary.json"
    before = summary.read_bytes() if summary.is_file() else None
    try:
        online_rec = evaluate(run, online.name, run / "eval_walking_online.json")
    finally:
        online.unlink(missing_ok=True)
        if before is not None:  # the summary's evaluation records stay the deployed policy's
            summary.write_bytes(before)
    average_rec = None
    if (run / "eval_walking.json").is_file():
        earlier = json.loads((run / "eval_walking.json").read_text())
        same = earlier.get("policy", {}).get("file") == checkpoint.name
        if same and earlier["policy"].get("iteration") == online_rec["policy"].get("iteration"):
            average_rec = earlier
    if average_rec is None:
        average_rec = evaluate(run, checkpoint.name, run / "eval_walking.json")
    print(f"== {run} ({checkpoint.name}, iteration {average_rec['policy'].get('iteration')})")
    print(f"online actor:  {online_rec['headline_text']}")
    print(f"average actor: {average_rec['headline_text']}")
    for a, b in zip(online_rec["cases"], average_rec["cases"]):
        print(f"  {a['name']:15s} online {'pass' if a['passed'] else 'FAIL'} {axis_errors(a):32s}"
              f" average {'pass' if b['passed'] else 'FAIL'} {axis_errors(b)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run directories, or 'latest'")
    parser.add_argument("--log-dir", default="logs", help="where 'latest' looks")
    args = parser.parse_args()
    try:
        for run in args.runs:
            try:
                run_dir = resolve_run_dir(run, args.log_dir)
            except FileNotFoundError as exc:
                raise UserError(str(exc)) from None
            compare(run_dir)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
