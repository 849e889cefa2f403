"""Body poses and velocities of a qpos trajectory by MuJoCo forward kinematics on our G1.

The root and joint trajectory is the only input; every body array of a clip is recomputed on the
model the env simulates (:func:`unilab.robots.g1.g1_model`), so a clip retargeted for another G1
description still matches ours body by body. Velocities: qvel by central differences of qpos
(``mj_differentiatePos``, one-sided at the ends; BeyondMimic's ``csv_to_npz`` uses
``torch.gradient`` the same way), then each body's world-frame velocity from MuJoCo
(``mj_objectVelocity`` of the body frame), which is exactly what the backend's body sensors report
for that qpos and qvel.

:func:`lift_feet` takes the feet out of the floor: a clip recorded in simulation sinks its soles a
centimetre or more into the floor at heel strike (MuJoCo's contacts are soft), and a retargeted clip
may put its feet below the ground; neither pose is a reachable reference.
"""

from __future__ import annotations

from typing import Callable

import mujoco
import numpy as np

from unilab.motion.clip import MotionClip, MotionFormatError, validate_motion
from unilab.robots import g1


def _robot_model(robot_mjcf: str | None) -> mujoco.MjModel:
    return g1.g1_model(with_floor=False, mjcf=robot_mjcf)


def qvel_from_qpos(model: mujoco.MjModel, qpos: np.ndarray, fps: float) -> np.ndarray:
    """(T, nv) velocities of a (T, nq) trajectory sampled at ``fps``: central differences,
    one-sided at the first and last frame."""
    t = qpos.shape[0]
    qvel = np.zeros((t, model.nv))
    dt = 1.0 / fps
    for i in range(t):
        a, b = max(i - 1, 0), min(i + 1, t - 1)
        mujoco.mj_differentiatePos(model, qvel[i], (b - a) * dt, qpos[a], qpos[b])
    return qvel


def fk_motion(
    qpos: np.ndarray,
    fps: float,
    *,
    robot_mjcf: str | None = None,
    body_names: tuple[str, ...] | None = None,
    source: str | None = None,
) -> MotionClip:
    """A clip from a (T, 36) qpos trajectory (root pos, root quat wxyz, 29 joints in
    :data:`~unilab.robots.g1.G1_JOINT_NAMES` order) by forward kinematics on our G1.

    Args:
        qpos: (T, nq) float; quaternions are normalized.
        fps: frame rate of ``qpos``.
        robot_mjcf: optional user G1 MJCF (joints and bodies matched by name).
        body_names: bodies to store (default: every body of the model but the world).
        source: name used in error messages.
    """
    model = _robot_model(robot_mjcf)
    data = mujoco.MjData(model)
    qpos = np.array(qpos, dtype=np.float64)
    if qpos.ndim != 2 or qpos.shape[1] != model.nq:
        raise ValueError(f"qpos must have shape (T, nq={model.nq}), got {qpos.shape}")
    qpos[:, 3:7] /= np.linalg.norm(qpos[:, 3:7], axis=1, keepdims=True)
    qvel = qvel_from_qpos(model, qpos, fps)
    names = body_names or tuple(model.body(i).name for i in range(1, model.nbody))
    bids = [model.body(n).id for n in names]
    jids = [model.joint(n).id for n in g1.G1_JOINT_NAMES]
    qadr, vadr = model.jnt_qposadr[jids], model.jnt_dofadr[jids]
    t, b = qpos.shape[0], len(bids)
    pos, quat = np.zeros((t, b, 3)), np.zeros((t, b, 4))
    lin, ang = np.zeros((t, b, 3)), np.zeros((t, b, 3))
    vel6 = np.zeros(6)
    for i in range(t):
        data.qpos[:], data.qvel[:] = qpos[i], qvel[i]
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        mujoco.mj_comVel(model, data)
        pos[i], quat[i] = data.xpos[bids], data.xquat[bids]
        for k, bid in enumerate(bids):
            mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_XBODY, bid, vel6, 0)
            ang[i, k], lin[i, k] = vel6[:3], vel6[3:]
    clip = MotionClip(
        fps=float(fps),
        joint_names=tuple(g1.G1_JOINT_NAMES),
        body_names=tuple(names),
        joint_pos=qpos[:, qadr].astype(np.float32),
        joint_vel=qvel[:, vadr].astype(np.float32),
        body_pos_w=pos.astype(np.float32),
        body_quat_w=quat.astype(np.float32),
        body_lin_vel_w=lin.astype(np.float32),
        body_ang_vel_w=ang.astype(np.float32),
        source=source,
    )
    validate_motion(clip)
    return clip


