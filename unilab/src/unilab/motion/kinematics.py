"""Body poses and velocities of a qpos trajectory by MuJoCo forward kinematics on our G1.

The root and joint trajectory is the only input; every body array of a clip is recomputed on the
model the env simulates (:func:`unilab.robots.g1.g1_model`), so a clip retargeted for another G1
description still matches ours body by body. Velocities: qvel by central differences of qpos
(``mj_differentiatePos``, one-sided at the ends; BeyondMimic's ``csv_to_npz`` uses
``torch.gradient`` the same way), then each body's world-frame velocity from MuJoCo
(``mj_objectVelocity`` of the body frame), which is exactly what the backend's body sensors report
for that qpos and qvel.
"""

from __future__ import annotations

import mujoco
import numpy as np

from unilab.motion.clip import MotionClip, validate_motion
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
