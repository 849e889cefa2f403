#!/usr/bin/env python3
"""Generate the whole-body clips of the shipped motion set by inverse kinematics on our G1
(made here: no third-party motion data, see NOTICE), check each with ``unilab motion inspect`` and save them.

Clips (50 fps, start and end at rest, both feet flat and fixed on the floor):

* ``squat``: two deep squats with the arms raised forward as counterweight;
* ``reach``: both hands forward at chest height, then the left hand up and out to the side,
  then the right hand low and forward;
* ``twist``: the torso turns left and right (waist yaw) with the arms swinging around it;
* ``lunge``: a split stance (left foot forward), lowered and raised twice, arms up.

Each frame is solved by damped least squares (Levenberg-Marquardt steps on the stacked task
errors, ``dq = (Jᵀ W J + λ² I)⁻¹ Jᵀ W e``, MuJoCo's Jacobians ``mj_jacBody`` / ``mj_jac`` /
``mj_jacSubtreeCom``), warm-started from the previous frame. Tasks: both foot bodies' poses
(fixed), the whole-body centre of mass over the middle of the support (xy), a pelvis height
and orientation, hand positions where the clip scripts them, and a low-weight posture (a
scripted joint trajectory). Joints are clamped to their soft limits (0.9 of the range) after
every step. Body poses and velocities then come from :func:`unilab.motion.fk_motion`.

Checks before saving (a failure exits 1 without writing): no warning from
:func:`unilab.motion.inspect.inspect_motion` (floor penetration, floating, self-collision,
limits, speeds), feet fixed to 1 mm, the centre of mass inside the support polygon (the convex
hull of the sole capsules) with a 1 cm margin.

    .venv/bin/python scripts/make_motion_set.py                 # writes the package's motions/
    .venv/bin/python scripts/make_motion_set.py --out /tmp/set --only squat
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import mujoco
import numpy as np

from unilab.motion import fk_motion
from unilab.motion.inspect import inspect_motion
from unilab.tasks.g1_motion_tracking.env_cfg import TRACKED_BODIES
from unilab.robots import g1

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "unilab/src/unilab/tasks/g1_motion_tracking/motions"
FPS = 50.0
COL = {name: 7 + i for i, name in enumerate(g1.G1_JOINT_NAMES)}
# Only the bodies the task tracks are stored; the rest follow from the joints by forward kinematics.


def smooth_step(x: np.ndarray) -> np.ndarray:
    """0 -> 1 with zero slope at both ends (cubic), clipped outside [0, 1]."""
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3.0 - 2.0 * x)


def envelope(t: np.ndarray, duration: float, ramp: float = 0.8) -> np.ndarray:
    """0 at both ends, 1 in the middle, smooth ramps of ``ramp`` s."""
    return smooth_step(t / ramp) * smooth_step((duration - t) / ramp)


def bump(t: np.ndarray, start: float, end: float, ramp: float = 0.6) -> np.ndarray:
    """0 before ``start``, 1 from ``start + ramp`` to ``end - ramp``, 0 after ``end``."""
    return smooth_step((t - start) / ramp) * smooth_step((end - t) / ramp)


@dataclass
class Frame:
    """Targets of one frame.

    Attributes:
        posture: (29,) joint angles the low-weight posture task pulls towards, rad.
        pelvis_z: pelvis height, m (None: free).
        pelvis_yaw: pelvis yaw, rad (roll and pitch are held at 0).
        hands: body name -> world position of its origin, m.
        hand_weight: scales the hand tasks (fades them in and out).
        com_xy: centre-of-mass target (None: the middle of the feet).
    """

    posture: np.ndarray
    pelvis_z: float | None = None
    pelvis_yaw: float = 0.0
    hands: dict[str, np.ndarray] = field(default_factory=dict)
    hand_weight: float = 1.0
    com_xy: np.ndarray | None = None


@dataclass
class ClipSpec:
    """A clip: its duration, the foot placement and the per-frame targets."""

    name: str
    duration_s: float
    frame: Callable[[float], Frame]
    foot_offset: dict[str, np.ndarray] = field(default_factory=dict)  # foot body -> xy shift of its rest pose


class Ik:
    """Damped least squares on the G1's qpos (see the module docstring)."""

    FOOT_W, COM_W, PELVIS_Z_W, PELVIS_ORI_W, HAND_W, POSTURE_W = 30.0, 10.0, 2.0, 2.0, 1.0, 0.02
    DAMPING = 1e-2

    def __init__(self, model: mujoco.MjModel) -> None:
        self.model, self.data = model, mujoco.MjData(model)
        self.feet = [model.body(b).id for b in g1.FOOT_BODIES]
        self.pelvis = model.body(g1.PELVIS_BODY).id
        self.joint_dofs = np.array([model.jnt_dofadr[model.joint(n).id] for n in g1.G1_JOINT_NAMES])
        self.joint_qpos = np.array([model.jnt_qposadr[model.joint(n).id] for n in g1.G1_JOINT_NAMES])
        soft = g1.SOFT_JOINT_POS_LIMIT_FACTOR
        lim = np.array([g1.JOINT_RANGE[n] for n in g1.G1_JOINT_NAMES])
        mid, half = lim.mean(axis=1), 0.5 * (lim[:, 1] - lim[:, 0]) * soft
        margin = 0.02  # rad inside the soft limits: inspect flags the soft limits themselves
        self.lo, self.hi = mid - half + margin, mid + half - margin

    def _rows(self, qpos: np.ndarray, targets: Frame, feet: list[tuple[np.ndarray, np.ndarray]]):
        m, d = self.model, self.data
        d.qpos[:] = qpos
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        jacs, errs, weights = [], [], []
        jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        for bid, (pos, quat) in zip(self.feet, feet):
            mujoco.mj_jacBody(m, d, jp, jr, bid)
            err_r = np.zeros(3)
            mujoco.mju_subQuat(err_r, quat, d.xquat[bid])  # in the body frame
            jacs += [jp.copy(), jr.copy()]
            errs += [pos - d.xpos[bid], d.xmat[bid].reshape(3, 3) @ err_r]  # world, as the Jacobian
            weights += [self.FOOT_W] * 6
        com_target = targets.com_xy if targets.com_xy is not None else 0.5 * (feet[0][0][:2] + feet[1][0][:2])
        mujoco.mj_jacSubtreeCom(m, d, jp, self.pelvis)
        jacs.append(jp[:2].copy())
        errs.append(com_target - d.subtree_com[self.pelvis, :2])
        weights += [self.COM_W] * 2
        mujoco.mj_jacBody(m, d, jp, jr, self.pelvis)
        if targets.pelvis_z is not None:
            jacs.append(jp[2:3].copy())
            errs.append(np.array([targets.pelvis_z - d.xpos[self.pelvis, 2]]))
            weights.append(self.PELVIS_Z_W)
        want = np.zeros(4)
        mujoco.mju_axisAngle2Quat(want, np.array([0.0, 0.0, 1.0]), targets.pelvis_yaw)
        err_r = np.zeros(3)
        mujoco.mju_subQuat(err_r, want, d.xquat[self.pelvis])
        jacs.append(jr.copy())
        errs.append(d.xmat[self.pelvis].reshape(3, 3) @ err_r)
        weights += [self.PELVIS_ORI_W] * 3
        for body, pos in targets.hands.items():
            bid = m.body(body).id
            mujoco.mj_jacBody(m, d, jp, jr, bid)
            jacs.append(jp.copy())
            errs.append(pos - d.xpos[bid])
            weights += [self.HAND_W * targets.hand_weight] * 3
        posture = np.zeros((29, m.nv))
        posture[np.arange(29), self.joint_dofs] = 1.0
        jacs.append(posture)
        errs.append(targets.posture - qpos[self.joint_qpos])
        weights += [self.POSTURE_W] * 29
        return np.concatenate(jacs), np.concatenate(errs), np.asarray(weights)

    def _step(self, jac: np.ndarray, err: np.ndarray, w: np.ndarray, free: np.ndarray) -> np.ndarray:
        """One step over the dofs ``free`` (the others stay): the feet first, every other task
        in the feet's null space."""
        nv = self.model.nv
        lam2 = self.DAMPING**2
        jac = jac * free
        j1, e1 = jac[:12], err[:12]
        j2, e2, w2 = jac[12:], err[12:], w[12:]
        pinv1 = j1.T @ np.linalg.inv(j1 @ j1.T + lam2 * np.eye(12))
        dq1 = pinv1 @ e1
        null = np.eye(nv) - pinv1 @ j1
        a = j2 @ null
        atw = a.T * w2
        dq2 = np.linalg.solve(atw @ a + lam2 * np.eye(nv), atw @ (e2 - j2 @ dq1))
        return (dq1 + null @ dq2) * free

    def solve(self, qpos: np.ndarray, targets: Frame, feet, iterations: int) -> np.ndarray:
        """``iterations`` steps. A joint at a limit that a step would push further is held for
        that step (its column removed, the step solved again), so the feet keep priority over
        the tasks that cannot be met; then the step is shortened so no joint crosses a limit."""
        qpos = qpos.copy()
        eps = 1e-9
        for _ in range(iterations):
            jac, err, w = self._rows(qpos, targets, feet)
            q = qpos[self.joint_qpos]
            free = np.ones(self.model.nv)
            for _ in range(8):
                dq = self._step(jac, err, w, free)
                dj = dq[self.joint_dofs]
                at_limit = ((q <= self.lo + eps) & (dj < 0)) | ((q >= self.hi - eps) & (dj > 0))
                push_out = at_limit & (free[self.joint_dofs] > 0)
                if not push_out.any():
                    break
                free[self.joint_dofs[push_out]] = 0.0
            dj = dq[self.joint_dofs]
            room = np.full_like(dj, np.inf)
            up, down = dj > eps, dj < -eps
            room[up], room[down] = (self.hi - q)[up] / dj[up], (self.lo - q)[down] / dj[down]
            alpha = float(min(1.0, max(room.min(), 0.0)))
            mujoco.mj_integratePos(self.model, qpos, alpha * dq, 1.0)
            qpos[self.joint_qpos] = np.clip(qpos[self.joint_qpos], self.lo, self.hi)
        return qpos


