"""Unitree G1 29-DoF (rev 1.0) robot constants, as plain Python data.

Everything the model builder (:mod:`unilab.robots.g1.model`) needs lives here:
the kinematic tree with inertial properties, joint axes and limits, the
primitive collision geometry, the motor facts and the PD gains derived from
them, and the reference keyframes.

Source of the numbers
---------------------
The physical numbers (body frames, masses, inertias, joint axes and ranges,
collision primitive sizes and placements, motor rotor inertias and gear
ratios, effort limits, keyframe poses) are facts about the robot taken from
*Unitree G1 29-DoF rev 1.0 via MuJoCo Menagerie unitree_g1 / mjlab 1.6.0
g1_constants.py* (the Unitree model is BSD-3-Clause, mjlab is Apache-2.0; see
the repository ``NOTICE``). They were transcribed once into the tables below;
no file of those projects is shipped. The gain recipe (natural frequency
10 Hz, damping ratio 2, action scale ``0.25 * effort / kp``) and the
soft-limit factor are mjlab 1.6.0's (``asset_zoo/robots/unitree_g1/g1_constants.py``);
BeyondMimic (HybridRobotics/whole_body_tracking@cd65172 ``robots/g1.py``) and
holosoma 0.0.3 (``config_values/robot.py``) use the same armature/gain table.

Conventions and units
---------------------
* lengths in m, angles in rad, masses in kg, inertias in kg*m^2,
  torques in N*m, stiffness in N*m/rad, damping in N*m*s/rad;
* quaternions are ``(w, x, y, z)`` (MuJoCo order) and are relative to the
  parent body frame; ``None`` means identity;
* ``com``/``inertia``/``inertia_quat`` describe each link's centre of mass and
  principal inertia frame in the body frame;
* joint order everywhere is the Unitree SDK motor order
  (:data:`G1_JOINT_NAMES`).
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Mapping, NamedTuple

import numpy as np

SOURCE = "Unitree G1 29-DoF rev 1.0 via MuJoCo Menagerie unitree_g1 / mjlab 1.6.0 g1_constants.py"
"""Citation string for the robot facts in this module."""

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]


# ---------------------------------------------------------------------------
# Table record types
# ---------------------------------------------------------------------------


class BodySpec(NamedTuple):
    """One rigid link: frame relative to its parent and explicit inertia.

    ``pos`` (m) and ``quat`` (w, x, y, z; ``None`` = identity) place the body
    frame in the parent frame. ``mass`` (kg), ``com`` (m, body frame),
    ``inertia`` (principal moments, kg*m^2) and ``inertia_quat`` (principal
    axes in the body frame) are the explicit inertial properties.
    """

    name: str
    parent: str
    pos: Vec3
    quat: Quat | None
    mass: float
    com: Vec3
    inertia: Vec3
    inertia_quat: Quat


class JointSpec(NamedTuple):
    """One actuated hinge joint.

    ``body`` is the child link the hinge moves; ``axis`` is a unit vector in
    that body's frame; ``range`` is ``(lower, upper)`` in rad; ``motor`` is a
    key of :data:`MOTORS` / :data:`MOTOR_KP` naming the drive unit.
    """

    name: str
    body: str
    axis: Vec3
    range: tuple[float, float]
    motor: str


class GeomSpec(NamedTuple):
    """One primitive collision geom (also used as the visual).

    ``kind`` is ``"capsule"`` (given by ``fromto``: two end points in the body
    frame, m) or ``"sphere"`` (centred at ``pos``, m). ``radius`` in m.
    ``foot`` marks sole capsules, which get the foot contact parameters.
    """

    name: str
    body: str
    kind: str
    radius: float
    fromto: tuple[float, float, float, float, float, float] | None = None
    pos: Vec3 | None = None
    foot: bool = False


class SiteSpec(NamedTuple):
    """A named site: ``pos`` (m) in the frame of ``body``, identity orientation."""

    name: str
    body: str
    pos: Vec3


# ---------------------------------------------------------------------------
# Kinematic tree (depth-first, parents first). Source: SOURCE.
# ---------------------------------------------------------------------------

G1_BODIES: tuple[BodySpec, ...] = (
    BodySpec(
        "pelvis", "world", pos=(0.0, 0.0, 0.793), quat=None,
        mass=3.813, com=(0.0, 0.0, -0.07605),
        inertia=(0.010549, 0.0093089, 0.0079184),
        inertia_quat=(1.0, 0.0, -0.000399148, 0.0),
    ),
    BodySpec(
        "left_hip_pitch_link", "pelvis", pos=(0.0, 0.064452, -0.1027), quat=None,
        mass=1.35, com=(0.002741, 0.047791, -0.02606),
        inertia=(0.00181517, 0.00153422, 0.00116212),
        inertia_quat=(0.954862, 0.293964, 0.0302556, 0.030122),
    ),
    BodySpec(
        "left_hip_roll_link", "left_hip_pitch_link",
        pos=(0.0, 0.052, -0.030465), quat=(0.996179, 0.0, -0.0873386, 0.0),
        mass=1.52, com=(0.029812, -0.001045, -0.087934),
        inertia=(0.00254986, 0.00241169, 0.00148755),
        inertia_quat=(0.977808, -1.97119e-05, 0.205576, -0.0403793),
    ),
    BodySpec(
        "left_hip_yaw_link", "left_hip_roll_link", pos=(0.025001, 0.0, -0.12412), quat=None,
        mass=1.702, com=(-0.057709, -0.010981, -0.15078),
        inertia=(0.00776166, 0.00717575, 0.00160139),
        inertia_quat=(0.600598, 0.15832, 0.223482, 0.751181),
    ),
    BodySpec(
        "left_knee_link", "left_hip_yaw_link",
        pos=(-0.078273, 0.0021489, -0.17734), quat=(0.996179, 0.0, 0.0873386, 0.0),
        mass=1.932, com=(0.005457, 0.003964, -0.12074),
        inertia=(0.0113804, 0.0112778, 0.00146458),
        inertia_quat=(0.923418, -0.0327699, 0.0158246, 0.382067),
    ),
    BodySpec(
        "left_ankle_pitch_link", "left_knee_link", pos=(0.0, -9.4445e-05, -0.30001), quat=None,
        mass=0.074, com=(-0.007269, 0.0, 0.011137),
        inertia=(1.89e-05, 1.40805e-05, 6.9195e-06),
        inertia_quat=(0.603053, 0.369225, 0.369225, 0.603053),
    ),
    BodySpec(
        "left_ankle_roll_link", "left_ankle_pitch_link", pos=(0.0, 0.0, -0.017558), quat=None,
        mass=0.608, com=(0.026505, 0.0, -0.016425),
        inertia=(0.00167218, 0.0016161, 0.000217621),
        inertia_quat=(-0.000481092, 0.728482, -0.000618967, 0.685065),
    ),
    BodySpec(
        "right_hip_pitch_link", "pelvis", pos=(0.0, -0.064452, -0.1027), quat=None,
        mass=1.35, com=(0.002741, -0.047791, -0.02606),
        inertia=(0.00181517, 0.00153422, 0.00116212),
        inertia_quat=(0.954862, -0.293964, 0.0302556, -0.030122),
    ),
    BodySpec(
        "right_hip_roll_link", "right_hip_pitch_link",
        pos=(0.0, -0.052, -0.030465), quat=(0.996179, 0.0, -0.0873386, 0.0),
        mass=1.52, com=(0.029812, 0.001045, -0.087934),
        inertia=(0.00254986, 0.00241169, 0.00148755),
        inertia_quat=(0.977808, 1.97119e-05, 0.205576, 0.0403793),
    ),
    BodySpec(
        "right_hip_yaw_link", "right_hip_roll_link", pos=(0.025001, 0.0, -0.12412), quat=None,
        mass=1.702, com=(-0.057709, 0.010981, -0.15078),
        inertia=(0.00776166, 0.00717575, 0.00160139),
        inertia_quat=(0.751181, 0.223482, 0.15832, 0.600598),
    ),
    BodySpec(
        "right_knee_link", "right_hip_yaw_link",
        pos=(-0.078273, -0.0021489, -0.17734), quat=(0.996179, 0.0, 0.0873386, 0.0),
        mass=1.932, com=(0.005457, -0.003964, -0.12074),
        inertia=(0.011374, 0.0112843, 0.00146452),
        inertia_quat=(0.923439, 0.0345276, 0.0116333, -0.382012),
    ),
    BodySpec(
        "right_ankle_pitch_link", "right_knee_link", pos=(0.0, 9.4445e-05, -0.30001), quat=None,
        mass=0.074, com=(-0.007269, 0.0, 0.011137),
        inertia=(1.89e-05, 1.40805e-05, 6.9195e-06),
        inertia_quat=(0.603053, 0.369225, 0.369225, 0.603053),
    ),
    BodySpec(
        "right_ankle_roll_link", "right_ankle_pitch_link", pos=(0.0, 0.0, -0.017558), quat=None,
        mass=0.608, com=(0.026505, 0.0, -0.016425),
        inertia=(0.00167218, 0.0016161, 0.000217621),
        inertia_quat=(0.000481092, 0.728482, 0.000618967, 0.685065),
    ),
    BodySpec(
        "waist_yaw_link", "pelvis", pos=(0.0, 0.0, 0.0), quat=None,
        mass=0.214, com=(0.003494, 0.000233, 0.018034),
        inertia=(0.000163531, 0.000107714, 0.000102205),
        inertia_quat=(0.289697, 0.591001, -0.337795, 0.672821),
    ),
    BodySpec(
        "waist_roll_link", "waist_yaw_link", pos=(-0.0039635, 0.0, 0.044), quat=None,
        mass=0.086, com=(0.0, 2.3e-05, 0.0),
        inertia=(8.245e-06, 7.079e-06, 6.339e-06),
        inertia_quat=(0.5, 0.5, -0.5, 0.5),
    ),
    BodySpec(
        "torso_link", "waist_roll_link", pos=(0.0, 0.0, 0.0), quat=None,
        mass=7.818, com=(0.00203158, 0.000339683, 0.184568),
        inertia=(0.121847, 0.109825, 0.0273735),
        inertia_quat=(0.999803, -6.03319e-05, 0.0198256, 0.00131986),
    ),
    BodySpec(
        "left_shoulder_pitch_link", "torso_link",
        pos=(0.0039563, 0.10022, 0.24778), quat=(0.990264, 0.139201, 1.38722e-05, -9.86868e-05),
        mass=0.718, com=(0.0, 0.035892, -0.011628),
        inertia=(0.000465864, 0.000432842, 0.000406394),
        inertia_quat=(0.654152, 0.0130458, -0.326267, 0.68225),
    ),
    BodySpec(
        "left_shoulder_roll_link", "left_shoulder_pitch_link",
        pos=(0.0, 0.038, -0.013831), quat=(0.990268, -0.139172, 0.0, 0.0),
        mass=0.643, com=(-0.000227, 0.00727, -0.063243),
        inertia=(0.000691311, 0.000618011, 0.000388977),
        inertia_quat=(0.701256, -0.0196223, -0.00710317, 0.712604),
    ),
    BodySpec(
        "left_shoulder_yaw_link", "left_shoulder_roll_link", pos=(0.0, 0.00624, -0.1032), quat=None,
        mass=0.734, com=(0.010773, -0.002949, -0.072009),
        inertia=(0.00106187, 0.00103217, 0.000400661),
        inertia_quat=(0.716879, -0.0964829, -0.0679942, 0.687134),
    ),
    BodySpec(
        "left_elbow_link", "left_shoulder_yaw_link", pos=(0.015783, 0.0, -0.080518), quat=None,
        mass=0.6, com=(0.064956, 0.004454, -0.010062),
        inertia=(0.000443035, 0.000421612, 0.000259353),
        inertia_quat=(0.541765, 0.636132, 0.388821, 0.388129),
    ),
    BodySpec(
        "left_wrist_roll_link", "left_elbow_link", pos=(0.1, 0.00188791, -0.01), quat=None,
        mass=0.085445, com=(0.0171394, 0.000537591, 4.8864e-07),
        inertia=(5.48211e-05, 4.96646e-05, 3.57798e-05),
        inertia_quat=(0.575338, 0.411667, -0.574906, 0.411094),
    ),
    BodySpec(
        "left_wrist_pitch_link", "left_wrist_roll_link", pos=(0.038, 0.0, 0.0), quat=None,
        mass=0.48405, com=(0.0229999, -0.00111685, -0.00111658),
        inertia=(0.000430353, 0.000429873, 0.000164648),
        inertia_quat=(0.249998, 0.661363, 0.293036, 0.643608),
    ),
    BodySpec(
        "left_wrist_yaw_link", "left_wrist_pitch_link", pos=(0.046, 0.0, 0.0), quat=None,
        mass=0.254576, com=(0.0708244, 0.000191745, 0.00161742),
        inertia=(0.000646113, 0.000559993, 0.000147566),
        inertia_quat=(0.510571, 0.526295, 0.468078, 0.493188),
    ),
    BodySpec(
        "right_shoulder_pitch_link", "torso_link",
        pos=(0.0039563, -0.10021, 0.24778), quat=(0.990264, -0.139201, 1.38722e-05, 9.86868e-05),
        mass=0.718, com=(0.0, -0.035892, -0.011628),
        inertia=(0.000465864, 0.000432842, 0.000406394),
        inertia_quat=(0.68225, -0.326267, 0.0130458, 0.654152),
    ),
    BodySpec(
        "right_shoulder_roll_link", "right_shoulder_pitch_link",
        pos=(0.0, -0.038, -0.013831), quat=(0.990268, 0.139172, 0.0, 0.0),
        mass=0.643, com=(-0.000227, -0.00727, -0.063243),
        inertia=(0.000691311, 0.000618011, 0.000388977),
        inertia_quat=(0.712604, -0.00710317, -0.0196223, 0.701256),
    ),
    BodySpec(
        "right_shoulder_yaw_link", "right_shoulder_roll_link",
        pos=(0.0, -0.00624, -0.1032), quat=None,
        mass=0.734, com=(0.010773, 0.002949, -0.072009),
        inertia=(0.00106187, 0.00103217, 0.000400661),
        inertia_quat=(0.687134, -0.0679942, -0.0964829, 0.716879),
    ),
    BodySpec(
        "right_elbow_link", "right_shoulder_yaw_link", pos=(0.015783, 0.0, -0.080518), quat=None,
        mass=0.6, com=(0.064956, -0.004454, -0.010062),
        inertia=(0.000443035, 0.000421612, 0.000259353),
        inertia_quat=(0.388129, 0.388821, 0.636132, 0.541765),
    ),
    BodySpec(
        "right_wrist_roll_link", "right_elbow_link", pos=(0.1, -0.00188791, -0.01), quat=None,
        mass=0.085445, com=(0.0171394, -0.000537591, 4.8864e-07),
        inertia=(5.48211e-05, 4.96646e-05, 3.57798e-05),
        inertia_quat=(0.411667, 0.575338, -0.411094, 0.574906),
    ),
    BodySpec(
        "right_wrist_pitch_link", "right_wrist_roll_link", pos=(0.038, 0.0, 0.0), quat=None,
        mass=0.48405, com=(0.0229999, 0.00111685, -0.00111658),
        inertia=(0.000430353, 0.000429873, 0.000164648),
        inertia_quat=(0.643608, 0.293036, 0.661363, 0.249998),
    ),
    BodySpec(
        "right_wrist_yaw_link", "right_wrist_pitch_link", pos=(0.046, 0.0, 0.0), quat=None,
        mass=0.254576, com=(0.0708244, -0.000191745, 0.00161742),
        inertia=(0.000646113, 0.000559993, 0.000147566),
        inertia_quat=(0.493188, 0.468078, 0.526295, 0.510571),
    ),
)
"""The 30 links of the G1 in depth-first order (pelvis first). Source: :data:`SOURCE`.

