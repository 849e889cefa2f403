"""What a task needs to know about a robot, as one data object: :class:`RobotDescription`.

A task reads the robot's joints (action order), default pose, joint drives, the bodies it rewards
and randomizes (base, torso, feet), the IMU site and the left/right mirror map from a
description, never from module constants; the MuJoCo model comes from the description's
``model`` (a builder or an MJCF file) or from the user's ``robot.mjcf``. The built-in G1
(:data:`unilab.robots.g1.G1`) is one; a package ships another through the ``unilab_robots``
entry-point group (:func:`unilab.hookspecs.unilab_register_robots`, docs/robots.md), and
:func:`unilab.robots.conformance.check_robot` tells its author whether the tasks can use it.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Union

import mujoco

Vec3 = tuple[float, float, float]

ModelSource = Union[Callable[[], mujoco.MjSpec], str, os.PathLike]
"""A robot's model: a function returning a fresh ``mujoco.MjSpec``, or the path of an MJCF file
(meshes and includes resolve relative to that file)."""


@dataclass(frozen=True)
class JointDrive:
    """The tuned drive of one joint: a position servo and the joint's own dynamics.

    Attributes:
        kp: stiffness, N*m/rad (MuJoCo position actuator ``kp``).
        kd: damping of the servo, N*m*s/rad (the actuator's ``kv``).
        effort_limit: peak torque, N*m (actuator ``forcerange`` +-effort_limit).
        armature: reflected rotor inertia added at the joint, kg*m^2.
        frictionloss: dry friction of the joint, N*m (0: none).
        damping: passive viscous damping of the joint, N*m*s/rad (0: none).
    """

    kp: float
    kd: float
    effort_limit: float
    armature: float
    frictionloss: float = 0.0
    damping: float = 0.0


@dataclass(frozen=True)
class Pose:
    """A whole-robot pose: base position (m; identity orientation) and joint angles (rad).

    ``joint_pos`` names any subset of the joints; the others are 0.
    """

    base_pos: Vec3
    joint_pos: Mapping[str, float]


SOLE_GEOM_TYPES = ("capsule", "sphere", "box")
"""Shapes a :class:`SoleGeom` may have."""


@dataclass(frozen=True)
class SoleGeom:
    """One collision geom of a foot's sole, in the foot body's frame (m), a primitive MuJoCo geom.

    Attributes:
        type: ``"capsule"``, ``"sphere"`` or ``"box"`` (:data:`SOLE_GEOM_TYPES`).
        size: capsule and sphere ``(radius,)``; box ``(half x, half y, half z)``, axes along the
            body frame's; m.
        fromto: capsule: its axis from (x1, y1, z1) to (x2, y2, z2), m, body frame; else None.
        pos: sphere and box: the centre, m, body frame; else None.
    """

    type: str
    size: tuple[float, ...]
    fromto: tuple[float, float, float, float, float, float] | None = None
    pos: Vec3 | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "size", tuple(float(x) for x in self.size))
        if self.fromto is not None:
            object.__setattr__(self, "fromto", tuple(float(x) for x in self.fromto))
        if self.pos is not None:
            object.__setattr__(self, "pos", tuple(float(x) for x in self.pos))

    def problems(self) -> list[str]:
        """What is inconsistent in this geom, one line each; empty when it is sound."""
        if self.type not in SOLE_GEOM_TYPES:
            return [f"type must be one of {', '.join(SOLE_GEOM_TYPES)}, got {self.type!r}"]
        out = []
        n = 3 if self.type == "box" else 1
        if len(self.size) != n or not all(math.isfinite(x) and x > 0 for x in self.size):
            out.append(f"{self.type} size must be {n} positive number{'s' if n > 1 else ''} (m), got {self.size!r}")
        if self.type == "capsule":
            if self.fromto is None or len(self.fromto) != 6 or self.pos is not None:
                out.append(f"capsule needs fromto (6 numbers, m) and no pos, got fromto={self.fromto!r} "
                           f"pos={self.pos!r}")
            elif self.fromto[:3] == self.fromto[3:]:
                out.append(f"capsule fromto has two equal end points: {self.fromto!r}")
        elif self.pos is None or len(self.pos) != 3 or self.fromto is not None:
            out.append(f"{self.type} needs pos (3 numbers, m) and no fromto, got pos={self.pos!r} "
                       f"fromto={self.fromto!r}")
        return out


@dataclass(frozen=True)
class ImuSite:
    """The IMU the observation sensors read: site ``name`` on ``body`` at ``pos`` (m, body frame).

    A model that already has a site of this name on this body keeps its own position."""

    name: str
    body: str
    pos: Vec3


def name_mirror(joint_names: tuple[str, ...]) -> dict[str, tuple[str, float]]:
    """The mirror map the env derives from joint names (:func:`unilab.envs.mirror.joint_mirror`):
    ``left_``/``right_`` tokens swap; roll and yaw joints change sign.

    Returns:
        joint -> (mirror-image joint, sign).

    Raises:
        ValueError: a sided joint has no counterpart, naming it.
    """
    from unilab.envs.mirror import joint_mirror

    perm, sign = joint_mirror(joint_names)
    return {j: (joint_names[int(p)], float(s)) for j, p, s in zip(joint_names, perm, sign)}


@dataclass(frozen=True)
class RobotDescription:
    """A floating-base robot as tasks see it.

    Attributes:
        name: what ``robot.name`` selects.
        joint_names: the J controlled hinge joints, in action order.
        drives: joint -> :class:`JointDrive`, one per joint of ``joint_names``. With
            ``robot.actuators=project`` they replace whatever the model file has.
        keyframes: name -> :class:`Pose`; the first is the default pose (reset, action offset).
        base_body: the body with the free joint (the env's base frame).
        torso_body: the upper-body link (upright reward, CoM randomization).
        feet: (left, right) foot bodies. Contacts, foot sites and friction randomization use
            these bodies and their collision geoms, whatever the geoms are called.
        imu: the IMU site (:class:`ImuSite`).
        model: the robot's own model (:data:`ModelSource`); ``robot.mjcf`` replaces it.
        mirror: joint -> (mirror-image joint, sign) for symmetry augmentation; empty means
            :func:`name_mirror` of ``joint_names``. The env mirrors joints by name, so
            :func:`~unilab.robots.conformance.check_robot` requires the two to agree.
        action_scale_factor: the action scale of joint j is ``factor * effort / kp`` (rad per
            action unit; 0.25 asks a quarter of the peak torque per unit, mjlab's G1 recipe).
        soft_joint_pos_limit_factor: fraction of each joint range (about its middle) treated as
            the soft limit by the limit penalty.
        soles: foot body -> the geoms (:class:`SoleGeom`, body frame) its tuned sole is made of,
            for both ``feet`` or neither; ``robot.feet=project`` puts them in place of a model's own
            foot collision geoms. Empty: the robot describes no sole (``project`` is refused).
        sole_friction: sliding friction coefficient (dimensionless) of the ``soles`` with
            ``robot.feet=project``; None keeps the sliding friction of the foot's first collision
            geom in the model. Torsional and rolling friction are always that geom's.
        description: one line for ``unilab plugins``.
        source: where the robot's facts come from (a citation).
    """

    name: str
    joint_names: tuple[str, ...]
    drives: Mapping[str, JointDrive]
    keyframes: Mapping[str, Pose]
    base_body: str
    torso_body: str
    feet: tuple[str, str]
    imu: ImuSite
    model: ModelSource
    mirror: Mapping[str, tuple[str, float]] = field(default_factory=dict)
    action_scale_factor: float = 0.25
    soft_joint_pos_limit_factor: float = 0.9
    soles: Mapping[str, tuple[SoleGeom, ...]] = field(default_factory=dict)
    sole_friction: float | None = None
    description: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "joint_names", tuple(self.joint_names))
        object.__setattr__(self, "feet", tuple(self.feet))
        object.__setattr__(self, "drives", MappingProxyType(dict(self.drives)))
        object.__setattr__(self, "keyframes", MappingProxyType(dict(self.keyframes)))
        object.__setattr__(self, "mirror", MappingProxyType(dict(self.mirror)))
        object.__setattr__(self, "soles", MappingProxyType({b: tuple(g) for b, g in self.soles.items()}))

    # ------------------------------------------------------------------ derived
    @property
    def default_pose(self) -> Pose:
        """The first keyframe."""
        return next(iter(self.keyframes.values()))

    def action_scale(self) -> dict[str, float]:
        """Joint -> ``action_scale_factor * effort_limit / kp`` (rad per action unit)."""
        return {j: self.action_scale_factor * self.drives[j].effort_limit / self.drives[j].kp
                for j in self.joint_names}

    def joint_mirror(self) -> dict[str, tuple[str, float]]:
        """``mirror``, or the name-derived map when it is empty."""
        return dict(self.mirror) if self.mirror else name_mirror(self.joint_names)

    def model_path(self) -> Path | None:
        """The MJCF file of ``model`` when it is a path, else None."""
        return None if callable(self.model) else Path(os.fspath(self.model))

    # ------------------------------------------------------------------ checks
    def problems(self) -> list[str]:
        """Everything inconsistent in the description itself (no model needed), one line each;
        empty when it is sound."""
        out: list[str] = []
        joints = self.joint_names
        if not joints:
            out.append("joint_names is empty")
        dup = sorted({j for j in joints if joints.count(j) > 1})
        if dup:
            out.append(f"joint_names repeats {dup}")
        missing = [j for j in joints if j not in self.drives]
        if missing:
            out.append(f"drives lacks joints {missing}")
        extra = [j for j in self.drives if j not in joints]
        if extra:
            out.append(f"drives names joints that are not in joint_names: {extra}")
        for j, d in self.drives.items():
            for attr in ("kp", "effort_limit"):
                value = getattr(d, attr)
                if not (math.isfinite(value) and value > 0):
                    out.append(f"drive of {j!r}: {attr} must be a positive number, got {value!r}")
            for attr in ("kd", "armature", "frictionloss", "damping"):
                value = getattr(d, attr)
                if not (math.isfinite(value) and value >= 0):
                    out.append(f"drive of {j!r}: {attr} must be >= 0, got {value!r}")
        if not self.keyframes:
            out.append("keyframes is empty (the first one is the default pose)")
        for key, pose in self.keyframes.items():
            unknown = [j for j in pose.joint_pos if j not in joints]
            if unknown:
                out.append(f"keyframe {key!r} names unknown joints {unknown}")
            if len(pose.base_pos) != 3:
                out.append(f"keyframe {key!r}: base_pos must have 3 numbers, got {pose.base_pos!r}")
        if len(self.feet) != 2:
            out.append(f"feet must be (left, right), got {self.feet!r}")
        if not (self.action_scale_factor > 0):
            out.append(f"action_scale_factor must be > 0, got {self.action_scale_factor!r}")
        if not (0 < self.soft_joint_pos_limit_factor <= 1):
            out.append(f"soft_joint_pos_limit_factor must be in (0, 1], got {self.soft_joint_pos_limit_factor!r}")
        if self.soles:
            if set(self.soles) != set(self.feet) or not all(self.soles.values()):
                out.append(f"soles must give geoms for both feet {list(self.feet)} and no other body, "
                           f"got {({b: len(g) for b, g in self.soles.items()})}")
            for body, geoms in self.soles.items():
                for i, g in enumerate(geoms):
                    out += [f"sole geom {i} of {body!r}: {p}" for p in g.problems()]
        if self.sole_friction is not None and not (math.isfinite(self.sole_friction) and self.sole_friction > 0):
            out.append(f"sole_friction must be a positive number or None, got {self.sole_friction!r}")
        if self.mirror:
            for j in joints:
                if j not in self.mirror:
                    out.append(f"mirror lacks joint {j!r}")
                    continue
                other, sign = self.mirror[j]
                if other not in joints:
                    out.append(f"mirror maps {j!r} to unknown joint {other!r}")
                elif self.mirror.get(other, (None,))[0] != j:
                    out.append(f"mirror is not an involution at {j!r} -> {other!r}")
                if sign not in (1.0, -1.0):
                    out.append(f"mirror sign of {j!r} must be +1 or -1, got {sign!r}")
        if not callable(self.model):
            path = self.model_path()
            if not path.is_absolute():
                out.append(f"model path {str(path)!r} must be absolute (e.g. Path(__file__).parent / 'robot.xml')")
        return out


__all__ = ["ImuSite", "JointDrive", "ModelSource", "Pose", "RobotDescription", "SOLE_GEOM_TYPES", "SoleGeom",
           "name_mirror"]
