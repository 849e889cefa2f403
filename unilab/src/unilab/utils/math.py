"""Quaternion and frame helpers (torch, batched). Quaternions are wxyz, as MuJoCo stores them."""

from __future__ import annotations

import torch


def quat_rotate_inverse(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate world vectors into the frame of ``q``: R(q)^T v.

    Args:
        q: (..., 4) unit quaternions, wxyz.
        v: (..., 3) vectors in the world frame.

    Returns:
        (..., 3) the vectors expressed in the body frame.
    """
    w, xyz = q[..., :1], q[..., 1:]
    t = 2.0 * torch.cross(xyz, v, dim=-1)
    return v - w * t + torch.cross(xyz, t, dim=-1)


def quat_rotate(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate body-frame vectors into the world frame: R(q) v. Shapes as quat_rotate_inverse."""
    w, xyz = q[..., :1], q[..., 1:]
    t = 2.0 * torch.cross(xyz, v, dim=-1)
    return v + w * t + torch.cross(xyz, t, dim=-1)


def quat_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamilton product a ⊗ b of (..., 4) wxyz quaternions."""
    aw, ax, ay, az = a.unbind(-1)
    bw, bx, by, bz = b.unbind(-1)
    return torch.stack(
        (
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ),
        dim=-1,
    )


def quat_from_yaw(yaw: torch.Tensor) -> torch.Tensor:
    """(...,) yaw angles, rad -> (..., 4) wxyz quaternions about world z."""
    half = 0.5 * yaw
    zeros = torch.zeros_like(half)
    return torch.stack((torch.cos(half), zeros, zeros, torch.sin(half)), dim=-1)


def projected_gravity(q: torch.Tensor) -> torch.Tensor:
    """(..., 3) unit gravity direction (0, 0, -1) in the frame of the (..., 4) wxyz quaternion q."""
    g = torch.zeros(q.shape[:-1] + (3,), dtype=q.dtype, device=q.device)
    g[..., 2] = -1.0
    return quat_rotate_inverse(q, g)
