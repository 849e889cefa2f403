#!/usr/bin/env python3
"""Generate, validate and save the default g1_motion_tracking clip (made here: no third-party motion data, see NOTICE).

The motion is written in joint space at 50 fps: 6 s starting and ending at rest in the default
``knees_bent`` pose, with two squats (hip pitch -s, knee +2s, ankle pitch -s keep the feet flat
and the pelvis level), lateral weight shifts (hip roll +a, ankle roll -a on both legs: a
parallelogram, feet flat), waist yaw, and alternating arm swings. The root is not scripted: for
each frame it is placed by forward kinematics so that both foot sites stay where they are at
frame 0 (no sliding, soles on the floor). Body poses and velocities then come from
:func:`unilab.motion.fk_motion` on our G1 (the importer's path).

Checks before saving: joints inside the soft limits (0.9 of the range), foot sites still to within
1 mm, no sole capsule more than 2 mm into the floor, joint speeds below 20 rad/s, centre of mass
over the support (between the feet). Any failure exits 1 without writing.

    .venv/bin/python scripts/make_default_motion.py            # writes the package's default.npz
    .venv/bin/python scripts/make_default_motion.py --csv /tmp/default_30fps.csv  # also a LAFAN1 CSV
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import mujoco
import numpy as np

from unilab.motion import fk_motion, resample_qpos, write_lafan_csv
from unilab.robots import g1

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "unilab/src/unilab/tasks/g1_motion_tracking/motions/default.npz"
FPS = 50.0
DURATION_S = 6.0
RAMP_S = 0.6


def envelope(t: np.ndarray) -> np.ndarray:
    """0 at both ends, 1 in the middle, smooth (zero slope) ramps of RAMP_S."""
    def smooth(x):
        x = np.clip(x, 0.0, 1.0)
        return x * x * (3.0 - 2.0 * x)
    return smooth(t / RAMP_S) * smooth((DURATION_S - t) / RAMP_S)


def joint_trajectory(t: np.ndarray) -> np.ndarray:
    """(T, 29) joint angles, rad, in G1_JOINT_NAMES order."""
    e = envelope(t)
    q = np.tile(np.asarray(g1.KNEES_BENT_QPOS[7:], dtype=np.float64), (len(t), 1))
    col = {name: i for i, name in enumerate(g1.G1_JOINT_NAMES)}
    squat = 0.25 * np.sin(np.pi * t / 3.0) ** 2 * e  # two squats in 6 s
    shift = 0.08 * np.sin(2.0 * np.pi * t / 2.0) * e  # weight shifts, 0.5 Hz
    swing = 0.4 * np.sin(2.0 * np.pi * t / 2.0) * e  # arm swing, 0.5 Hz
    for side in ("left", "right"):
        q[:, col[f"{side}_hip_pitch_joint"]] -= squat
        q[:, col[f"{side}_knee_joint"]] += 2.0 * squat
        q[:, col[f"{side}_ankle_pitch_joint"]] -= squat
        q[:, col[f"{side}_hip_roll_joint"]] += shift
        q[:, col[f"{side}_ankle_roll_joint"]] -= shift
    q[:, col["waist_yaw_joint"]] += 0.25 * np.sin(2.0 * np.pi * t / 3.0) * e
    q[:, col["waist_pitch_joint"]] += 0.3 * squat  # lean into the squat
    q[:, col["left_shoulder_pitch_joint"]] += swing
    q[:, col["right_shoulder_pitch_joint"]] -= swing
    q[:, col["left_elbow_joint"]] += 0.3 * np.abs(swing)
    q[:, col["right_elbow_joint"]] += 0.3 * np.abs(swing)
    q[:, col["left_shoulder_roll_joint"]] += 0.15 * squat
    q[:, col["right_shoulder_roll_joint"]] -= 0.15 * squat
    return q


def place_root(model: mujoco.MjModel, joints: np.ndarray) -> np.ndarray:
    """(T, 36) qpos: identity root orientation, root position chosen so that the mean of the two
    foot sites stays at its position in the knees_bent keyframe, lowered so that the soles touch
    the floor (the keyframe itself leaves 3 mm)."""
    data = mujoco.MjData(model)
    sites = [model.site(s).id for s in g1.FOOT_SITES]
    base = np.asarray(g1.KNEES_BENT_QPOS, dtype=np.float64)
    data.qpos[:] = base
    mujoco.mj_kinematics(model, data)
    target = data.site_xpos[sites].mean(axis=0)
    geoms = [model.geom(n).id for n in g1.FOOT_GEOM_NAMES]
    target[2] -= (data.geom_xpos[geoms, 2] - model.geom_size[geoms, 0]).min()  # soles on the floor
    qpos = np.tile(base, (len(joints), 1))
    qpos[:, 7:] = joints
    for i in range(len(joints)):
        data.qpos[:] = qpos[i]
        mujoco.mj_kinematics(model, data)
        qpos[i, :3] += target - data.site_xpos[sites].mean(axis=0)
    return qpos


def check(model: mujoco.MjModel, qpos: np.ndarray, clip) -> list[str]:
    """Problems of the clip, one line each (empty: valid)."""
    problems = []
    soft = g1.SOFT_JOINT_POS_LIMIT_FACTOR
    for j, name in enumerate(clip.joint_names):
        lo, hi = g1.JOINT_RANGE[name]
        mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo) * soft
        q = clip.joint_pos[:, j]
        if q.min() < mid - half or q.max() > mid + half:
            problems.append(f"{name} leaves its soft limits: [{q.min():.3f}, {q.max():.3f}]")
    if np.abs(clip.joint_vel).max() > 20.0:
        problems.append(f"joint speed {np.abs(clip.joint_vel).max():.1f} rad/s > 20")
    data = mujoco.MjData(model)
    sites = [model.site(s).id for s in g1.FOOT_SITES]
    geoms = [model.geom(n).id for n in g1.FOOT_GEOM_NAMES]
    site0, slip, lowest, com_off = None, 0.0, np.inf, 0.0
    for q in qpos:
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        feet = data.site_xpos[sites].copy()
        site0 = feet if site0 is None else site0
        slip = max(slip, float(np.abs(feet - site0).max()))
        lowest = min(lowest, float((data.geom_xpos[geoms, 2] - model.geom_size[geoms, 0]).min()))
        com = data.subtree_com[1]
        # lateral distance of the CoM outside the segment between the feet (0 when between them)
        lo_y, hi_y = sorted(feet[:, 1])
        com_off = max(com_off, lo_y - com[1], com[1] - hi_y, abs(com[0] - feet[:, 0].mean()) - 0.08)
    if slip > 1e-3:
        problems.append(f"foot sites move by {slip * 1e3:.2f} mm (> 1 mm)")
    if lowest < -2e-3:
        problems.append(f"a sole capsule goes {-lowest * 1e3:.2f} mm into the floor (> 2 mm)")
    if com_off > 0.0:
        problems.append(f"centre of mass leaves the support by {com_off * 1e3:.1f} mm")
    print(f"foot slip {slip * 1e3:.3f} mm, lowest sole point {lowest * 1e3:.2f} mm, "
          f"max |joint vel| {np.abs(clip.joint_vel).max():.2f} rad/s")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="npz to write")
    parser.add_argument("--csv", type=Path, default=None, help="also write a 30 fps LAFAN1-style CSV")
    args = parser.parse_args(argv)

    model = g1.g1_model(with_floor=False)
    t = np.arange(int(round(DURATION_S * FPS)) + 1) / FPS
    qpos = place_root(model, joint_trajectory(t))
    clip = fk_motion(qpos, FPS, source="make_default_motion")
    problems = check(model, qpos, clip)
    if problems:
        for p in problems:
            print(f"error: {p}", file=sys.stderr)
        return 1
    args.out.parent.mkdir(parents=True, exist_ok=True)
    clip.save(args.out)
    print(f"wrote {args.out} ({clip.num_frames} frames at {clip.fps:g} fps, {clip.duration_s:.2f} s, "
          f"{args.out.stat().st_size / 1024:.0f} KiB)")
    if args.csv:
        write_lafan_csv(args.csv, resample_qpos(qpos, FPS, 30.0))
        print(f"wrote {args.csv} (30 fps LAFAN1-style CSV)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