def foot_floor_depth(qpos: np.ndarray, *, robot_mjcf: str | None = None) -> np.ndarray:
    """(T,) depth below the floor of the lowest sole capsule (:data:`~unilab.robots.g1.FOOT_GEOM_NAMES`)
    in each frame of a (T, nq) qpos trajectory, m; 0 where every sole is on or above the floor.

    The geometry is MuJoCo's: geom poses by ``mj_kinematics`` on the G1 scene with its floor, the
    signed sole-floor distance by ``mj_geomDistance`` (the distance ``unilab motion inspect`` reads
    from the contacts of the same geoms).

    Raises:
        ValueError: ``qpos`` is not (T, nq).
        MotionFormatError: the model has none of the sole capsules (key ``--lift-feet``).
    """
    model = g1.g1_model(with_floor=True, mjcf=robot_mjcf)
    qpos = np.asarray(qpos, dtype=np.float64)
    if qpos.ndim != 2 or qpos.shape[1] != model.nq:
        raise ValueError(f"qpos must have shape (T, nq={model.nq}), got {qpos.shape}")
    floor = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    soles = [g for g in (mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, n) for n in g1.FOOT_GEOM_NAMES) if g >= 0]
    if floor < 0 or not soles:
        raise MotionFormatError(None, "--lift-feet", f"expected the G1 model ({robot_mjcf or 'built-in'}) to have a "
                                f"'floor' geom and the sole capsules {list(g1.FOOT_GEOM_NAMES)}; it lacks them")
    data = mujoco.MjData(model)
    depth = np.zeros(qpos.shape[0])
    fromto = np.zeros(6)
    for i, q in enumerate(qpos):
        data.qpos[:] = q
        mujoco.mj_kinematics(model, data)
        # distances above distmax come back as distmax; only negative ones (penetration) matter
        lowest = min(mujoco.mj_geomDistance(model, data, g, floor, 1.0, fromto) for g in soles)
        depth[i] = max(-lowest, 0.0)
    return depth