Total mass 33.341 kg (the inertias are explicit, no density-derived mass).
"""

FLOATING_BASE_JOINT = "floating_base_joint"
"""Name of the 6-DoF free joint on :data:`PELVIS_BODY` (qpos 7: pos m, quat w x y z)."""

PELVIS_BODY = "pelvis"
"""Root link of the tree; carries the free joint and the pelvis IMU."""

TORSO_BODY = "torso_link"
"""Upper-body link (child of the waist pitch joint); carries the torso IMU and the head."""

FOOT_BODIES: tuple[str, str] = ("left_ankle_roll_link", "right_ankle_roll_link")
"""Links that carry the sole capsules and the foot sites, (left, right)."""

G1_BODY_NAMES: tuple[str, ...] = tuple(b.name for b in G1_BODIES)
"""All 30 link names in model (depth-first) order; world excluded."""


X_AXIS: Vec3 = (1.0, 0.0, 0.0)
"""Unit x axis (roll joints)."""
Y_AXIS: Vec3 = (0.0, 1.0, 0.0)
"""Unit y axis (pitch joints)."""
Z_AXIS: Vec3 = (0.0, 0.0, 1.0)
"""Unit z axis (yaw joints)."""


# ---------------------------------------------------------------------------
# Hinge joints in Unitree SDK order. Source: SOURCE (axes, ranges);
# motor assignment as mjlab 1.6.0 ``g1_constants.py``.
# ---------------------------------------------------------------------------

G1_JOINTS: tuple[JointSpec, ...] = (
    # name, child body, axis (child frame), range (rad), motor group
    JointSpec("left_hip_pitch_joint", "left_hip_pitch_link", Y_AXIS, (-2.5307, 2.8798), "7520-14"),
    JointSpec("left_hip_roll_joint", "left_hip_roll_link", X_AXIS, (-0.5236, 2.9671), "7520-22"),
    JointSpec("left_hip_yaw_joint", "left_hip_yaw_link", Z_AXIS, (-2.7576, 2.7576), "7520-14"),
    JointSpec("left_knee_joint", "left_knee_link", Y_AXIS, (-0.087267, 2.8798), "7520-22"),
    JointSpec("left_ankle_pitch_joint", "left_ankle_pitch_link", Y_AXIS, (-0.87267, 0.5236), "2x5020"),
    JointSpec("left_ankle_roll_joint", "left_ankle_roll_link", X_AXIS, (-0.2618, 0.2618), "2x5020"),
    JointSpec("right_hip_pitch_joint", "right_hip_pitch_link", Y_AXIS, (-2.5307, 2.8798), "7520-14"),
    JointSpec("right_hip_roll_joint", "right_hip_roll_link", X_AXIS, (-2.9671, 0.5236), "7520-22"),
    JointSpec("right_hip_yaw_joint", "right_hip_yaw_link", Z_AXIS, (-2.7576, 2.7576), "7520-14"),
    JointSpec("right_knee_joint", "right_knee_link", Y_AXIS, (-0.087267, 2.8798), "7520-22"),
    JointSpec("right_ankle_pitch_joint", "right_ankle_pitch_link", Y_AXIS, (-0.87267, 0.5236), "2x5020"),
    JointSpec("right_ankle_roll_joint", "right_ankle_roll_link", X_AXIS, (-0.2618, 0.2618), "2x5020"),
    JointSpec("waist_yaw_joint", "waist_yaw_link", Z_AXIS, (-2.618, 2.618), "7520-14"),
    JointSpec("waist_roll_joint", "waist_roll_link", X_AXIS, (-0.52, 0.52), "2x5020"),
    JointSpec("waist_pitch_joint", "torso_link", Y_AXIS, (-0.52, 0.52), "2x5020"),
    JointSpec("left_shoulder_pitch_joint", "left_shoulder_pitch_link", Y_AXIS, (-3.0892, 2.6704), "5020"),
    JointSpec("left_shoulder_roll_joint", "left_shoulder_roll_link", X_AXIS, (-1.5882, 2.2515), "5020"),
    JointSpec("left_shoulder_yaw_joint", "left_shoulder_yaw_link", Z_AXIS, (-2.618, 2.618), "5020"),
    JointSpec("left_elbow_joint", "left_elbow_link", Y_AXIS, (-1.0472, 2.0944), "5020"),
    JointSpec("left_wrist_roll_joint", "left_wrist_roll_link", X_AXIS, (-1.97222, 1.97222), "5020"),
    JointSpec("left_wrist_pitch_joint", "left_wrist_pitch_link", Y_AXIS, (-1.61443, 1.61443), "4010"),
    JointSpec("left_wrist_yaw_joint", "left_wrist_yaw_link", Z_AXIS, (-1.61443, 1.61443), "4010"),
    JointSpec("right_shoulder_pitch_joint", "right_shoulder_pitch_link", Y_AXIS, (-3.0892, 2.6704), "5020"),
    JointSpec("right_shoulder_roll_joint", "right_shoulder_roll_link", X_AXIS, (-2.2515, 1.5882), "5020"),
    JointSpec("right_shoulder_yaw_joint", "right_shoulder_yaw_link", Z_AXIS, (-2.618, 2.618), "5020"),
    JointSpec("right_elbow_joint", "right_elbow_link", Y_AXIS, (-1.0472, 2.0944), "5020"),
    JointSpec("right_wrist_roll_joint", "right_wrist_roll_link", X_AXIS, (-1.97222, 1.97222), "5020"),
    JointSpec("right_wrist_pitch_joint", "right_wrist_pitch_link", Y_AXIS, (-1.61443, 1.61443), "4010"),
    JointSpec("right_wrist_yaw_joint", "right_wrist_yaw_link", Z_AXIS, (-1.61443, 1.61443), "4010"),
)
"""The 29 hinge joints, Unitree order: left leg 6, right leg 6, waist 3,
left arm 7, right arm 7. Axes in the child-body frame, ranges in rad.
Source: :data:`SOURCE`; motor groups as mjlab 1.6.0 ``g1_constants.py``."""

G1_JOINT_NAMES: tuple[str, ...] = tuple(j.name for j in G1_JOINTS)
"""The 29 hinge joint names in Unitree SDK motor order (== actuator order == qpos[7:] order)."""

G1_ACTUATOR_NAMES: tuple[str, ...] = G1_JOINT_NAMES
"""Actuator names: each position actuator is named exactly like the joint it drives."""

JOINT_RANGE: Mapping[str, tuple[float, float]] = MappingProxyType({j.name: j.range for j in G1_JOINTS})
"""Hard joint limits (lower, upper) in rad per joint. Source: :data:`SOURCE`."""

SOFT_JOINT_POS_LIMIT_FACTOR = 0.9
"""Fraction of each joint range (about its centre) treated as the soft limit
(dimensionless). Source: mjlab 1.6.0 ``soft_joint_pos_limit_factor``."""


# ---------------------------------------------------------------------------
# Collision geometry (primitives only). Source: SOURCE (mjlab's g1.xml
# collision capsules/spheres, the geometry behind its FULL_COLLISION preset).
# ---------------------------------------------------------------------------

G1_COLLISION_GEOMS: tuple[GeomSpec, ...] = (
    # name, body, kind, radius (m), placement (m, body frame)
    GeomSpec("pelvis_collision", "pelvis", "sphere", 0.07,
             pos=(0.0, 0.0, -0.08)),
    GeomSpec("left_hip_collision", "left_hip_roll_link", "capsule", 0.06,
             fromto=(0.02, 0.0, 0.0, 0.02, 0.0, -0.08)),
    GeomSpec("left_thigh_collision", "left_hip_yaw_link", "capsule", 0.055,
             fromto=(0.0, 0.0, -0.03, -0.06, 0.0, -0.17)),
    GeomSpec("left_shin_collision", "left_knee_link", "capsule", 0.045,
             fromto=(0.01, 0.0, 0.0, 0.01, 0.0, -0.15)),
    GeomSpec("left_linkage_brace_collision", "left_knee_link", "capsule", 0.03,
             fromto=(0.01, 0.0, -0.2, 0.01, 0.0, -0.28)),
    GeomSpec("left_foot1_collision", "left_ankle_roll_link", "capsule", 0.01,
             fromto=(0.1, -0.026, -0.025, 0.05, -0.027, -0.025), foot=True),
    GeomSpec("left_foot2_collision", "left_ankle_roll_link", "capsule", 0.01,
             fromto=(-0.044, -0.018, -0.025, 0.123, -0.018, -0.025), foot=True),
    GeomSpec("left_foot3_collision", "left_ankle_roll_link", "capsule", 0.01,
             fromto=(-0.052, -0.01, -0.025, 0.13, -0.01, -0.025), foot=True),
    GeomSpec("left_foot4_collision", "left_ankle_roll_link", "capsule", 0.01,
             fromto=(-0.054, 0.0, -0.025, 0.132, 0.0, -0.025), foot=True),
    GeomSpec("left_foot5_collision", "left_ankle_roll_link", "capsule", 0.01,
             fromto=(-0.052, 0.01, -0.025, 0.13, 0.01, -0.025), foot=True),
    GeomSpec("left_foot6_collision", "left_ankle_roll_link", "capsule", 0.01,
             fromto=(-0.044, 0.018, -0.025, 0.123, 0.018, -0.025), foot=True),
    GeomSpec("left_foot7_collision", "left_ankle_roll_link", "capsule", 0.01,
             fromto=(0.1, 0.026, -0.025, 0.05, 0.026, -0.025), foot=True),
    GeomSpec("right_hip_collision", "right_hip_roll_link", "capsule", 0.06,
             fromto=(0.02, 0.0, 0.0, 0.02, 0.0, -0.08)),
    GeomSpec("right_thigh_collision", "right_hip_yaw_link", "capsule", 0.055,
             fromto=(0.0, 0.0, -0.03, -0.06, 0.0, -0.17)),
    GeomSpec("right_shin_collision", "right_knee_link", "capsule", 0.045,
             fromto=(0.01, 0.0, 0.0, 0.01, 0.0, -0.15)),
    GeomSpec("right_linkage_brace_collision", "right_knee_link", "capsule", 0.03,
             fromto=(0.01, 0.0, -0.2, 0.01, 0.0, -0.28)),
    GeomSpec("right_foot1_collision", "right_ankle_roll_link", "capsule", 0.01,
             fromto=(0.1, -0.026, -0.025, 0.05, -0.026, -0.025), foot=True),
    GeomSpec("right_foot2_collision", "right_ankle_roll_link", "capsule", 0.01,
             fromto=(-0.044, -0.018, -0.025, 0.123, -0.018, -0.025), foot=True),
    GeomSpec("right_foot3_collision", "right_ankle_roll_link", "capsule", 0.01,
             fromto=(-0.052, -0.01, -0.025, 0.13, -0.01, -0.025), foot=True),
    GeomSpec("right_foot4_collision", "right_ankle_roll_link", "capsule", 0.01,
             fromto=(-0.054, 0.0, -0.025, 0.132, 0.0, -0.025), foot=True),
    GeomSpec("right_foot5_collision", "right_ankle_roll_link", "capsule", 0.01,
             fromto=(-0.052, 0.01, -0.025, 0.13, 0.01, -0.025), foot=True),
    GeomSpec("right_foot6_collision", "right_ankle_roll_link", "capsule", 0.01,
             fromto=(-0.044, 0.018, -0.025, 0.123, 0.018, -0.025), foot=True),
    GeomSpec("right_foot7_collision", "right_ankle_roll_link", "capsule", 0.01,
             fromto=(0.1, 0.026, -0.025, 0.05, 0.026, -0.025), foot=True),
    GeomSpec("torso_collision", "torso_link", "capsule", 0.09,
             fromto=(0.01, 0.0, 0.08, 0.01, 0.0, 0.2)),
    GeomSpec("head_collision", "torso_link", "sphere", 0.06,
             pos=(0.0, 0.0, 0.43)),
    GeomSpec("left_shoulder_yaw_collision", "left_shoulder_yaw_link", "capsule", 0.035,
             fromto=(0.0, 0.0, -0.08, 0.0, 0.0, 0.05)),
    GeomSpec("left_elbow_yaw_collision", "left_elbow_link", "capsule", 0.035,
             fromto=(-0.01, 0.0, -0.01, 0.08, 0.0, -0.01)),
    GeomSpec("left_wrist_collision", "left_wrist_pitch_link", "capsule", 0.035,
             fromto=(-0.01, 0.0, 0.0, 0.06, 0.0, 0.0)),
    GeomSpec("left_hand_collision", "left_wrist_yaw_link", "capsule", 0.035,
             fromto=(0.07, 0.0, 0.0, 0.15, -0.02, 0.0)),
    GeomSpec("right_shoulder_yaw_collision", "right_shoulder_yaw_link", "capsule", 0.035,
             fromto=(0.0, 0.0, -0.08, 0.0, 0.0, 0.05)),
    GeomSpec("right_elbow_yaw_collision", "right_elbow_link", "capsule", 0.035,
             fromto=(-0.01, 0.0, -0.01, 0.08, 0.0, -0.01)),
    GeomSpec("right_wrist_collision", "right_wrist_pitch_link", "capsule", 0.035,
             fromto=(-0.01, 0.0, 0.0, 0.06, 0.0, 0.0)),
    GeomSpec("right_hand_collision", "right_wrist_yaw_link", "capsule", 0.035,
             fromto=(0.07, 0.0, 0.0, 0.15, 0.02, 0.0)),
)
"""Primitive collision geoms: 31 capsules and 2 spheres; 7 sole capsules per foot
(``foot=True``). Sizes/positions in m, body frame. Source: :data:`SOURCE`."""

G1_CONTACT_EXCLUDES: tuple[tuple[str, str], ...] = (
    ("left_elbow_link", "left_wrist_pitch_link"),
    ("right_elbow_link", "right_wrist_pitch_link"),
    ("pelvis", "right_hip_roll_link"),
    ("pelvis", "left_hip_roll_link"),
)
"""Non-adjacent body pairs whose geoms overlap by construction and must not
collide (parent/child pairs are excluded by MuJoCo already). Source: :data:`SOURCE`."""

FOOT_FRICTION = 0.6
"""Sliding friction coefficient of the sole capsules (dimensionless).
Source: mjlab 1.6.0 ``FULL_COLLISION``."""

FOOT_CONDIM = 3
"""Contact dimensionality of the sole capsules (normal + 2D friction).
Source: mjlab 1.6.0 ``FULL_COLLISION``."""

FOOT_PRIORITY = 1
"""Contact priority of the sole capsules, so their friction and condim win
against the floor's. Source: mjlab 1.6.0 ``FULL_COLLISION``."""