def rest_qpos(model: mujoco.MjModel) -> np.ndarray:
    """knees_bent with the soles on the floor (the keyframe leaves a few mm)."""
    data = mujoco.MjData(model)
    qpos = np.asarray(g1.KNEES_BENT_QPOS, dtype=np.float64).copy()
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    geoms = [model.geom(n).id for n in g1.FOOT_GEOM_NAMES]
    qpos[2] -= (data.geom_xpos[geoms, 2] - model.geom_size[geoms, 0]).min()
    return qpos


def base_posture() -> np.ndarray:
    return np.asarray(g1.KNEES_BENT_QPOS[7:], dtype=np.float64).copy()


# ============================================================================ the clips
def squat(t: float) -> Frame:
    d = 8.0
    e = float(envelope(np.array([t]), d)[0])
    depth = 0.22 * np.sin(np.pi * t / (d / 2)) ** 2 * e  # two squats
    q = base_posture()
    for side in ("left", "right"):
        q[COL[f"{side}_hip_pitch_joint"] - 7] -= 1.4 * depth / 0.22 * 0.5
        q[COL[f"{side}_knee_joint"] - 7] += 2.8 * depth / 0.22 * 0.5
        q[COL[f"{side}_ankle_pitch_joint"] - 7] -= 1.4 * depth / 0.22 * 0.5
        q[COL[f"{side}_shoulder_pitch_joint"] - 7] -= 1.2 * depth / 0.22  # arms forward
        q[COL[f"{side}_elbow_joint"] - 7] -= 0.5 * depth / 0.22
    return Frame(q, pelvis_z=0.755 - depth * 1.0)


