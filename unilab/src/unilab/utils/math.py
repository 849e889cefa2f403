"""Quaternion and frame helpers (torch, batched). Quaternions are wxyz, as MuJoCo stores them."""

from __future__ import annotations

import functools

import torch


Parts = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
"""A quaternion batch as its (w, x, y, z) components, four broadcastable tensors (struct of
arrays): products of contiguous components run vectorized, where the components of a (..., 4)
tensor are strided and its result needs a stack."""

Vec3 = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
"""A batch of 3-vectors as its (x, y, z) components, three broadcastable tensors (as :data:`Parts`)."""

# 0-dim float32 constants for the per-step helpers below: a Python number in a tensor op is first
# copied into a tensor of the operand's dtype (a cast op per call); a 0-dim tensor of the same
# value takes part in the op as that number would (it does not widen the result's dtype), so
# the results are the same, bit for bit, with one op fewer.
_HALF = torch.tensor(0.5, dtype=torch.float32)
_ONE = torch.tensor(1.0, dtype=torch.float32)
_TWO = torch.tensor(2.0, dtype=torch.float32)


def quat_rotate_inverse(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate world vectors into the frame of ``q``: R(q)^T v.

    Args:
        q: (..., 4) unit quaternions, wxyz.
        v: (..., 3) vectors in the world frame.

    Returns:
        (..., 3) the vectors expressed in the body frame.
    """
    w, xyz = q[..., :1], q[..., 1:]
    t = _TWO * torch.cross(xyz, v, dim=-1)
    return v - w * t + torch.cross(xyz, t, dim=-1)


def quat_rotate(q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Rotate body-frame vectors into the world frame: R(q) v. Shapes as quat_rotate_inverse."""
    w, xyz = q[..., :1], q[..., 1:]
    t = _TWO * torch.cross(xyz, v, dim=-1)
    return v + w * t + torch.cross(xyz, t, dim=-1)


def cross_parts(a: Vec3, b: Vec3) -> Vec3:
    """``torch.cross(a, b, dim=-1)`` on (x, y, z) components, bit for bit: torch.cross rounds each
    component once after a fused multiply-add, ``a1 b2 - a2 b1 = fma(a1, b2, -(a2 b1))``, which
    ``addcmul`` reproduces (``(-a2) b1 = -(a2 b1)`` exactly)."""
    return _cross_parts(a, tuple(-c for c in a), b)


def _cross_parts(a: Vec3, neg_a: Vec3, b: Vec3) -> Vec3:
    """:func:`cross_parts` with ``-a`` given (a rotation negates its quaternion's vector once)."""
    ax, ay, az = a
    nx, ny, nz = neg_a
    bx, by, bz = b
    return torch.addcmul(nz * by, ay, bz), torch.addcmul(nx * bz, az, bx), torch.addcmul(ny * bx, ax, by)


def quat_rotate_parts(q: Parts, v: Vec3, inverse: bool = False) -> Vec3:
    """:func:`quat_rotate` (R(q) v), or with ``inverse`` :func:`quat_rotate_inverse` (R(q)^T v),
    on components: the same float operations, so each component equals theirs bit for bit.

    Args:
        q: (w, x, y, z) unit quaternion components, broadcastable against ``v``'s.
        v: (x, y, z) vector components, e.g. (N, B) or (B, N) float32 each.

    Returns:
        (x, y, z) the rotated vectors' components, each of the broadcast shape.
    """
    w, x, y, z = q
    u, neg_u = (x, y, z), (-x, -y, -z)
    t = tuple(_TWO * c for c in _cross_parts(u, neg_u, v))
    c = _cross_parts(u, neg_u, t)
    if inverse:
        return tuple(vi - w * ti + ci for vi, ti, ci in zip(v, t, c))
    return tuple(vi + w * ti + ci for vi, ti, ci in zip(v, t, c))


def quat_mul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Hamilton product a ⊗ b of (..., 4) wxyz quaternions."""
    return torch.stack(quat_mul_parts(a.unbind(-1), b.unbind(-1)), dim=-1)


def quat_parts(q: torch.Tensor) -> Parts:
    """(w, x, y, z), each (...,) contiguous, of (..., 4) wxyz quaternions (one copy)."""
    return q.movedim(-1, 0).contiguous().unbind(0)


def quat_mul_parts(a: Parts, b: Parts) -> Parts:
    """:func:`quat_mul` on (w, x, y, z) components (broadcast against each other): the same float
    operations, so each component equals :func:`quat_mul`'s bit for bit."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


# Stacked quaternions: a (4, ...) tensor of w, x, y, z along dim 0 (its unbind(0) is a Parts).
# A product of stacked quaternions multiplies all 16 pairs of components in one op and adds them
# in three, where the components' form takes 28 ops; each component is the same sum, term by
# term and in the same order, with a subtraction as the addition of the negated term (equal in
# IEEE arithmetic, signed zeros included), so the results equal quat_mul's bit for bit.
_QMUL_INDEX = (0, 1, 2, 3, 1, 0, 3, 2, 2, 3, 0, 1, 3, 2, 1, 0)
"""Component c of a ⊗ b is the sum over j of sign[c][j] a_j b_{index[4c + j]} (quat_mul_parts)."""
_QMUL_SIGN = ((1, -1, -1, -1), (1, 1, 1, -1), (1, -1, 1, 1), (1, 1, -1, 1))
# rot6d_from_parts' six entries 2 (p_i ± q_i) (and 1 - that for entries 0 and 3) from the
# products p_i = a_i a'_i and q_i = b_i b'_i of these components (w 0, x 1, y 2, z 3):
# yy+zz, xy-wz, xy+wz, xx+zz, xz-wy, yz+wx
_ROT6D_INDEX = ((2, 1, 1, 1, 1, 2), (2, 2, 2, 1, 3, 3), (3, 0, 0, 3, 0, 0), (3, 3, 3, 3, 2, 1))
_ROT6D_SIGN = (1, -1, 1, 1, -1, 1)


@functools.lru_cache(maxsize=64)
def _stacked_constants(kind: str, dtype: torch.dtype, device: torch.device, ndim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(index int64, sign of ``dtype`` shaped to broadcast against a stacked operand of ``ndim``
    dims) of :func:`quat_mul_stacked` (``kind`` "mul", "conj_a" or "conj_b": with the first or
    the second operand conjugated, the terms of its x, y, z negated) or
    :func:`rot6d_from_stacked` ("rot6d") on ``device``, made once."""
    rest = (1,) * (ndim - 1)
    if kind in ("mul", "conj_a", "conj_b"):
        index = torch.tensor(_QMUL_INDEX, device=device)
        sign = torch.tensor(_QMUL_SIGN, dtype=dtype, device=device)
        if kind == "conj_a":  # a_j with j > 0 negated
            sign = sign * torch.tensor((1, -1, -1, -1), dtype=dtype, device=device)
        elif kind == "conj_b":  # b_i with i > 0 negated
            sign = sign * torch.where(index.view(4, 4) == 0, 1, -1).to(dtype)
        sign = sign.view((4, 4) + rest)
    else:
        index = torch.tensor(_ROT6D_INDEX, device=device).flatten()
        sign = torch.tensor(_ROT6D_SIGN, dtype=dtype, device=device).view((6,) + rest)
    return index, sign


def quat_mul_stacked(
    a: torch.Tensor, b: torch.Tensor, conjugate_a: bool = False, conjugate_b: bool = False
) -> torch.Tensor:
    """:func:`quat_mul` of stacked quaternions, bit for bit (see the note above).

    Args:
        a, b: (4, ...) w, x, y, z along dim 0, broadcastable against each other (e.g. (4, N, 1)
            against (4, N, B)), same float dtype and device.
        conjugate_a, conjugate_b: multiply conj(a) (w, -x, -y, -z) instead of a, or conj(b)
            instead of b (not both); equal to conjugating first (a negated factor negates its
            product exactly).

    Returns:
        (4, ...) a ⊗ b (or with the conjugate), stacked, contiguous.

    Raises:
        ValueError: both operands conjugated.
    """
    if conjugate_a and conjugate_b:
        raise ValueError("quat_mul_stacked: conjugate one operand at most")
    kind = "conj_a" if conjugate_a else "conj_b" if conjugate_b else "mul"
    index, sign = _stacked_constants(kind, a.dtype, a.device, a.dim())
    terms = (a.unsqueeze(0) * sign) * b.index_select(0, index).unflatten(0, (4, 4))  # (4, 4, ...)
    return terms[:, 0] + terms[:, 1] + terms[:, 2] + terms[:, 3]


def rot6d_from_stacked(q: torch.Tensor) -> torch.Tensor:
    """:func:`rot6d_from_parts` of (4, ...) stacked unit quaternions, bit for bit: the six entries
    from two products of gathered components each (one op per product for all six), (..., 6)
    contiguous."""
    index, sign = _stacked_constants("rot6d", q.dtype, q.device, q.dim())
    a, a2, b, b2 = q.index_select(0, index).unflatten(0, (4, 6)).unbind(0)
    d = _TWO * (a * a2 + b * (b2 * sign))  # (6, ...)
    ends = d[0:4:3]  # entries 0 and 3 are 1 - 2 (...)
    torch.sub(_ONE, ends, out=ends)
    return d.movedim(0, -1).contiguous()


def quat_error_magnitude_stacked(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """:func:`quat_error_magnitude` of (4, ...) stacked quaternions, (...,) rad, bit for bit."""
    d = quat_mul_stacked(a, b, conjugate_a=True)
    # the norm's input laid out as quat_error_magnitude_parts' stack: (..., 3) contiguous
    xyz = d[1:].movedim(0, -1).contiguous()
    return _TWO * torch.atan2(torch.linalg.vector_norm(xyz, dim=-1), d[0].abs())


def quat_conjugate_parts(q: Parts) -> Parts:
    """:func:`quat_conjugate` on (w, x, y, z) components."""
    w, x, y, z = q
    return w, -x, -y, -z


def quat_from_yaw(yaw: torch.Tensor) -> torch.Tensor:
    """(...,) yaw angles, rad -> (..., 4) wxyz quaternions about world z."""
    half = _HALF * yaw
    zeros = torch.zeros_like(half)
    return torch.stack((torch.cos(half), zeros, zeros, torch.sin(half)), dim=-1)


def projected_gravity(q: torch.Tensor) -> torch.Tensor:
    """(..., 3) unit gravity direction (0, 0, -1) in the frame of the (..., 4) wxyz quaternion q.

    :func:`quat_rotate_inverse` of (0, 0, -1) written out: (2(wy - zx), -2(wx + zy),
    2(x^2 + y^2) - 1), in the same float operations (x and y components bit for bit; z rounded
    once in ``addcmul`` as ``torch.cross`` rounds it), with 7 tensor ops instead of 12.
    """
    w, x, y, z = q.unbind(-1)
    x2, y2 = _TWO * x, _TWO * y
    return torch.stack(
        (w * y2 - z * x2, -(w * x2) - z * y2, torch.addcmul(y * y2, x, x2) - _ONE), dim=-1
    )


def projected_gravity_z(q: torch.Tensor) -> torch.Tensor:
    """(...,) the z component of :func:`projected_gravity` alone, in its float operations (bit
    for bit): ``2(x^2 + y^2) - 1`` for (..., 4) wxyz quaternions q."""
    _, x, y, _ = q.unbind(-1)
    x2, y2 = _TWO * x, _TWO * y
    return torch.addcmul(y * y2, x, x2) - _ONE


def quat_conjugate(q: torch.Tensor) -> torch.Tensor:
    """(..., 4) conjugate (= inverse for unit quaternions) of wxyz quaternions."""
    return torch.cat((q[..., :1], -q[..., 1:]), dim=-1)


def yaw_quat(q: torch.Tensor) -> torch.Tensor:
    """(..., 4) the yaw-only part of wxyz quaternions (rotation about world z)."""
    w, x, y, z = q.unbind(-1)
    yaw = torch.atan2(_TWO * (w * z + x * y), _ONE - _TWO * (y * y + z * z))
    return quat_from_yaw(yaw)


def quat_error_magnitude(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(...,) angle, rad in [0, pi], of the rotation between wxyz quaternions a and b."""
    return quat_error_magnitude_parts(a.unbind(-1), b.unbind(-1))


def quat_error_magnitude_parts(a: Parts, b: Parts) -> torch.Tensor:
    """:func:`quat_error_magnitude` of quaternions given as (w, x, y, z) components, (...,) rad."""
    dw, dx, dy, dz = quat_mul_parts(quat_conjugate_parts(a), b)
    return _TWO * torch.atan2(torch.linalg.vector_norm(torch.stack((dx, dy, dz), dim=-1), dim=-1), dw.abs())


def matrix_from_quat(q: torch.Tensor) -> torch.Tensor:
    """(..., 3, 3) rotation matrices of (..., 4) unit wxyz quaternions."""
    w, x, y, z = q.unbind(-1)
    return torch.stack(
        (
            1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
        ),
        dim=-1,
    ).reshape(q.shape[:-1] + (3, 3))  # fmt: skip


def rot6d_from_quat(q: torch.Tensor) -> torch.Tensor:
    """(..., 6) the first two columns of the rotation matrices of (..., 4) unit wxyz quaternions,
    row by row (m00, m01, m10, m11, m20, m21): ``matrix_from_quat(q)[..., :2]`` flattened, in
    the same float operations (bit for bit), without the third column and with each product
    computed once.
    """
    return rot6d_from_parts(q.unbind(-1))


def rot6d_from_parts(q: Parts) -> torch.Tensor:
    """:func:`rot6d_from_quat` of quaternions given as (w, x, y, z) components: (..., 6)."""
    w, x, y, z = q
    xx, yy, zz = x * x, y * y, z * z
    xy, xz, yz, wx, wy, wz = x * y, x * z, y * z, w * x, w * y, w * z
    return torch.stack(
        (_ONE - _TWO * (yy + zz), _TWO * (xy - wz), _TWO * (xy + wz),
         _ONE - _TWO * (xx + zz), _TWO * (xz - wy), _TWO * (yz + wx)),
        dim=-1,
    )


def quat_from_euler_xyz(roll: torch.Tensor, pitch: torch.Tensor, yaw: torch.Tensor) -> torch.Tensor:
    """(..., 4) wxyz quaternion of extrinsic x-y-z Euler angles (R = Rz(yaw) Ry(pitch) Rx(roll))."""
    return torch.stack(quat_from_euler_xyz_parts(roll, pitch, yaw), dim=-1)


def quat_from_euler_xyz_parts(roll: torch.Tensor, pitch: torch.Tensor, yaw: torch.Tensor) -> Parts:
    """:func:`quat_from_euler_xyz` as its (w, x, y, z) components, each of the angles' shape,
    float as the angles (rad). Each product of the yaw and roll factors is computed once and
    used in both components that need it (``cy cr cp`` and ``cy cr sp`` share ``cy cr``), the
    same float operations as multiplying out each term."""
    cr, sr = torch.cos(_HALF * roll), torch.sin(_HALF * roll)
    cp, sp = torch.cos(_HALF * pitch), torch.sin(_HALF * pitch)
    cy, sy = torch.cos(_HALF * yaw), torch.sin(_HALF * yaw)
    cycr, sysr, cysr, sycr = cy * cr, sy * sr, cy * sr, sy * cr
    return (
        cycr * cp + sysr * sp,
        cysr * cp - sycr * sp,
        cycr * sp + sysr * cp,
        sycr * cp - cysr * sp,
    )