NON_FOOT_CONDIM = 1
"""Contact dimensionality of every other geom (frictionless normal contact).
Source: mjlab 1.6.0 ``FULL_COLLISION``."""

FOOT_GEOM_NAMES: tuple[str, ...] = tuple(g.name for g in G1_COLLISION_GEOMS if g.foot)
"""Names of the 14 sole capsules (left 1-7, right 1-7)."""


def _foot_sole_centre(body: str) -> Vec3:
    """Bottom centre of the sole capsules of ``body`` (m, body frame).

    x: midpoint of the capsules' front-most and rear-most end points, y: 0
    (sole centre line), z: capsule axis height minus radius, i.e. the plane the
    capsules rest on.
    """
    feet = [g for g in G1_COLLISION_GEOMS if g.foot and g.body == body]
    xs = [c for g in feet for c in (g.fromto[0], g.fromto[3])]
    z = min(min(g.fromto[2], g.fromto[5]) - g.radius for g in feet)
    return (round(0.5 * (min(xs) + max(xs)), 6), 0.0, round(z, 6))


FOOT_SITES: tuple[str, str] = ("left_foot", "right_foot")
"""Foot site names (left, right), on :data:`FOOT_BODIES`, at the sole's bottom centre."""

G1_SITES: tuple[SiteSpec, ...] = (
    SiteSpec("imu_in_pelvis", "pelvis", (0.04525, 0.0, -0.08339)),
    SiteSpec("imu_in_torso", "torso_link", (-0.03959, -0.00224, 0.14792)),
    SiteSpec("left_palm", "left_wrist_yaw_link", (0.08, 0.0, 0.0)),
    SiteSpec("right_palm", "right_wrist_yaw_link", (0.08, 0.0, 0.0)),
    SiteSpec("left_foot", "left_ankle_roll_link", _foot_sole_centre("left_ankle_roll_link")),
    SiteSpec("right_foot", "right_ankle_roll_link", _foot_sole_centre("right_ankle_roll_link")),
)
"""Sites (pos in m, body frame). IMU and palm positions: :data:`SOURCE`. Foot
sites are ours: the bottom centre of each foot's sole capsules, (0.039, 0, -0.035)
m in the ankle-roll frame (the source places its foot site at (0.04, 0, -0.037))."""

