"""Where a motion-tracking policy misses: per-body and per-joint errors and action smoothness.

One command, from the repository root (packages installed), for one clip of each run's motion
set, played from its first frame with the tracking suite's evaluation settings:

    python benchmarks/tracking_errors.py --clip squat RUN [RUN ...]

Each RUN is a run directory with ``policy.onnx`` (``unilab export``) and ``run_config.json``.
Printed per run, averaged over the steps played before the clip ends or the env terminates:

* the orientation error of each tracked body, rad: the angle between the body and its
  anchor-relative reference (the tracking suite's ``body ori rad``, body by body);
* the eight joints furthest from the reference, rad (mean |q_j - q_j^ref|);
* the mean and largest |action| and the RMS of the action change per step (action units): a
  jittering policy pays the ``action_rate_l2`` penalty and shakes the light arm links.

A diagnostic for recipes, not a pass/fail: ``unilab eval`` judges the policy.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from unilab.eval.policy import OnnxPolicy
from unilab.eval.runner import EvalSession
from unilab.utils.math import quat_error_magnitude


def play(run: Path, clip: str) -> dict:
    """Roll one row of ``clip`` out from frame 0 with the run's ONNX policy; the sums above."""
    session = EvalSession(run, "tracking", [clip], 1, overrides=("sim.nthread=1",))
    try:
        env, cmd = session.env, session.env.commands["motion"]
        policy = OnnxPolicy(run / "policy.onnx")
        if clip not in cmd.clip_names:
            raise SystemExit(f"error: --clip {clip!r} is not in {run}'s motion set {cmd.clip_names}")
        clip_id = cmd.clip_names.index(clip)
        env.reset()
        rows = torch.arange(env.num_envs)
        cmd.start_at(rows, torch.zeros_like(rows), torch.full_like(rows, clip_id))
        obs = env.observation_manager.compute()
        ori = torch.zeros(len(cmd.body_names), dtype=torch.float64)
        joint = torch.zeros(env.num_actions, dtype=torch.float64)
        actions, steps = [], 0
        for _ in range(int(cmd.clip_frames[clip_id]) - 1):
            a = policy(obs["actor"])
            actions.append(a[0])
            obs, _, terminated, truncated, _ = env.step(a)
            if bool(terminated[0] or truncated[0]):
                break
            ori += quat_error_magnitude(cmd.body_quat_relative_w, env.robot.body_quat_w)[0].double()
            joint += (env.robot.joint_pos - cmd.joint_pos)[0].abs().double()
            steps += 1
        a = torch.stack(actions)
        return {
            "steps": steps, "ended": "terminated" if bool(terminated[0]) else "completed",
            "body_ori": dict(zip(cmd.body_names, (ori / max(steps, 1)).tolist())),
            "joint": dict(zip(env.cfg.joint_names, (joint / max(steps, 1)).tolist())),
            "abs_action_mean": float(a.abs().mean()), "abs_action_max": float(a.abs().max()),
            "action_rate_rms": float((a[1:] - a[:-1]).pow(2).mean().sqrt()) if len(a) > 1 else 0.0,
        }  # fmt: skip
    finally:
        session.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", type=Path, help="run directories with policy.onnx")
    p.add_argument("--clip", default="default", help="clip name in the runs' motion set")
    args = p.parse_args()
    for run in args.runs:
        r = play(run, args.clip)
        print(f"== {run}: clip {args.clip}, {r['steps']} steps, {r['ended']}")
        print("body orientation error, rad: " + ", ".join(f"{b} {v:.2f}" for b, v in r["body_ori"].items()))
        worst = sorted(r["joint"].items(), key=lambda kv: -kv[1])[:8]
        print("largest joint errors, rad: " + ", ".join(f"{j} {v:.2f}" for j, v in worst))
        print(f"|action| mean {r['abs_action_mean']:.2f}, max {r['abs_action_max']:.2f}; "
              f"action change per step, RMS {r['action_rate_rms']:.3f}")


if __name__ == "__main__":
    main()
