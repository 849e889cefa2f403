"""The simulator backend contract: the only surface a UniLab env may touch.

A backend steps ``num_envs`` worlds of one MJCF model and exchanges torch tensors with the env.
All tensors are ``float32`` on :attr:`SimBackend.device` unless stated; shapes are given as
``(num_envs, ...)``. Units are SI: m, rad, s, N, N·m. Quaternions are ``wxyz``.

Two tensor kinds exist (:class:`Capabilities.tensor_kind`):

- ``"host_bridge"``: physics runs on the CPU; the CPU tensors the backend returns are the
  authoritative state, refreshed after every :meth:`SimBackend.step` / :meth:`SimBackend.reset`.
- ``"device_native"``: physics runs on an accelerator and the tensors live there.

A backend declares :data:`CONTRACT_VERSION` as the version it implements; the registry refuses
a backend built for another version.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import ClassVar, Literal, Sequence

import torch

CONTRACT_VERSION: int = 1
"""Version of this contract. Bumped on any incompatible change to :class:`SimBackend`."""


class CapabilityError(RuntimeError):
    """Raised when an env asks a backend for something its :class:`Capabilities` exclude."""


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do. Anything not declared ``True`` fails closed with CapabilityError."""

    tensor_kind: Literal["host_bridge", "device_native"]
    selected_reset: bool = True
    """``reset(env_ids, ...)`` resets only the given rows in one call."""
    randomization: bool = False
    """``set_model_field`` gives per-world model parameters (domain randomization)."""
    rendering: bool = False
    deterministic: bool = False
    """Same seed, model, state and controls give bit-identical trajectories at any thread count."""


@dataclass(frozen=True)
class SimSpec:
    """What an env asks a backend to build.

    Attributes:
        mjcf: the MJCF XML text of the whole scene (robot, floor, options, keyframes).
        num_envs: number of parallel worlds (nworld), >= 1.
        nthread: physics threads; 0 means one per available CPU core.
        decimation: physics steps per env step (the policy period is ``decimation * dt``).
        tracked_bodies: body names whose world pose and velocity :meth:`SimBackend.body_state`
            returns, in this order.
        device: where the returned tensors live (``"cpu"`` for a host-bridge backend).
        cpu_ids: optional CPU cores to pin the physics threads to (Linux).
        options: backend-specific settings (see each backend).
        reset_kinematics_only: what :meth:`SimBackend.reset` must compute for the reset rows.
            False (default): everything, at the reset state. True: positions and velocities
            and what derives from them (body poses and velocities, position- and
            velocity-dependent sensors); the acceleration-dependent values (contact forces,
            acceleration-stage sensors such as touch or contact) may stay unset until the rows'
            next step, whose trajectory is the same either way. For an env that reads none of
            those before the next step; a backend may compute them anyway.
    """

    mjcf: str
    num_envs: int
    nthread: int = 0
    decimation: int = 4
    tracked_bodies: Sequence[str] = ()
    device: str = "cpu"
    cpu_ids: Sequence[int] | None = None
    options: dict = field(default_factory=dict)
    reset_kinematics_only: bool = False