IMU_SITE = "imu_in_pelvis"
"""Site of the pelvis IMU; the ``imu_*`` sensors are attached to it."""

G1_SENSOR_NAMES: tuple[str, ...] = (
    "imu_ang_vel",
    "imu_lin_vel",
    "imu_lin_acc",
    "imu_upvector",
    "root_angmom",
    "left_foot_lin_vel",
    "right_foot_lin_vel",
    "left_foot_pos",
    "right_foot_pos",
)
"""Sensor names in model order. ``imu_ang_vel`` gyro (rad/s, IMU frame),
``imu_lin_vel`` velocimeter (m/s, IMU frame), ``imu_lin_acc`` accelerometer
(m/s^2, IMU frame), ``imu_upvector`` world +z axis expressed in the IMU frame
(unit vector; equals minus the normalised projected gravity), ``root_angmom``
subtree angular momentum of the pelvis about the subtree CoM (kg*m^2/s, world
frame), ``*_foot_lin_vel`` foot site linear velocity (m/s, world frame),
``*_foot_pos`` foot site position (m, world frame)."""


# ---------------------------------------------------------------------------
# Motors and the armature (reflected rotor inertia) of each drive.
# Source: SOURCE (Unitree motor facts as listed by mjlab 1.6.0 ``g1_constants.py``).
# ---------------------------------------------------------------------------