def lift_feet(qpos: np.ndarray, *, robot_mjcf: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Raise the root of every frame whose soles go into the floor by exactly that depth.

    Per frame, the root height (qpos column 2) is increased by :func:`foot_floor_depth`, so the
    lowest sole capsule touches the floor (signed distance 0) where it was below it; joints, the
    root's orientation and x, y, and every frame without penetration are unchanged. Bodies and
    velocities then follow by :func:`fk_motion`.

    Args:
        qpos: (T, nq) float root-and-joint trajectory (root position m, root quaternion wxyz).

    Returns:
        (the lifted (T, nq) float64 qpos, the (T,) lift per frame in m).

    Raises:
        ValueError, MotionFormatError: as :func:`foot_floor_depth`.
    """
    lift = foot_floor_depth(qpos, robot_mjcf=robot_mjcf)
    out = np.array(qpos, dtype=np.float64)
    out[:, 2] += lift
    return out, lift


def lift_clip_feet(clip: MotionClip, *, robot_mjcf: str | None = None) -> tuple[MotionClip, np.ndarray]:
    """:func:`lift_feet` on a clip's root (its ``pelvis`` body) and joints, then :func:`fk_motion`.

    Returns:
        (the clip with the clip's own joints and bodies, recomputed; the (T,) lift per frame, m).

    Raises:
        MotionFormatError: the clip lacks the pelvis body, a G1 joint or one of its bodies on the model.
    """
    from unilab.motion.inspect import clip_qpos

    qpos = clip_qpos(clip, _robot_model(robot_mjcf))
    lifted, lift = lift_feet(qpos, robot_mjcf=robot_mjcf)
    out = fk_motion(lifted, clip.fps, robot_mjcf=robot_mjcf, source=clip.source)
    return out.select(clip.joint_names, clip.body_names), lift


def _slerp(q0: np.ndarray, q1: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Row-wise spherical interpolation of (T, 4) unit quaternions by (T,) fractions."""
    dot = np.sum(q0 * q1, axis=1)
    q1 = np.where(dot[:, None] < 0.0, -q1, q1)  # shortest arc
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    small = theta < 1e-6
    sin = np.where(small, 1.0, np.sin(theta))
    w0 = np.where(small, 1.0 - s, np.sin((1.0 - s) * theta) / sin)
    w1 = np.where(small, s, np.sin(s * theta) / sin)
    out = w0[:, None] * q0 + w1[:, None] * q1
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def resample_qpos(qpos: np.ndarray, fps_in: float, fps_out: float) -> np.ndarray:
    """A (T, 7 + J) root-and-joint trajectory resampled from ``fps_in`` to ``fps_out``.

    Frames at ``k / fps_out`` for every k within the clip's duration ``(T - 1) / fps_in``: root
    position and joints interpolated linearly, the root quaternion (wxyz, columns 3:7) by slerp.
    """
    if fps_in <= 0 or fps_out <= 0:
        raise ValueError(f"frame rates must be positive, got fps_in={fps_in}, fps_out={fps_out}")
    qpos = np.asarray(qpos, dtype=np.float64)
    duration = (qpos.shape[0] - 1) / fps_in
    times = np.arange(int(np.floor(duration * fps_out + 1e-9)) + 1) / fps_out
    x = times * fps_in
    i0 = np.minimum(np.floor(x).astype(int), qpos.shape[0] - 2)
    s = x - i0
    out = (1.0 - s)[:, None] * qpos[i0] + s[:, None] * qpos[i0 + 1]
    out[:, 3:7] = _slerp(qpos[i0, 3:7], qpos[i0 + 1, 3:7], s)
    return out


QUAT_ORDERS: tuple[str, ...] = ("xyzw", "wxyz")
"""Orders a file's root quaternion may be read in (``--quat-order``)."""

QUAT_NORM_TOLERANCE = 1e-2
"""A root quaternion whose norm differs from 1 by more than this is refused, not normalised: it is
not a rotation the file meant (a wrong column, a scaled value). Rounding to 4 decimals stays far
below (at most about 1e-4)."""


def root_quat_wxyz(
    quat: np.ndarray,
    order: str,
    *,
    path: object,
    key: str,
    where: Callable[[int], str],
    layout_order: str,
) -> np.ndarray:
    """A file's root quaternions, checked, as unit wxyz.

    Refused: a norm further than :data:`QUAT_NORM_TOLERANCE` from 1, and a quaternion order that
    looks swapped: the root's up axis (z-component of its body z-axis, ``1 - 2(x² + y²)``) points
    downward in more than half the frames read in ``order``, and upward in more than half when read
    in the other order of :data:`QUAT_ORDERS`. For an upright root of heading (yaw) ψ, the wrong
    reading's up axis has z-component ``-cos ψ`` when wxyz data is read as xyzw, ``cos ψ`` when xyzw
    data is read as wxyz: the first is caught while the clip faces within 90° of +x (identity
    ``1,0,0,0`` included), the second while it faces more than 90° away; otherwise the wrong reading
    is an upright robot turned by a half-turn, which no check on the file alone can tell.

    Args:
        quat: (T, 4) as stored, in ``order``.
        order: ``"xyzw"`` or ``"wxyz"``.
        path, key: the file and the key named in messages.
        where: frame index -> how a message names it (``"row 3 (line 4)"``, ``"frame 3"``).
        layout_order: the order the file's layout documents (what a message says it stores).

    Returns:
        (T, 4) float64 unit quaternions wxyz.

    Raises:
        MotionFormatError: an unknown ``order`` (key ``--quat-order``), a quaternion far from unit
            norm (naming the first such frame), or an order that looks swapped (naming both).
    """
    if order not in QUAT_ORDERS:
        raise MotionFormatError(path, "--quat-order", f"expected {' or '.join(QUAT_ORDERS)}, got {order!r}")
    quat = np.asarray(quat, dtype=np.float64)
    norms = np.linalg.norm(quat, axis=1)
    off = np.flatnonzero(np.abs(norms - 1.0) > QUAT_NORM_TOLERANCE)
    if off.size:
        i = int(off[0])
        values = ", ".join(f"{v:g}" for v in quat[i])
        raise MotionFormatError(
            path, key, f"expected unit quaternions (|norm - 1| <= {QUAT_NORM_TOLERANCE:g}), {where(i)} has norm "
            f"{norms[i]:.4g} ({order} {values}); {off.size} of {len(quat)} frames are off",
        )  # fmt: skip
    wxyz = quat[:, [3, 0, 1, 2]] if order == "xyzw" else quat
    other = "wxyz" if order == "xyzw" else "xyzw"
    swapped = quat if order == "xyzw" else quat[:, [3, 0, 1, 2]]  # wxyz as if stored in `other`

    def up_z(q: np.ndarray) -> np.ndarray:  # q: wxyz; z-component of the body z-axis in the world
        return 1.0 - 2.0 * (q[:, 1] ** 2 + q[:, 2] ** 2) / np.sum(q**2, axis=1)

    down, up_if_swapped = int(np.sum(up_z(wxyz) < 0.0)), int(np.sum(up_z(swapped) > 0.0))
    t = len(quat)
    if 2 * down > t and 2 * up_if_swapped > t:
        fix = (f"the file format expects {layout_order}: reorder the quaternion columns or pass --quat-order "
               f"{other}" if order == layout_order else f"drop --quat-order {order} (the file format expects "
               f"{layout_order})")
        raise MotionFormatError(
            path, key, f"the root quaternion looks like {other}, not {order}: read as {order} the robot is upside "
            f"down (its up axis points down) in {down} of {t} frames, read as {other} it is upright in "
            f"{up_if_swapped}; {fix}",
        )  # fmt: skip
    return wxyz / norms[:, None]
