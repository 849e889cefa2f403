"""Event terms: ``f(env, env_ids, **params)`` applied at reset or on an interval."""

from __future__ import annotations

import torch

from unilab.utils.math import quat_from_yaw, quat_mul


def _uniform(env, n: int, lo: float, hi: float) -> torch.Tensor:
    return lo + (hi - lo) * torch.rand(n, device=env.device, generator=env.generator)


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
    qpos[:, 0] += _uniform(env, n, -xy, xy)
    qpos[:, 1] += _uniform(env, n, -xy, xy)
    qpos[:, 2] += _uniform(env, n, z[0], z[1])
    qpos[:, 3:7] = quat_mul(quat_from_yaw(_uniform(env, n, -yaw, yaw)), qpos[:, 3:7])
    env.backend.reset(env_ids, qpos=qpos)


def push_by_setting_velocity(
    env, env_ids: torch.Tensor, velocity_range: dict[str, tuple[float, float]]
) -> None:
    """Add U(range) to the base velocity (keys x, y, z m/s world; roll, pitch, yaw rad/s local)."""
    n = len(env_ids)
    qvel = env.backend.qvel[env_ids].clone()
    for i, key in enumerate(("x", "y", "z", "roll", "pitch", "yaw")):
        if key in velocity_range:
            lo, hi = velocity_range[key]
            qvel[:, i] += _uniform(env, n, lo, hi)
    env.backend.set_state(env_ids, qvel=qvel)