def reflected_inertia(rotor_inertias: tuple[float, float, float], stage_ratios: tuple[float, float]) -> float:
    """Inertia (kg*m^2) seen at the output of a motor with a two-stage planetary.

    ``rotor_inertias = (I_rotor, I_stage1, I_stage2)`` are the rotating inertias
    (kg*m^2) of the rotor, the first-stage output member and the second-stage
    output member; ``stage_ratios = (r1, r2)`` are the two reductions. With
    output speed w the members spin at ``r1*r2*w``, ``r2*w`` and ``w``, so
    equating kinetic energies gives

        I_reflected = I_rotor * (r1*r2)**2 + I_stage1 * r2**2 + I_stage2.
    """
    i_rotor, i_stage1, i_stage2 = rotor_inertias
    r1, r2 = stage_ratios
    return i_rotor * (r1 * r2) ** 2 + i_stage1 * r2**2 + i_stage2


class MotorSpec(NamedTuple):
    """Facts about one Unitree drive unit.

    ``rotor_inertias`` (kg*m^2) and ``stage_ratios`` feed
    :func:`reflected_inertia`; ``effort_limit`` in N*m; ``velocity_limit`` in
    rad/s (informational, not enforced by the model).
    """

    rotor_inertias: tuple[float, float, float]
    stage_ratios: tuple[float, float]
    effort_limit: float
    velocity_limit: float