class SimBackend(abc.ABC):
    """A batch of ``num_envs`` MuJoCo-style worlds, torch tensors in and out.

    Construction: ``Backend(spec: SimSpec)``. After construction every world is at the model's
    first keyframe (or its defaults when it has none) with forward kinematics computed.

    Attributes (set by the constructor):
        num_envs: worlds in the batch.
        device: torch device of every tensor the backend returns.
        dt: physics timestep, s.
        nq, nv, nu: sizes of qpos, qvel and ctrl.
        joint_names: names of the model's joints in model order (the free joint included).
        actuator_names: names of the actuators in ctrl order.
        sensor_names: names of the sensors; :meth:`sensor` takes them.
        body_names: names of ``spec.tracked_bodies`` in the order :meth:`body_state` uses.
    """

    contract_version: ClassVar[int] = CONTRACT_VERSION
    capabilities: ClassVar[Capabilities]

    num_envs: int
    device: torch.device
    dt: float
    nq: int
    nv: int
    nu: int
    joint_names: list[str]
    actuator_names: list[str]
    sensor_names: list[str]
    body_names: list[str]

    # ---------------------------------------------------------------- stepping
    @abc.abstractmethod
    def step(self, ctrl: torch.Tensor, nstep: int | None = None) -> None:
        """Hold ``ctrl`` for ``nstep`` physics steps (default ``spec.decimation``).

        Args:
            ctrl: (num_envs, nu) float32 actuator controls (for position actuators: joint
                targets in rad).
            nstep: physics steps, >= 1.

        Raises:
            ValueError: wrong shape, dtype or non-finite values, naming the expected shape.
        """

    @abc.abstractmethod
    def reset(
        self,
        env_ids: torch.Tensor,
        qpos: torch.Tensor | None = None,
        qvel: torch.Tensor | None = None,
    ) -> None:
        """Reset the rows ``env_ids`` in one transaction and recompute their kinematics.

        Rows are set to the first keyframe, then ``qpos`` / ``qvel`` (when given) overwrite it;
        ctrl is set to the keyframe's ctrl, time to 0 and the solver warm start is cleared.
        What is recomputed besides the kinematics: :attr:`SimSpec.reset_kinematics_only`.

        Args:
            env_ids: (k,) int64 row indices in [0, num_envs).
            qpos: (k, nq) float32 or None.
            qvel: (k, nv) float32 or None.

        Raises:
            IndexError: a row outside [0, num_envs).
            ValueError: wrong shapes.
        """

    def set_state(
        self,
        env_ids: torch.Tensor,
        qpos: torch.Tensor | None = None,
        qvel: torch.Tensor | None = None,
    ) -> None:
        """Overwrite qpos and/or qvel of rows ``env_ids`` mid-episode (e.g. a push) and recompute
        their kinematics; time, ctrl and the warm start are kept.

        Args:
            env_ids: (k,) int64; qpos: (k, nq) float32 or None; qvel: (k, nv) float32 or None.

        Raises:
            CapabilityError: the backend does not support it.
        """
        raise CapabilityError(f"backend {type(self).__name__} does not support set_state")

    # ------------------------------------------------------------------ state
    @property
    @abc.abstractmethod
    def qpos(self) -> torch.Tensor:
        """(num_envs, nq) float32 generalized positions (free joint: pos m, quat wxyz)."""

    @property
    @abc.abstractmethod
    def qvel(self) -> torch.Tensor:
        """(num_envs, nv) float32 generalized velocities (free joint: lin m/s world, ang rad/s local)."""

    @abc.abstractmethod
    def sensor(self, name: str) -> torch.Tensor:
        """(num_envs, dim) float32 reading of the named sensor.

        Read at the current state, or as of the last physics substep of the step (MuJoCo's
        ``mj_step`` semantics: at most one physics ``dt`` old); a backend documents which.

        Raises:
            KeyError: unknown sensor, listing :attr:`sensor_names`.
        """

    @abc.abstractmethod
    def body_state(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """World-frame state of the tracked bodies, at the current state or as of the last physics
        substep, as for :meth:`sensor`.

        Returns:
            pos (num_envs, B, 3) m, quat (num_envs, B, 4) wxyz, lin_vel (num_envs, B, 3) m/s of
            the body frame origin, ang_vel (num_envs, B, 3) rad/s; B = len(body_names).
        """

    @abc.abstractmethod
    def contact_force(self, body: str) -> torch.Tensor:
        """(num_envs, 3) float32 total world-frame contact force on the named body, N."""

    def diverged(self) -> torch.Tensor:
        """(num_envs,) bool: rows whose state went non-finite or tripped a solver warning."""
        return ~torch.isfinite(self.qpos).all(dim=1) | ~torch.isfinite(self.qvel).all(dim=1)

    # --------------------------------------------------------- randomization
    def set_model_field(self, name: str, env_ids: torch.Tensor, values: torch.Tensor) -> None:
        """Give the rows ``env_ids`` their own values of model field ``name`` (e.g. geom_friction).

        Args:
            name: MjModel field name.
            env_ids: (k,) int64.
            values: (k, *field_shape) float32.

        Raises:
            CapabilityError: the backend does not declare ``randomization``.
        """
        raise CapabilityError(
            f"backend {type(self).__name__} does not support per-world model parameters "
            "(capabilities.randomization is False)"
        )

    def model_field(self, name: str) -> torch.Tensor:
        """(num_envs, *field_shape) float32 current per-world values of model field ``name``."""
        raise CapabilityError(f"backend {type(self).__name__} does not expose model fields")

    def close(self) -> None:
        """Release threads and buffers. Idempotent."""


__all__ = ["CONTRACT_VERSION", "Capabilities", "CapabilityError", "SimBackend", "SimSpec"]