def reach(t: float) -> Frame:
    q = base_posture()
    both = float(bump(np.array([t]), 0.3, 3.5, 1.0)[0])
    left = float(bump(np.array([t]), 3.3, 6.5, 1.0)[0])
    right = float(bump(np.array([t]), 6.3, 9.3, 1.0)[0])
    q[COL["left_shoulder_pitch_joint"] - 7] += -1.3 * both - 2.2 * left
    q[COL["right_shoulder_pitch_joint"] - 7] += -1.3 * both - 0.6 * right
    q[COL["left_shoulder_roll_joint"] - 7] += 0.9 * left
    q[COL["left_elbow_joint"] - 7] += -0.9 * both - 0.9 * left
    q[COL["right_elbow_joint"] - 7] += -0.9 * both - 0.6 * right
    q[COL["waist_pitch_joint"] - 7] += 0.25 * both + 0.3 * right
    q[COL["waist_yaw_joint"] - 7] += 0.3 * right - 0.2 * left
    hands = {f"{side}_wrist_yaw_link": np.array([0.45, y, 1.05]) for side, y in (("left", 0.1), ("right", -0.1))}
    return Frame(q, pelvis_z=0.755 - 0.05 * right, hands=hands, hand_weight=both)


def twist(t: float) -> Frame:
    d = 8.0
    e = float(envelope(np.array([t]), d)[0])
    q = base_posture()
    yaw = 0.7 * np.sin(2.0 * np.pi * t / 4.0) * e
    q[COL["waist_yaw_joint"] - 7] += yaw
    for side, sign in (("left", 1.0), ("right", -1.0)):
        q[COL[f"{side}_shoulder_roll_joint"] - 7] += sign * 0.5 * e
        q[COL[f"{side}_elbow_joint"] - 7] += 0.4 * e
        q[COL[f"{side}_shoulder_pitch_joint"] - 7] += sign * 0.5 * np.sin(2.0 * np.pi * t / 4.0) * e - 0.2 * e
    return Frame(q, pelvis_z=0.745, pelvis_yaw=-0.15 * yaw)