# A planetary stage with sun and ring tooth counts z_s, z_r reduces by 1 + z_r / z_s.
MOTORS: Mapping[str, MotorSpec] = MappingProxyType(
    {
        "7520-14": MotorSpec((0.489e-4, 0.098e-4, 0.533e-4), (4.5, 1 + 48 / 22), 88.0, 32.0),
        "7520-22": MotorSpec((0.489e-4, 0.109e-4, 0.738e-4), (4.5, 5.0), 139.0, 20.0),
        "5020": MotorSpec((0.139e-4, 0.017e-4, 0.169e-4), (1 + 46 / 18, 1 + 56 / 16), 25.0, 37.0),
        "4010": MotorSpec((0.068e-4, 0.0, 0.0), (5.0, 5.0), 5.0, 22.0),
    }
)
"""The four single drive units of the G1, keyed by Unitree motor type
(rotor inertias kg*m^2, stage ratios, effort N*m, velocity rad/s). Source: :data:`SOURCE`."""

LINKAGE_MOTOR = "2x5020"
"""Group key of the waist roll/pitch and ankle pitch/roll joints: each is driven
through a 4-bar linkage by two 5020 motors. Assuming a nominal 1:1 linkage ratio
(as mjlab does), armature, effort and hence gains are twice those of one 5020."""

