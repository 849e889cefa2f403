"""Named, batched views of one floating-base robot on a :class:`unisim.SimBackend`.

The env compiles the scene's MJCF once (metadata only: joint addresses, limits, body ids); every
per-step quantity comes from the backend's tensors. Frames: ``_w`` world, ``_b`` base (pelvis).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
import torch

from unilab.utils.math import Parts, projected_gravity, quat_rotate_inverse
from unisim import SimBackend


@dataclass(frozen=True)
class RobotMeta:
    """Static facts read from the compiled model.

    Attributes:
        joint_names: the controlled hinge joints, in action order.
        qpos_adr: (J,) int64 indices of those joints in qpos.
        qvel_adr: (J,) int64 indices in qvel.
        actuator_ids: (J,) int64 actuator driving each joint (ctrl index).
        joint_limits: (J, 2) float32 hard limits, rad.
        default_qpos: (nq,) float32 qpos of keyframe 0.
        dt: physics timestep, s.
        body_names: every body of the model, in model order (index = MuJoCo body id).
        geom_names: every geom of the model, in model order (unnamed geoms are ``""``).
        geom_body: the body id of every geom, in model order.
        geom_collides: whether each geom takes part in collisions (``contype`` or
            ``conaffinity`` nonzero), in model order.
    """

    joint_names: tuple[str, ...]
    qpos_adr: torch.Tensor
    qvel_adr: torch.Tensor
    actuator_ids: torch.Tensor
    joint_limits: torch.Tensor
    default_qpos: torch.Tensor
    dt: float
    body_names: tuple[str, ...] = ()
    geom_names: tuple[str, ...] = ()
    geom_body: tuple[int, ...] = ()
    geom_collides: tuple[bool, ...] = ()

    @classmethod
    def from_mjcf(cls, mjcf: str, joint_names: tuple[str, ...]) -> "RobotMeta":
        """Read the metadata of ``joint_names`` from the MJCF text.

        Raises:
            ValueError: a joint is missing from the model or has no actuator, naming it.
        """
        model = mujoco.MjModel.from_xml_string(mjcf)
        names = [model.joint(i).name for i in range(model.njnt)]
        missing = [j for j in joint_names if j not in names]
        if missing:
            raise ValueError(f"robot model lacks joints {missing}; it has {names}")
        jids = [model.joint(j).id for j in joint_names]
        act_of_joint = {int(model.actuator_trnid[a, 0]): a for a in range(model.nu)}
        no_act = [j for j, jid in zip(joint_names, jids) if jid not in act_of_joint]
        if no_act:
            raise ValueError(f"joints {no_act} have no actuator in the robot model")
        default = model.key_qpos[0] if model.nkey else model.qpos0
        return cls(
            joint_names=tuple(joint_names),
            qpos_adr=torch.as_tensor(model.jnt_qposadr[jids], dtype=torch.long),
            qvel_adr=torch.as_tensor(model.jnt_dofadr[jids], dtype=torch.long),
            actuator_ids=torch.as_tensor([act_of_joint[j] for j in jids], dtype=torch.long),
            joint_limits=torch.as_tensor(np.asarray(model.jnt_range[jids]), dtype=torch.float32),
            default_qpos=torch.as_tensor(np.asarray(default), dtype=torch.float32),
            dt=float(model.opt.timestep),
            body_names=tuple(model.body(i).name for i in range(model.nbody)),
            geom_names=tuple(model.geom(i).name for i in range(model.ngeom)),
            geom_body=tuple(int(b) for b in model.geom_bodyid),
            geom_collides=tuple(bool(t or a) for t, a in zip(model.geom_contype, model.geom_conaffinity)),
        )

    def body_id(self, name: str) -> int:
        """MuJoCo id of body ``name`` (the row of per-body model fields such as ``body_ipos``).

        Raises:
            KeyError: unknown body, listing the model's bodies.
        """
        try:
            return self.body_names.index(name)
        except ValueError:
            raise KeyError(f"robot model has no body {name!r}; bodies: {list(self.body_names)}") from None

    def geom_ids(self, names: tuple[str, ...] | list[str]) -> list[int]:
        """MuJoCo ids of the geoms ``names`` (rows of per-geom fields such as ``geom_friction``).

        Raises:
            KeyError: geoms missing from the model, naming them.
        """
        missing = [n for n in names if n not in self.geom_names]
        if missing:
            raise KeyError(f"robot model has no geoms {missing}")
        return [self.geom_names.index(n) for n in names]

    def collision_geom_ids(self, body_names: tuple[str, ...] | list[str]) -> list[int]:
        """MuJoCo ids of the collision geoms (``contype`` or ``conaffinity`` nonzero) of the bodies
        ``body_names``, whatever the geoms are called, in model order.

        Raises:
            KeyError: a body is missing from the model, or has no collision geom; naming it.
        """
        out = []
        for name in body_names:
            b = self.body_id(name)
            ids = [g for g, (body, hit) in enumerate(zip(self.geom_body, self.geom_collides)) if body == b and hit]
            if not ids:
                raise KeyError(f"robot body {name!r} has no collision geom")
            out += ids
        return sorted(out)


class RobotView:
    """Per-step robot quantities, refreshed after every backend step or reset.

    Attributes (all float32 on the backend's device):
        joint_pos: (N, J) rad; joint_vel: (N, J) rad/s.
        base_pos_w: (N, 3) m; base_quat_w: (N, 4) wxyz.
        base_lin_vel_b: (N, 3) m/s and base_ang_vel_b: (N, 3) rad/s in the base frame.
        projected_gravity_b: (N, 3) unit gravity direction in the base frame.
        body_pos_w, body_quat_w, body_lin_vel_w, body_ang_vel_w: (N, B, ·) for the backend's
            tracked bodies.
        body_quat_stacked: ``body_quat_w`` as a contiguous (4, N, B) tensor, w, x, y, z along
            dim 0 (a copy); body_quat_parts: its (N, B) components.
        default_joint_pos: (J,) joint positions of keyframe 0, rad.
        encoder_bias: (N, J) rad added to the joint positions the policy observes (a miscalibrated
            encoder); zero unless a domain-randomization event draws it (mjlab ``encoder_bias``).
    """

    def __init__(self, backend: SimBackend, meta: RobotMeta) -> None:
        self.backend = backend
        self.meta = meta
        self.default_joint_pos = meta.default_qpos[meta.qpos_adr].to(backend.device)
        self.encoder_bias = torch.zeros(
            backend.num_envs, len(meta.joint_names), device=backend.device
        )
        self._qpos_sel = _as_slice(meta.qpos_adr)
        self._qvel_sel = _as_slice(meta.qvel_adr)
        self._views_of: tuple = (None, None, None)  # the backend tensors the views were taken of
        self.refresh()

    def body_index(self, name: str) -> int:
        """Index of a tracked body in the ``body_*`` tensors. Raises KeyError listing them."""
        try:
            return self.backend.body_names.index(name)
        except ValueError:
            raise KeyError(f"body {name!r} is not tracked; tracked: {self.backend.body_names}") from None

    def refresh(self) -> None:
        """Re-read every quantity from the backend.

        Joint quantities are views of the backend's tensors when the joints' addresses are
        contiguous (the G1: qpos 7..35), gathered copies otherwise; either way they are only
        valid until the next backend step or reset (clone to keep a snapshot). The base-frame
        velocity, gravity and the divergence flags are computed on first use after each refresh
        (the refresh after a reset is often not read before the next step's). When the backend
        hands out the same state tensors as at the last refresh (the MuJoCo backend's views of
        its packed buffer, refilled in place), the views taken of them then are kept.
        """
        self._base_lin_vel_b: torch.Tensor | None = None
        self._projected_gravity_b: torch.Tensor | None = None
        self._diverged: torch.Tensor | None = None
        self._body_quat_stacked: torch.Tensor | None = None
        qpos, qvel = self.backend.qpos, self.backend.qvel
        body = self.backend.body_state()
        if (
            qpos is self._views_of[0] and qvel is self._views_of[1] and body is self._views_of[2]
            and isinstance(self._qpos_sel, slice) and isinstance(self._qvel_sel, slice)
        ):  # fmt: skip
            return
        self._views_of = (qpos, qvel, body)
        self.joint_pos = qpos[:, self._qpos_sel]
        self.joint_vel = qvel[:, self._qvel_sel]
        self.base_pos_w = qpos[:, 0:3]
        self.base_quat_w = qpos[:, 3:7]
        # Free joint: qvel[0:3] is the world-frame linear velocity, qvel[3:6] the local angular one.
        self._base_lin_vel_w = qvel[:, 0:3]
        self.base_ang_vel_b = qvel[:, 3:6]
        pos, quat, lin, ang = body
        self.body_pos_w, self.body_quat_w = pos, quat
        self.body_lin_vel_w, self.body_ang_vel_w = lin, ang

    @property
    def diverged(self) -> torch.Tensor:
        """(N,) bool ``backend.diverged()`` on the env's device, read once per refresh (the
        termination term and the env's divergence containment share it)."""
        if self._diverged is None:
            self._diverged = self.backend.diverged().to(self.backend.device)
        return self._diverged

    @property
    def base_lin_vel_b(self) -> torch.Tensor:
        """(N, 3) float32 base linear velocity in the base frame, m/s."""
        if self._base_lin_vel_b is None:
            self._base_lin_vel_b = quat_rotate_inverse(self.base_quat_w, self._base_lin_vel_w)
        return self._base_lin_vel_b

    @property
    def body_quat_stacked(self) -> torch.Tensor:
        """:attr:`body_quat_w` as a contiguous (4, N, B) float32 tensor, w, x, y, z along dim 0,
        copied on first use after each refresh (quaternion products of stacked components run
        vectorized, all components in one op; :func:`unilab.utils.math.quat_mul_stacked`)."""
        if self._body_quat_stacked is None:
            self._body_quat_stacked = self.body_quat_w.movedim(-1, 0).contiguous()
        return self._body_quat_stacked

    @property
    def body_quat_parts(self) -> Parts:
        """:attr:`body_quat_w` as contiguous w, x, y, z components, (N, B) float32 each: the
        rows of :attr:`body_quat_stacked`."""
        return self.body_quat_stacked.unbind(0)

    @property
    def projected_gravity_b(self) -> torch.Tensor:
        """(N, 3) float32 unit gravity direction in the base frame."""
        if self._projected_gravity_b is None:
            self._projected_gravity_b = projected_gravity(self.base_quat_w)
        return self._projected_gravity_b


def _as_slice(index: torch.Tensor) -> slice | torch.Tensor:
    """``slice(a, a + n)`` when ``index`` is ``a, a+1, ..., a+n-1`` (a view), else ``index``."""
    n = len(index)
    if n and torch.equal(index, torch.arange(int(index[0]), int(index[0]) + n)):
        return slice(int(index[0]), int(index[0]) + n)
    return index