LUNGE_FEET = {"left_ankle_roll_link": np.array([0.16, 0.0]), "right_ankle_roll_link": np.array([-0.12, 0.0])}


def lunge(t: float) -> Frame:
    d = 8.0
    e = float(envelope(np.array([t]), d)[0])
    depth = 0.16 * np.sin(np.pi * t / (d / 2)) ** 2 * e
    q = base_posture()
    q[COL["left_hip_pitch_joint"] - 7] -= 0.5 + 3.0 * depth
    q[COL["left_knee_joint"] - 7] += 0.4 + 4.0 * depth
    q[COL["right_hip_pitch_joint"] - 7] += 0.3
    q[COL["right_knee_joint"] - 7] += 0.3 + 4.0 * depth
    for side, sign in (("left", 1.0), ("right", -1.0)):
        q[COL[f"{side}_shoulder_roll_joint"] - 7] += sign * 1.0 * depth / 0.16 * e
        q[COL[f"{side}_elbow_joint"] - 7] -= 0.4 * depth / 0.16 * e
    return Frame(q, pelvis_z=0.72 - depth)


CLIPS = {
    "squat": ClipSpec("squat", 8.0, squat),
    "reach": ClipSpec("reach", 9.6, reach),
    "twist": ClipSpec("twist", 8.0, twist),
    "lunge": ClipSpec("lunge", 8.0, lunge, foot_offset=LUNGE_FEET),
}


# ============================================================================ solve and check
def solve_clip(model: mujoco.MjModel, spec: ClipSpec) -> np.ndarray:
    """(T, 36) qpos of a clip."""
    ik = Ik(model)
    data = mujoco.MjData(model)
    qpos = rest_qpos(model)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    feet = []
    for bid in ik.feet:
        pos = data.xpos[bid].copy()
        pos[:2] += spec.foot_offset.get(model.body(bid).name, np.zeros(2))
        feet.append((pos, data.xquat[bid].copy()))
    times = np.arange(int(round(spec.duration_s * FPS)) + 1) / FPS
    qpos = ik.solve(qpos, spec.frame(0.0), feet, iterations=200)  # the start pose (a split stance for the lunge)
    out = np.zeros((len(times), model.nq))
    for i, t in enumerate(times):
        qpos = ik.solve(qpos, spec.frame(float(t)), feet, iterations=20)
        out[i] = qpos
    return out