MOTOR_ARMATURE: Mapping[str, float] = MappingProxyType(
    {
        **{name: reflected_inertia(m.rotor_inertias, m.stage_ratios) for name, m in MOTORS.items()},
        LINKAGE_MOTOR: 2.0 * reflected_inertia(MOTORS["5020"].rotor_inertias, MOTORS["5020"].stage_ratios),
    }
)
"""Armature per motor group (kg*m^2): 7520-14 0.010178, 7520-22 0.025102, 5020
0.003610, 2x5020 0.007219, 4010 0.00425 (mjlab 1.6.0 ``g1_constants.py``)."""

MOTOR_EFFORT_LIMIT: Mapping[str, float] = MappingProxyType(
    {**{name: m.effort_limit for name, m in MOTORS.items()}, LINKAGE_MOTOR: 2.0 * MOTORS["5020"].effort_limit}
)
"""Peak torque per motor group (N*m): 88 / 139 / 25 / 50 (2x5020) / 5. Source: :data:`SOURCE`."""

NATURAL_FREQUENCY_HZ = 10.0
"""Closed-loop natural frequency the PD gains are tuned for (Hz).
Source: mjlab 1.6.0 ``g1_constants.py``."""

NATURAL_FREQUENCY = 2.0 * math.pi * NATURAL_FREQUENCY_HZ
"""The same natural frequency as an angular rate, omega (rad/s)."""

DAMPING_RATIO = 2.0
"""Damping ratio zeta of the joint PD loop (dimensionless, overdamped).
Source: mjlab 1.6.0 ``g1_constants.py``."""

MOTOR_KP: Mapping[str, float] = MappingProxyType(
    {name: arm * NATURAL_FREQUENCY**2 for name, arm in MOTOR_ARMATURE.items()}
)
"""Stiffness per motor group, kp = I * omega^2 (N*m/rad): 40.18 / 99.10 / 14.25 / 28.50 / 16.78."""

