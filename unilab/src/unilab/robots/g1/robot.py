"""The built-in Unitree G1 29-DoF as a :class:`~unilab.robots.description.RobotDescription`.

Every number comes from :mod:`unilab.robots.g1.g1_constants` (source: Unitree G1 29-DoF rev 1.0
via MuJoCo Menagerie unitree_g1 / mjlab 1.6.0 g1_constants.py; gains by mjlab's recipe).
"""

from __future__ import annotations

from unilab.robots.description import ImuSite, JointDrive, Pose, RobotDescription, SoleGeom
from unilab.robots.g1 import g1_constants as C
from unilab.robots.g1.model import g1_robot_spec

_IMU = next(s for s in C.G1_SITES if s.name == C.IMU_SITE)

_SOLES = {
    body: tuple(SoleGeom(g.kind, (g.radius,), fromto=g.fromto, pos=g.pos)
                for g in C.G1_COLLISION_GEOMS if g.foot and g.body == body)
    for body in C.FOOT_BODIES
}

G1 = RobotDescription(
    name="g1",
    joint_names=C.G1_JOINT_NAMES,
    drives={
        j: JointDrive(kp=C.KP[j], kd=C.KD[j], effort_limit=C.EFFORT_LIMIT[j], armature=C.ARMATURE[j])
        for j in C.G1_JOINT_NAMES
    },
    keyframes={name: Pose(base, dict(joints)) for name, (base, joints) in C.KEYFRAMES.items()},
    base_body=C.PELVIS_BODY,
    torso_body=C.TORSO_BODY,
    feet=C.FOOT_BODIES,
    imu=ImuSite(_IMU.name, _IMU.body, _IMU.pos),
    model=g1_robot_spec,
    action_scale_factor=0.25,
    soft_joint_pos_limit_factor=C.SOFT_JOINT_POS_LIMIT_FACTOR,
    soles=_SOLES,
    sole_friction=C.FOOT_FRICTION,
    description="Unitree G1 29-DoF humanoid (primitive collision; kp = I*omega^2 at 10 Hz, zeta 2)",
    source=C.SOURCE,
)
"""The G1: 29 joints in Unitree motor order, drives kp/kd/effort/armature per joint
(:data:`~unilab.robots.g1.g1_constants.KP` ...), keyframes ``knees_bent`` (default) and ``home``,
feet ``left_ankle_roll_link``/``right_ankle_roll_link`` with soles of seven capsules each (the
``foot=True`` geoms of :data:`~unilab.robots.g1.g1_constants.G1_COLLISION_GEOMS`, mjlab's collision
set) and sole friction :data:`~unilab.robots.g1.g1_constants.FOOT_FRICTION`, IMU ``imu_in_pelvis``, model
:func:`~unilab.robots.g1.model.g1_robot_spec` (no meshes; ``robot.mjcf`` takes a meshed one)."""

__all__ = ["G1"]
