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
* **Scene**: floor plane (condim 3, default friction), a light, a tracking
  camera, options timestep 0.005 s, implicitfast, Newton, 10 iterations,
  20 line-search iterations, pyramidal cone; keyframes ``knees_bent``
  (keyframe 0, default) and ``home``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import mujoco
import numpy as np

from unilab.robots.g1 import g1_constants as C

__all__ = [
    "add_g1_actuators",
    "add_g1_keyframes",
    "g1_model",
    "g1_robot_spec",
    "g1_scene_spec",
    "g1_scene_xml",
    "load_g1_from_mjcf",
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
    and I the joint armature (tasks.md 1.3; :data:`~unilab.robots.g1.g1_constants.SOURCE`).
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


def _add_sensors(spec: mujoco.MjSpec) -> None:
    site, body = mujoco.mjtObj.mjOBJ_SITE, mujoco.mjtObj.mjOBJ_BODY
    S = mujoco.mjtSensor

    def add(name: str, kind: mujoco.mjtSensor, objtype, objname: str, reftype=None, refname: str = "") -> None:
        s = spec.add_sensor()
        s.name, s.type, s.objtype, s.objname = name, kind, objtype, objname
        if reftype is not None:
            s.reftype, s.refname = reftype, refname

    add("imu_ang_vel", S.mjSENS_GYRO, site, C.IMU_SITE)
    add("imu_lin_vel", S.mjSENS_VELOCIMETER, site, C.IMU_SITE)
    add("imu_lin_acc", S.mjSENS_ACCELEROMETER, site, C.IMU_SITE)
    # World +z expressed in the IMU frame ("up vector" = -projected gravity).
    add("imu_upvector", S.mjSENS_FRAMEZAXIS, body, "world", site, C.IMU_SITE)
    add("root_angmom", S.mjSENS_SUBTREEANGMOM, body, C.PELVIS_BODY)
    for foot in C.FOOT_SITES:
        add(f"{foot}_lin_vel", S.mjSENS_FRAMELINVEL, site, foot)
    for foot in C.FOOT_SITES:
        add(f"{foot}_pos", S.mjSENS_FRAMEPOS, site, foot)


def g1_robot_spec() -> mujoco.MjSpec:
    """The G1 robot alone as a fresh ``mujoco.MjSpec`` (no floor, options or keyframes).

    Contains the 30 links with explicit inertias (total 33.341 kg), the free
    joint ``floating_base_joint`` on ``pelvis``, 29 hinges (Unitree order)
    with armature, 33 primitive collision geoms, the sites ``imu_in_pelvis``,
    ``imu_in_torso``, ``left_palm``, ``right_palm``, ``left_foot``,
    ``right_foot``, 29 position actuators and the sensors of
    :data:`~unilab.robots.g1.g1_constants.G1_SENSOR_NAMES`. Lengths in m,
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
    _add_sensors(spec)
    return spec


def load_g1_from_mjcf(path: str | os.PathLike[str]) -> mujoco.MjSpec:
    """Load a user's G1 MJCF file (e.g. a meshed variant) as a ``mujoco.MjSpec``.

    Checks that all 29 joints of
    :data:`~unilab.robots.g1.g1_constants.G1_JOINT_NAMES` exist (raises
    ``ValueError`` naming the missing ones). If the file defines no actuators,
    the G1 position actuators of :func:`add_g1_actuators` are added; existing
    actuators, joint properties (armature, damping), sites and sensors are
    left exactly as the file has them. Note that the task sensors and the foot
    sites referenced in ``G1_SENSOR_NAMES``/``FOOT_SITES`` must then be
    provided by the file itself.
    """
    spec = mujoco.MjSpec.from_file(os.fspath(path))
    present = {j.name for j in spec.joints}
    missing = [name for name in C.G1_JOINT_NAMES if name not in present]
    if missing:
        raise ValueError(f"G1 MJCF {os.fspath(path)!r} lacks {len(missing)} of the 29 G1 joints: {', '.join(missing)}")
    if not spec.actuators:
        add_g1_actuators(spec)
    return spec


def _key_vectors(
    model: mujoco.MjModel, base_pos: Sequence[float], joint_pos: Mapping[str, float]
) -> tuple[np.ndarray, np.ndarray]:
    """qpos and ctrl of a pose for ``model``, addressing joints by name."""
    qpos = model.qpos0.copy()
    for j in range(model.njnt):
        adr = model.jnt_qposadr[j]
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE and model.jnt_bodyid[j] != 0:
            qpos[adr : adr + 7] = [*base_pos, 1.0, 0.0, 0.0, 0.0]
        else:
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
            if name in joint_pos:
                qpos[adr] = joint_pos[name]
    ctrl = np.zeros(model.nu)
    for a in range(model.nu):
        is_position = model.actuator_biastype[a] == mujoco.mjtBias.mjBIAS_AFFINE and model.actuator_biasprm[a, 1] != 0
        if model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT and is_position:
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, model.actuator_trnid[a, 0])
            ctrl[a] = joint_pos.get(name, 0.0)
    return qpos, ctrl


def add_g1_keyframes(spec: mujoco.MjSpec) -> None:
    """Insert the ``knees_bent`` (index 0, the default) and ``home`` keyframes.

    qpos holds the pelvis position (m), identity orientation and the joint
    angles (rad) of :data:`~unilab.robots.g1.g1_constants.KEYFRAMES`; ctrl holds
    the same angles as position targets. Joints are matched by name, so this
    also works for user MJCFs; keyframes already in ``spec`` are kept after
    ours (one named like ours is replaced). Source: mjlab 1.6.0 keyframes / tasks.md 1.2.
    """
    model = spec.compile()
    existing = []
    for key in list(spec.keys):
        if key.name not in C.KEYFRAMES:
            existing.append(
                {f: np.array(getattr(key, f)) for f in ("qpos", "qvel", "act", "ctrl", "mpos", "mquat")}
                | {"name": key.name, "time": key.time}
            )
        spec.delete(key)
    for name, (base_pos, joint_pos) in C.KEYFRAMES.items():
        qpos, ctrl = _key_vectors(model, base_pos, joint_pos)
        spec.add_key(name=name, qpos=qpos.tolist(), ctrl=ctrl.tolist())
    for fields in existing:
        key = spec.add_key()
        for f, value in fields.items():
            setattr(key, f, value.tolist() if isinstance(value, np.ndarray) else value)


def _look_quat(forward: Sequence[float]) -> list[float]:
    """Camera quaternion (w, x, y, z) looking along ``forward`` with world +z up."""
    f = np.asarray(forward, dtype=np.float64)
    f /= np.linalg.norm(f)
    x = np.cross(f, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    y = np.cross(x, f)
    mat = np.column_stack([x, y, -f])  # camera looks along its -z axis
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, mat.flatten())
    return quat.tolist()


def _add_scene(spec: mujoco.MjSpec, *, with_floor: bool) -> None:
    opt = spec.option
    opt.timestep = 0.005
    opt.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
    opt.iterations = 10
    opt.ls_iterations = 20
    opt.cone = mujoco.mjtCone.mjCONE_PYRAMIDAL

    spec.visual.headlight.ambient = [0.3, 0.3, 0.3]
    spec.visual.headlight.diffuse = [0.5, 0.5, 0.5]

    light = spec.worldbody.add_light()
    light.name = "sun"
    light.pos = [0.0, 0.0, 4.0]
    light.dir = [0.0, 0.0, -1.0]
    light.type = mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
    light.diffuse = [0.6, 0.6, 0.6]
    light.castshadow = True

    pelvis = spec.body(C.PELVIS_BODY)
    if pelvis is not None and spec.camera("tracking") is None:
        cam = pelvis.add_camera()
        cam.name = "tracking"
        cam.mode = mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM
        offset = np.array([1.6, -2.4, 0.4])
        cam.pos = offset.tolist()
        cam.quat = _look_quat(-offset - [0.0, 0.0, 0.3])

    if with_floor and spec.geom("floor") is None:
        tex = spec.add_texture()
        tex.name = "floor_grid"
        tex.type = mujoco.mjtTexture.mjTEXTURE_2D
        tex.builtin = mujoco.mjtBuiltin.mjBUILTIN_CHECKER
        tex.rgb1 = [0.32, 0.36, 0.40]
        tex.rgb2 = [0.24, 0.27, 0.30]
        tex.mark = mujoco.mjtMark.mjMARK_EDGE
        tex.markrgb = [0.5, 0.5, 0.5]
        tex.width = tex.height = 256
        mat = spec.add_material()
        mat.name = "floor_grid"
        mat.texrepeat = [1.0, 1.0]
        mat.texuniform = True
        textures = list(mat.textures)
        textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "floor_grid"
        mat.textures = textures
        floor = spec.worldbody.add_geom()
        floor.name = "floor"
        floor.type = mujoco.mjtGeom.mjGEOM_PLANE
        floor.size = [0.0, 0.0, 0.05]  # infinite plane
        floor.condim = 3
        floor.contype = 1
        floor.conaffinity = 1
        floor.material = "floor_grid"


def g1_scene_spec(*, with_floor: bool = True, mjcf: str | os.PathLike[str] | None = None) -> mujoco.MjSpec:
    """A complete G1 scene as a fresh ``mujoco.MjSpec``.

    The robot is :func:`g1_robot_spec` (or :func:`load_g1_from_mjcf` of
    ``mjcf`` when given). Adds a floor plane named ``floor`` (condim 3,
    default friction; only if ``with_floor`` and the robot file has none), a
    light, a ``tracking`` camera, the options timestep 0.005 s, implicitfast,
    Newton, iterations 10, ls_iterations 20, pyramidal cone (mjlab 1.6.0
    velocity task settings, tasks.md 1.2), and the keyframes ``knees_bent``
    (index 0, default) and ``home`` (:func:`add_g1_keyframes`).
    """
    spec = g1_robot_spec() if mjcf is None else load_g1_from_mjcf(mjcf)
    _add_scene(spec, with_floor=with_floor)
    add_g1_keyframes(spec)
    return spec


def g1_scene_xml(*, with_floor: bool = True, mjcf: str | os.PathLike[str] | None = None) -> str:
    """MJCF text of the compiled :func:`g1_scene_spec` scene (self-contained, no meshes)."""
    spec = g1_scene_spec(with_floor=with_floor, mjcf=mjcf)
    spec.compile()
    return spec.to_xml()


def g1_model(*, with_floor: bool = True, mjcf: str | os.PathLike[str] | None = None) -> mujoco.MjModel:
    """Compiled ``mujoco.MjModel`` of :func:`g1_scene_spec` (nq 36, nv 35, nu 29, 33.341 kg)."""
    return g1_scene_spec(with_floor=with_floor, mjcf=mjcf).compile()