MOTOR_KD: Mapping[str, float] = MappingProxyType(
    {name: 2.0 * DAMPING_RATIO * arm * NATURAL_FREQUENCY for name, arm in MOTOR_ARMATURE.items()}
)
"""Damping per motor group, kd = 2 * zeta * I * omega (N*m*s/rad): 2.558 / 6.309 / 0.907 / 1.814 / 1.068."""

JOINT_MOTOR: Mapping[str, str] = MappingProxyType({j.name: j.motor for j in G1_JOINTS})
"""Motor group of each joint (keys of :data:`MOTOR_KP`)."""

ARMATURE: Mapping[str, float] = MappingProxyType({j: MOTOR_ARMATURE[m] for j, m in JOINT_MOTOR.items()})
"""Joint armature (kg*m^2) per joint name, set on each hinge; equals the reflected motor inertia."""

KP: Mapping[str, float] = MappingProxyType({j: MOTOR_KP[m] for j, m in JOINT_MOTOR.items()})
"""Position-actuator stiffness kp (N*m/rad) per joint name (= actuator gainprm[0], -biasprm[1])."""

KD: Mapping[str, float] = MappingProxyType({j: MOTOR_KD[m] for j, m in JOINT_MOTOR.items()})
"""Position-actuator damping kd (N*m*s/rad) per joint name (= actuator kv, -biasprm[2])."""

EFFORT_LIMIT: Mapping[str, float] = MappingProxyType({j: MOTOR_EFFORT_LIMIT[m] for j, m in JOINT_MOTOR.items()})
"""Actuator force range +-effort (N*m) per joint name."""

ACTION_SCALE: dict[str, float] = {j: 0.25 * EFFORT_LIMIT[j] / KP[j] for j in G1_JOINT_NAMES}
"""Policy action scale per joint (rad per unit action): 0.25 * effort / kp, so a
unit action asks for a quarter of the peak torque. 7520-14 0.547, 7520-22 0.351,
5020 and 2x5020 0.439, 4010 0.0745. Source: mjlab 1.6.0 ``G1_ACTION_SCALE`` recipe."""


# ---------------------------------------------------------------------------
# Keyframes. Source: SOURCE (mjlab 1.6.0 ``KNEES_BENT_KEYFRAME`` / ``HOME_KEYFRAME``).
# ---------------------------------------------------------------------------


def _pose(**angles: float) -> dict[str, float]:
    """Full joint-position dict in Unitree order; unnamed joints are 0.

    Keys are joint names without ``_joint``; ``left_/right_`` omitted means both sides.
    """
    out = dict.fromkeys(G1_JOINT_NAMES, 0.0)
    for key, value in angles.items():
        names = [f"{key}_joint"] if key.startswith(("left_", "right_", "waist_")) else [
            f"left_{key}_joint", f"right_{key}_joint"
        ]
        for name in names:
            if name not in out:
                raise KeyError(name)
            out[name] = float(value)
    return out


KNEES_BENT_BASE_POS: Vec3 = (0.0, 0.0, 0.76)
"""Pelvis position (m) of the ``knees_bent`` keyframe; identity orientation.
Source: :data:`SOURCE`. Kept as in the source so resets match other frameworks:
the lowest sole-capsule point is then 3.0 mm above the floor (foot sites at
3.5 mm), i.e. the robot drops ~3 mm on the first steps; checked in tests."""

KNEES_BENT_JOINT_POS: Mapping[str, float] = MappingProxyType(
    _pose(
        hip_pitch=-0.312,
        knee=0.669,
        ankle_pitch=-0.363,
        elbow=0.6,
        shoulder_pitch=0.2,
        left_shoulder_roll=0.2,
        right_shoulder_roll=-0.2,
    )
)
"""Joint angles (rad) of the default ``knees_bent`` pose; others 0. Source: :data:`SOURCE`."""

HOME_BASE_POS: Vec3 = (0.0, 0.0, 0.783675)
"""Pelvis position (m) of the ``home`` keyframe; identity orientation. Source: :data:`SOURCE`.
With the primitive sole capsules the feet then sit 0.5 mm into the floor (harmless)."""

HOME_JOINT_POS: Mapping[str, float] = MappingProxyType(
    _pose(
        hip_pitch=-0.1,
        knee=0.3,
        ankle_pitch=-0.2,
        elbow=1.28,
        shoulder_pitch=0.2,
        left_shoulder_roll=0.2,
        right_shoulder_roll=-0.2,
    )
)
"""Joint angles (rad) of the ``home`` pose; others 0. Source: :data:`SOURCE`."""


def _qpos(base_pos: Vec3, joint_pos: Mapping[str, float]) -> np.ndarray:
    q = np.array([*base_pos, 1.0, 0.0, 0.0, 0.0, *(joint_pos[j] for j in G1_JOINT_NAMES)], dtype=np.float64)
    q.setflags(write=False)
    return q


KNEES_BENT_QPOS: np.ndarray = _qpos(KNEES_BENT_BASE_POS, KNEES_BENT_JOINT_POS)
"""Full qpos (36,) of ``knees_bent`` (read-only): pelvis pos (m), quat (w x y z), 29 joint angles (rad)."""

HOME_QPOS: np.ndarray = _qpos(HOME_BASE_POS, HOME_JOINT_POS)
"""Full qpos (36,) of ``home`` (read-only): pelvis pos (m), quat (w x y z), 29 joint angles (rad)."""

KEYFRAMES: Mapping[str, tuple[Vec3, Mapping[str, float]]] = MappingProxyType(
    {"knees_bent": (KNEES_BENT_BASE_POS, KNEES_BENT_JOINT_POS), "home": (HOME_BASE_POS, HOME_JOINT_POS)}
)
"""Keyframes in model order (``knees_bent`` first = default): name -> (pelvis pos m, joint angles rad)."""
