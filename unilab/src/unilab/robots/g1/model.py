"""Build the Unitree G1 29-DoF MuJoCo model in code (``mujoco.MjSpec``), without meshes.

The robot is assembled from the tables in :mod:`unilab.robots.g1.g1_constants`
(source of the numbers: Unitree G1 29-DoF rev 1.0 via MuJoCo Menagerie
unitree_g1 / mjlab 1.6.0 g1_constants.py; see ``NOTICE``). Collision
primitives double as visuals and are coloured by limb so a render is readable.

Modelling choices
-----------------
* **Actuators**: one MuJoCo position actuator per hinge, named like its joint,
  with ``kp = KP[joint]`` and the damping ``KD[joint]`` implemented as the
  actuator's ``kv`` (``gainprm[0] = kp``, ``biasprm[:3] = (0, -kp, -kv)``), not
  as passive joint damping: the PD torque is then clamped as a whole by
  ``forcerange = +-EFFORT_LIMIT`` like a real motor, and the ``implicitfast``
  integrator treats the ``kv`` term implicitly. No ctrl range (targets are in
  rad and unclipped); joint ``armature = ARMATURE[joint]``.
* **Collision**: all geoms have ``contype = conaffinity = 1``, so everything
  touches the floor and non-adjacent links collide with each other (MuJoCo
  filters parent/child pairs; four overlapping pairs are excluded explicitly).
  Sole capsules use condim 3, priority 1 and friction 0.6; all other geoms
  condim 1 (mjlab's FULL_COLLISION preset).
* **Scene**: :func:`g1_scene_spec` hands the robot to the scene builder
  (:mod:`unilab.robots.scene`), which adds the task sensors, a floor plane
  (condim 3, default friction), a light, a tracking camera, the physics
  options and the keyframes ``knees_bent`` (keyframe 0, default) and ``home``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import mujoco

from unilab.robots.g1 import g1_constants as C

__all__ = [
    "add_g1_actuators",
    "g1_model",
    "g1_robot_spec",
    "g1_scene_spec",
    "g1_scene_xml",
]

# Readable colours (rgba) for the primitive geoms.
_RGBA_TRUNK = (0.55, 0.57, 0.62, 1.0)
_RGBA_HEAD = (0.85, 0.86, 0.88, 1.0)
_RGBA_LEFT_LEG = (0.20, 0.42, 0.80, 1.0)
_RGBA_RIGHT_LEG = (0.40, 0.62, 0.95, 1.0)
_RGBA_FOOT = (0.15, 0.15, 0.18, 1.0)
_RGBA_LEFT_ARM = (0.92, 0.50, 0.12, 1.0)
_RGBA_RIGHT_ARM = (0.98, 0.72, 0.32, 1.0)
_RGBA_SITE = (1.0, 0.1, 0.1, 1.0)

_LEG_WORDS = ("hip", "knee", "ankle")


def _geom_rgba(geom: C.GeomSpec) -> tuple[float, float, float, float]:
    if geom.foot:
        return _RGBA_FOOT
    if geom.name.startswith("head"):
        return _RGBA_HEAD
    side = "left" if geom.body.startswith("left_") else "right" if geom.body.startswith("right_") else None
    if side is None:
        return _RGBA_TRUNK
    is_leg = any(w in geom.body for w in _LEG_WORDS)
    if is_leg:
        return _RGBA_LEFT_LEG if side == "left" else _RGBA_RIGHT_LEG
    return _RGBA_LEFT_ARM if side == "left" else _RGBA_RIGHT_ARM


def _add_geom(body: mujoco.MjsBody, geom: C.GeomSpec) -> None:
    g = body.add_geom()
    g.name = geom.name
    if geom.kind == "capsule":
        g.type = mujoco.mjtGeom.mjGEOM_CAPSULE
        g.fromto = list(geom.fromto)
    elif geom.kind == "sphere":
        g.type = mujoco.mjtGeom.mjGEOM_SPHERE
        g.pos = list(geom.pos)
    else:  # pragma: no cover - table only holds capsules and spheres
        raise ValueError(f"unsupported geom kind {geom.kind!r}")
    g.size = [geom.radius, 0.0, 0.0]
    g.contype = 1
    g.conaffinity = 1
    g.group = 0
    g.rgba = list(_geom_rgba(geom))
    if geom.foot:
        g.condim = C.FOOT_CONDIM
        g.priority = C.FOOT_PRIORITY
        g.friction = [C.FOOT_FRICTION, 0.005, 0.0001]
    else:
        g.condim = C.NON_FOOT_CONDIM
        g.priority = 0


def add_g1_actuators(spec: mujoco.MjSpec, joint_names: Sequence[str] = C.G1_JOINT_NAMES) -> None:
    """Add one position actuator per joint of ``joint_names`` to ``spec``.

    Each actuator is named exactly like its joint and uses the G1 gains:
    stiffness ``KP[j]`` (N*m/rad), damping ``KD[j]`` as the actuator ``kv``
    (N*m*s/rad) and force range ``+-EFFORT_LIMIT[j]`` (N*m). Gains follow
    kp = I*omega^2, kd = 2*zeta*I*omega with omega = 2*pi*10 rad/s, zeta = 2
    and I the joint armature (mjlab 1.6.0 ``g1_constants.py``;
    :data:`~unilab.robots.g1.g1_constants.SOURCE`).
    The control (a joint-position target, rad) is not range-limited.
    """
    for name in joint_names:
        act = spec.add_actuator()
        act.name = name
        act.target = name
        act.trntype = mujoco.mjtTrn.mjTRN_JOINT
        act.set_to_position(kp=C.KP[name], kv=C.KD[name])
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
        act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        act.forcerange = [-C.EFFORT_LIMIT[name], C.EFFORT_LIMIT[name]]


def g1_robot_spec() -> mujoco.MjSpec:
    """The G1 robot alone as a fresh ``mujoco.MjSpec`` (no floor, options or keyframes).

    Contains the 30 links with explicit inertias (total 33.341 kg), the free
    joint ``floating_base_joint`` on ``pelvis``, 29 hinges (Unitree order)
    with armature, 33 primitive collision geoms, the sites ``imu_in_pelvis``,
    ``imu_in_torso``, ``left_palm``, ``right_palm``, ``left_foot``,
    ``right_foot`` and 29 position actuators (the task sensors are the scene
    builder's, :mod:`unilab.robots.scene`). Lengths in m,
    angles in rad. Source: :data:`~unilab.robots.g1.g1_constants.SOURCE`.
    """
    spec = mujoco.MjSpec()
    spec.modelname = "unitree_g1_29dof"
    spec.compiler.degree = False
    spec.compiler.autolimits = True

    bodies: dict[str, mujoco.MjsBody] = {"world": spec.worldbody}
    for b in C.G1_BODIES:
        body = bodies[b.parent].add_body()
        body.name = b.name
        body.pos = list(b.pos)
        if b.quat is not None:
            body.quat = list(b.quat)
        body.mass = b.mass
        body.ipos = list(b.com)
        body.iquat = list(b.inertia_quat)
        body.inertia = list(b.inertia)
        body.explicitinertial = True
        bodies[b.name] = body
        if b.name == C.PELVIS_BODY:
            body.add_freejoint().name = C.FLOATING_BASE_JOINT

    for j in C.G1_JOINTS:
        joint = bodies[j.body].add_joint()
        joint.name = j.name
        joint.type = mujoco.mjtJoint.mjJNT_HINGE
        joint.axis = list(j.axis)
        joint.range = list(j.range)
        joint.limited = mujoco.mjtLimited.mjLIMITED_TRUE
        joint.armature = C.ARMATURE[j.name]

    for geom in C.G1_COLLISION_GEOMS:
        _add_geom(bodies[geom.body], geom)

    for s in C.G1_SITES:
        site = bodies[s.body].add_site()
        site.name = s.name
        site.pos = list(s.pos)
        site.size = [0.01, 0.01, 0.01]
        site.rgba = list(_RGBA_SITE)
        site.group = 4

    for body1, body2 in C.G1_CONTACT_EXCLUDES:
        ex = spec.add_exclude()
        ex.bodyname1, ex.bodyname2 = body1, body2

    add_g1_actuators(spec)
    return spec


def g1_scene_spec(
    *, with_floor: bool = True, mjcf: str | os.PathLike[str] | None = None, actuators: str = "project"
) -> mujoco.MjSpec:
    """A complete G1 scene as a fresh ``mujoco.MjSpec``: :func:`unilab.robots.scene.build_scene`
    of :data:`unilab.robots.g1.G1`.

    The robot is :func:`g1_robot_spec` (or the user MJCF ``mjcf``, joints and bodies matched by
    name, drives per ``actuators``), plus the task sensors, foot sites, a floor plane named
    ``floor`` (if ``with_floor`` and the world has none), a light, a ``tracking`` camera, the
    options timestep 0.005 s, implicitfast, Newton, iterations 10, ls_iterations 20, pyramidal
    cone (mjlab 1.6.0 velocity task settings, ``tasks/velocity/velocity_env_cfg.py``), and the
    keyframes ``knees_bent`` (index 0, default) and ``home``. Prints nothing.

    Raises:
        unilab.robots.scene.RobotModelError: a user file that cannot serve (one line).
    """
    from unilab.robots.g1.robot import G1
    from unilab.robots.scene import build_scene

    return build_scene(G1, mjcf=mjcf, actuators=actuators, with_floor=with_floor).spec


def g1_scene_xml(*, with_floor: bool = True, mjcf: str | os.PathLike[str] | None = None) -> str:
    """MJCF text of the compiled :func:`g1_scene_spec` scene (asset paths absolute)."""
    spec = g1_scene_spec(with_floor=with_floor, mjcf=mjcf)
    spec.compile()
    return spec.to_xml()


def g1_model(*, with_floor: bool = True, mjcf: str | os.PathLike[str] | None = None) -> mujoco.MjModel:
    """Compiled ``mujoco.MjModel`` of :func:`g1_scene_spec` (nq 36, nv 35, nu 29, 33.341 kg)."""
    return g1_scene_spec(with_floor=with_floor, mjcf=mjcf).compile()
