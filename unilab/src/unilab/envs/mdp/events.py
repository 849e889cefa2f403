"""Event terms: ``f(env, env_ids, **params)`` applied at startup, at reset or on an interval.

Domain randomization goes through the backend's per-world model parameters
(:meth:`unisim.SimBackend.set_model_field`, which also runs ``mj_setConst`` for fields that need
it), so a backend without ``capabilities.randomization`` fails at startup with
:class:`unisim.CapabilityError`. Sources: mjlab ``envs/mdp/events.py`` and ``envs/mdp/dr``
(``geom_friction``, ``body_com_offset``, ``encoder_bias``), ``tasks/velocity/velocity_env_cfg.py``
(v1.6.0), with pushes at half its ranges.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch


_VELOCITY_KEYS = ("x", "y", "z", "roll", "pitch", "yaw")


def _uniform(env, shape, lo: float, hi: float) -> torch.Tensor:
    """U(lo, hi) float32 of ``shape`` from the env's generator."""
    if isinstance(shape, int):
        shape = (shape,)
    return lo + (hi - lo) * torch.rand(shape, device=env.device, generator=env.generator)


# ---------------------------------------------------------------- reset
def resets_backend(func):
    """Mark a reset event that begins with a full ``env.backend.reset(env_ids, ...)`` of its rows
    and reads no backend state before it. When such an event is the first reset event, the env
    skips its own keyframe ``backend.reset`` of the rows (the event's reset overwrites it: one
    ``mj_forward`` per reset instead of two, same state)."""
    func.resets_backend = True
    return func


@resets_backend
def reset_root_state_uniform(
    env,
    env_ids: torch.Tensor,
    xy: float = 0.5,
    yaw: float = 3.14159,
    z: tuple[float, float] = (0.0, 0.0),
) -> None:
    """Place the base at the default pose shifted by U(±xy) m in x and y, U(z) m in height, and
    turned by U(±yaw) rad about world z; joints at the default pose; zero velocity."""
    n = len(env_ids)
    qpos = env.meta.default_qpos.to(env.device).repeat(n, 1)
    # x, y, z and yaw in one draw of (4, n): the same numbers, in the same order, as four draws
    # of n from the generator; each row scaled as lo + (hi - lo) * u (float32, as _uniform)
    lo = torch.tensor([-xy, -xy, z[0], -yaw], device=env.device)
    width = torch.tensor([xy - -xy, xy - -xy, z[1] - z[0], yaw - -yaw], device=env.device)
    u = torch.rand((4, n), device=env.device, generator=env.generator).mul_(width[:, None]).add_(lo[:, None])
    qpos[:, 0:3] += u[0:3].T
    qpos[:, 3:7] = _yaw_times(u[3], qpos[:, 3:7])
    env.backend.reset(env_ids, qpos=qpos)


def _yaw_times(yaw: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """(n, 4) wxyz ``quat_mul(quat_from_yaw(yaw), q)`` for (n,) yaw angles (rad) and (n, 4) q,
    with the terms that the yaw quaternion's zero x and y components cancel left out: the same
    float operations on the other terms, so the same values (up to the sign of a zero
    component)."""
    half = 0.5 * yaw
    c, s = torch.cos(half), torch.sin(half)
    qw, qx, qy, qz = q.unbind(-1)
    return torch.stack((c * qw - s * qz, c * qx - s * qy, c * qy + s * qx, c * qz + s * qw), dim=-1)


# ---------------------------------------------------------------- interval
def push_by_setting_velocity(
    env, env_ids: torch.Tensor, velocity_range: Mapping[str, tuple[float, float]]
) -> None:
    """Add U(range) to the base velocity of rows ``env_ids`` only (keys x, y, z: m/s, world
    frame; roll, pitch, yaw: rad/s, base frame); positions are kept (mjlab
    ``push_by_setting_velocity``)."""
    unknown = set(velocity_range) - set(_VELOCITY_KEYS)
    if unknown:
        raise KeyError(f"velocity_range keys {sorted(unknown)} unknown; valid: {_VELOCITY_KEYS}")
    n = len(env_ids)
    qvel = env.backend.qvel[env_ids].clone()
    for i, key in enumerate(_VELOCITY_KEYS):
        if key in velocity_range:
            lo, hi = velocity_range[key]
            qvel[:, i] += _uniform(env, n, lo, hi)
    env.backend.set_state(env_ids, qvel=qvel)


# ---------------------------------------------------------------- domain randomization (startup)
def randomize_geom_friction(
    env, env_ids: torch.Tensor, friction_range: tuple[float, float], geom_names: Sequence[str] = (),
    body_names: Sequence[str] = (),
) -> None:
    """Give each row one sliding friction coefficient U(friction_range), shared by the geoms
    ``geom_names`` and every collision geom of the bodies ``body_names`` (mjlab
    ``dr.geom_friction`` with ``operation="abs"``, ``shared_random``).

    Writes ``geom_friction[:, geom, 0]``; torsional and rolling friction are kept. The scene gives
    the foot geoms contact priority over the floor, so their value is the contact's friction.
    """
    ids = sorted(set(env.meta.geom_ids(tuple(geom_names)) + env.meta.collision_geom_ids(tuple(body_names))))
    values = env.backend.model_field("geom_friction")[env_ids.cpu()].to(env.device)  # (k, ngeom, 3)
    mu = _uniform(env, len(env_ids), *friction_range)
    values[:, ids, 0] = mu[:, None]
    env.backend.set_model_field("geom_friction", env_ids, values)


def randomize_body_com(
    env, env_ids: torch.Tensor, body_names: Sequence[str], offset_range: Sequence[float]
) -> None:
    """Shift the centre of mass (``body_ipos``, body frame) of ``body_names`` by
    U(±offset_range[i]) m along axis i, per row (mjlab ``dr.body_com_offset``, ``operation="add"``;
    torso ±0.025, ±0.025, ±0.03 m). The backend recomputes the derived constants (set_const)."""
    ids = [env.meta.body_id(b) for b in body_names]
    values = env.backend.model_field("body_ipos")[env_ids.cpu()].to(env.device)  # (k, nbody, 3)
    half = torch.as_tensor(offset_range, dtype=torch.float32, device=env.device)
    for i in ids:
        values[:, i] += (2.0 * _uniform(env, (len(env_ids), 3), 0.0, 1.0) - 1.0) * half
    env.backend.set_model_field("body_ipos", env_ids, values)


def randomize_encoder_bias(env, env_ids: torch.Tensor, bias_range: tuple[float, float]) -> None:
    """Draw a per-row, per-joint encoder bias U(bias_range) rad into ``env.robot.encoder_bias``;
    biased joint-position observations add it (mjlab ``dr.encoder_bias``, ±0.015 rad)."""
    bias = env.robot.encoder_bias
    bias[env_ids] = _uniform(env, (len(env_ids), bias.shape[1]), *bias_range)