def _cross(a: np.ndarray, b: np.ndarray) -> float:
    return float(a[0] * b[1] - a[1] * b[0])


def _hull(points: np.ndarray) -> np.ndarray:
    """Counter-clockwise convex hull of (n, 2) points (Andrew's monotone chain)."""
    pts = sorted(map(tuple, points))

    def half(seq):
        h: list[tuple[float, float]] = []
        for p in seq:
            while len(h) >= 2 and _cross(np.subtract(h[-1], h[-2]), np.subtract(p, h[-2])) <= 0:
                h.pop()
            h.append(p)
        return h[:-1]

    return np.array(half(pts) + half(reversed(pts)))


def support_margin(model: mujoco.MjModel, qpos: np.ndarray) -> tuple[float, float]:
    """(smallest distance of the CoM inside the support polygon over the clip (m; negative:
    outside), largest foot-body displacement from frame 0 (m))."""
    data = mujoco.MjData(model)
    geoms = [model.geom(n).id for n in g1.FOOT_GEOM_NAMES]
    feet = [model.body(b).id for b in g1.FOOT_BODIES]
    worst, slip, feet0 = np.inf, 0.0, None
    for q in qpos:
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        ends = []
        for g in geoms:
            axis = data.geom_xmat[g].reshape(3, 3)[:, 2] * model.geom_size[g, 1]
            ends += [data.geom_xpos[g, :2] + axis[:2], data.geom_xpos[g, :2] - axis[:2]]
        hull = _hull(np.array(ends))
        com = data.subtree_com[1, :2]
        edges = np.roll(hull, -1, axis=0) - hull
        inward = np.stack((-edges[:, 1], edges[:, 0]), axis=1) / np.linalg.norm(edges, axis=1, keepdims=True)
        worst = min(worst, float(np.min(np.sum((com - hull) * inward, axis=1))))
        pos = data.xpos[feet].copy()
        feet0 = pos if feet0 is None else feet0
        slip = max(slip, float(np.abs(pos - feet0).max()))
    return worst, slip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder to write the clips to")
    parser.add_argument("--only", nargs="*", choices=sorted(CLIPS), help="clips to make (default: all)")
    args = parser.parse_args(argv)
    model = g1.g1_model(with_floor=False)
    failed = False
    for name in args.only or CLIPS:
        spec = CLIPS[name]
        qpos = solve_clip(model, spec)
        clip = fk_motion(qpos, FPS, source=name)
        report = inspect_motion(clip)
        margin, slip = support_margin(model, qpos)
        problems = list(report.warnings)
        if slip > 1e-3:
            problems.append(f"feet move by {slip * 1e3:.2f} mm (> 1 mm)")
        if margin < 0.01:
            problems.append(f"the centre of mass comes within {margin * 1e3:.1f} mm of the support polygon's edge (< 10 mm)")
        speed = max(v for v, _, _ in report.joint_speed.values())
        print(f"{name}: {clip.num_frames} frames, pelvis z {report.pelvis_z_m[0]:.3f}..{report.pelvis_z_m[1]:.3f} m, "
              f"CoM margin {margin * 1e3:.0f} mm, foot slip {slip * 1e3:.2f} mm, deepest sole "
              f"{report.feet_penetration.max_depth_mm:.1f} mm, max joint speed {speed:.2f} rad/s")
        if problems:
            failed = True
            for p in problems:
                print(f"error: {name}: {p}", file=sys.stderr)
            continue
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"{name}.npz"
        clip.select(clip.joint_names, TRACKED_BODIES).save(path)
        print(f"  wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
