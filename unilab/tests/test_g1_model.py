"""Tests for the code-built Unitree G1 29-DoF model (unilab.robots.g1)."""

from __future__ import annotations

import time

import mujoco
import numpy as np
import pytest

from unilab.robots import g1
from unilab.robots.g1 import g1_constants as C
from unilab.robots.scene import RobotModelError

# One joint per motor group: (joint, kp, kd, effort, armature) from mjlab 1.6.0 ``g1_constants.py``.
GROUP_SAMPLES = [
    ("left_hip_pitch_joint", 40.18, 2.558, 88.0, 0.010178),  # 7520-14
    ("waist_yaw_joint", 40.18, 2.558, 88.0, 0.010178),  # 7520-14
    ("right_knee_joint", 99.10, 6.309, 139.0, 0.025102),  # 7520-22
    ("left_elbow_joint", 14.25, 0.907, 25.0, 0.003610),  # 5020
    ("right_wrist_roll_joint", 14.25, 0.907, 25.0, 0.003610),  # 5020
    ("left_ankle_roll_joint", 28.50, 1.814, 50.0, 0.007219),  # 2x5020
    ("waist_pitch_joint", 28.50, 1.814, 50.0, 0.007219),  # 2x5020
    ("right_wrist_pitch_joint", 16.78, 1.068, 5.0, 0.00425),  # 4010
]


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return g1.g1_model()


def _name(m: mujoco.MjModel, obj: mujoco.mjtObj, i: int) -> str:
    return mujoco.mj_id2name(m, obj, i)


def _scaled_gains(m: mujoco.MjModel, factor: float) -> None:
    m.actuator_gainprm[:, 0] *= factor
    m.actuator_biasprm[:, 1:3] *= factor


def _reset(m: mujoco.MjModel, key: int = 0) -> mujoco.MjData:
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, key)
    mujoco.mj_forward(m, d)
    return d


def test_dimensions_and_no_meshes(model):
    assert (model.nq, model.nv, model.nu) == (36, 35, 29)
    assert model.nmesh == 0
    assert model.nbody == 31  # world + 30 links
    assert model.nkey == 2


def test_compile_is_fast():
    start = time.perf_counter()
    g1.g1_model()
    assert time.perf_counter() - start < 0.5


def test_total_mass(model):
    assert abs(model.body_subtreemass[0] - 33.34) < 0.05
    assert abs(sum(b.mass for b in C.G1_BODIES) - 33.341) < 1e-3


def test_joint_names_and_order(model):
    free = [j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
    assert [_name(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in free] == ["floating_base_joint"]
    assert _name(model, mujoco.mjtObj.mjOBJ_BODY, model.jnt_bodyid[free[0]]) == "pelvis"
    hinges = [
        _name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
        for j in range(model.njnt)
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE
    ]
    assert hinges == list(g1.G1_JOINT_NAMES)
    assert len(g1.G1_JOINT_NAMES) == 29
    assert g1.G1_JOINT_NAMES[:6] == (
        "left_hip_pitch_joint",
        "left_hip_roll_joint",
        "left_hip_yaw_joint",
        "left_knee_joint",
        "left_ankle_pitch_joint",
        "left_ankle_roll_joint",
    )
    assert g1.G1_JOINT_NAMES[12:15] == ("waist_yaw_joint", "waist_roll_joint", "waist_pitch_joint")
    assert g1.G1_JOINT_NAMES[15:22] == (
        "left_shoulder_pitch_joint",
        "left_shoulder_roll_joint",
        "left_shoulder_yaw_joint",
        "left_elbow_joint",
        "left_wrist_roll_joint",
        "left_wrist_pitch_joint",
        "left_wrist_yaw_joint",
    )
    # qpos layout: hinge i lives at qpos[7 + i].
    for i, name in enumerate(g1.G1_JOINT_NAMES):
        assert model.jnt_qposadr[model.joint(name).id] == 7 + i
    bodies = [_name(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in range(1, model.nbody)]
    assert bodies == list(g1.G1_BODY_NAMES)
    for name in (g1.TORSO_BODY, g1.PELVIS_BODY, *g1.FOOT_BODIES):
        assert name in bodies


def test_joint_ranges(model):
    for name, (lo, hi) in g1.JOINT_RANGE.items():
        j = model.joint(name)
        assert j.limited[0]
        np.testing.assert_allclose(j.range, [lo, hi])


def test_actuators_named_like_joints(model):
    names = [_name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, a) for a in range(model.nu)]
    assert names == list(g1.G1_JOINT_NAMES)
    for a in range(model.nu):
        assert model.actuator_trntype[a] == mujoco.mjtTrn.mjTRN_JOINT
        assert _name(model, mujoco.mjtObj.mjOBJ_JOINT, model.actuator_trnid[a, 0]) == names[a]


@pytest.mark.parametrize(("joint", "kp", "kd", "effort", "armature"), GROUP_SAMPLES)
def test_actuator_gains_per_group(model, joint, kp, kd, effort, armature):
    act = model.actuator(joint)
    assert act.gainprm[0] == pytest.approx(g1.KP[joint])
    np.testing.assert_allclose(act.biasprm[:3], [0.0, -g1.KP[joint], -g1.KD[joint]])
    assert act.gainprm[0] == pytest.approx(kp, abs=0.01)
    assert -act.biasprm[2] == pytest.approx(kd, abs=0.001)
    assert act.forcelimited[0]
    np.testing.assert_allclose(act.forcerange, [-effort, effort])
    assert g1.EFFORT_LIMIT[joint] == effort
    dof = model.jnt_dofadr[model.joint(joint).id]
    assert model.dof_armature[dof] == pytest.approx(armature, abs=1e-6)
    assert model.dof_damping[dof] == 0.0  # damping lives in the actuator's kv
    assert g1.ACTION_SCALE[joint] == pytest.approx(0.25 * effort / g1.KP[joint])


def test_action_scale_table():
    expected = {"left_hip_pitch_joint": 0.547, "left_knee_joint": 0.351, "left_elbow_joint": 0.439,
                "left_ankle_pitch_joint": 0.439, "left_wrist_yaw_joint": 0.0745}  # fmt: skip
    for joint, scale in expected.items():
        assert g1.ACTION_SCALE[joint] == pytest.approx(scale, abs=6e-4)
    assert list(g1.ACTION_SCALE) == list(g1.G1_JOINT_NAMES)


def test_gain_derivation():
    omega = 2 * np.pi * 10.0
    for motor, arm in C.MOTOR_ARMATURE.items():
        assert C.MOTOR_KP[motor] == pytest.approx(arm * omega**2)
        assert C.MOTOR_KD[motor] == pytest.approx(2 * 2.0 * arm * omega)
    assert C.MOTOR_ARMATURE["2x5020"] == pytest.approx(2 * C.MOTOR_ARMATURE["5020"])


def test_collision_settings(model):
    foot = set(g1.FOOT_GEOM_NAMES)
    assert len(foot) == 14
    robot_geoms = [g for g in range(model.ngeom) if model.geom_bodyid[g] != 0]
    assert len(robot_geoms) == 33
    for g in robot_geoms:
        name = _name(model, mujoco.mjtObj.mjOBJ_GEOM, g)
        assert int(model.geom_type[g]) in (mujoco.mjtGeom.mjGEOM_CAPSULE, mujoco.mjtGeom.mjGEOM_SPHERE)
        assert model.geom_contype[g] == 1 and model.geom_conaffinity[g] == 1
        if name in foot:
            assert model.geom_condim[g] == 3
            assert model.geom_priority[g] == 1
            assert model.geom_friction[g, 0] == pytest.approx(0.6)
            assert _name(model, mujoco.mjtObj.mjOBJ_BODY, model.geom_bodyid[g]) in g1.FOOT_BODIES
        else:
            assert model.geom_condim[g] == 1
    floor = model.geom("floor")
    assert floor.condim[0] == 3
    assert floor.contype[0] == 1 and floor.conaffinity[0] == 1
    assert model.nexclude == 4


def test_no_floor_option():
    m = g1.g1_model(with_floor=False)
    assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor") == -1
    assert (m.nq, m.nu) == (36, 29)


def test_options(model):
    assert model.opt.timestep == pytest.approx(0.005)
    assert model.opt.integrator == mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    assert model.opt.solver == mujoco.mjtSolver.mjSOL_NEWTON
    assert model.opt.iterations == 10
    assert model.opt.ls_iterations == 20
    assert model.opt.cone == mujoco.mjtCone.mjCONE_PYRAMIDAL


def test_keyframes(model):
    assert _name(model, mujoco.mjtObj.mjOBJ_KEY, 0) == "knees_bent"
    assert _name(model, mujoco.mjtObj.mjOBJ_KEY, 1) == "home"
    np.testing.assert_allclose(model.key_qpos[0], g1.KNEES_BENT_QPOS)
    np.testing.assert_allclose(model.key_qpos[1], g1.HOME_QPOS)
    np.testing.assert_allclose(model.key_ctrl[0], g1.KNEES_BENT_QPOS[7:])
    np.testing.assert_allclose(model.key_ctrl[1], g1.HOME_QPOS[7:])
    assert g1.KNEES_BENT_QPOS.shape == (36,)
    q = g1.KNEES_BENT_QPOS
    assert q[2] == pytest.approx(0.76)
    assert q[7 + g1.G1_JOINT_NAMES.index("left_hip_pitch_joint")] == pytest.approx(-0.312)
    assert q[7 + g1.G1_JOINT_NAMES.index("right_knee_joint")] == pytest.approx(0.669)
    assert q[7 + g1.G1_JOINT_NAMES.index("left_shoulder_roll_joint")] == pytest.approx(0.2)
    assert q[7 + g1.G1_JOINT_NAMES.index("right_shoulder_roll_joint")] == pytest.approx(-0.2)
    assert g1.HOME_QPOS[2] == pytest.approx(0.783675)
    assert not g1.KNEES_BENT_QPOS.flags.writeable


def _capsule_bottoms(m: mujoco.MjModel, d: mujoco.MjData) -> np.ndarray:
    z = []
    for name in g1.FOOT_GEOM_NAMES:
        g = m.geom(name).id
        axis = d.geom_xmat[g].reshape(3, 3)[:, 2] * m.geom_size[g, 1]
        ends = (d.geom_xpos[g] + axis, d.geom_xpos[g] - axis)
        z.append(min(e[2] for e in ends) - m.geom_size[g, 0])
    return np.array(z)


@pytest.mark.parametrize("key", [0, 1])
def test_feet_on_floor_at_keyframe(model, key):
    d = _reset(model, key)
    bottoms = _capsule_bottoms(model, d)
    assert bottoms.min() > -0.005
    assert bottoms.min() < 0.02
    assert bottoms.max() < 0.03
    for site in g1.FOOT_SITES:
        assert -0.005 < d.site(site).xpos[2] < 0.03
        assert -0.005 < d.sensor(f"{site}_pos").data[2] < 0.03
    floor = model.geom("floor").id
    # Only (near-)touching sole/floor contacts; no self-penetration in the pose.
    for c in d.contact[: d.ncon]:
        assert floor in (c.geom1, c.geom2)
        assert c.dist > -0.001
    if key == 0:
        assert d.ncon == 0  # knees_bent starts ~3 mm above the floor


def test_sites(model):
    for site, body in zip(g1.FOOT_SITES, g1.FOOT_BODIES):
        assert _name(model, mujoco.mjtObj.mjOBJ_BODY, model.site(site).bodyid[0]) == body
    assert _name(model, mujoco.mjtObj.mjOBJ_BODY, model.site("imu_in_pelvis").bodyid[0]) == "pelvis"
    assert _name(model, mujoco.mjtObj.mjOBJ_BODY, model.site("imu_in_torso").bodyid[0]) == "torso_link"


def test_sensors(model):
    names = [_name(model, mujoco.mjtObj.mjOBJ_SENSOR, s) for s in range(model.nsensor)]
    assert names == list(g1.G1_SENSOR_NAMES)
    assert model.nsensordata == 9 * 3
    d = _reset(model)
    np.testing.assert_allclose(d.sensor("imu_upvector").data, [0, 0, 1], atol=1e-9)
    np.testing.assert_allclose(d.sensor("left_foot_pos").data, d.site("left_foot").xpos)
    assert model.sensor("imu_ang_vel").type[0] == mujoco.mjtSensor.mjSENS_GYRO
    assert model.sensor("root_angmom").type[0] == mujoco.mjtSensor.mjSENS_SUBTREEANGMOM


def test_stands_one_second_with_gains_x10():
    m = g1.g1_model()
    _scaled_gains(m, 10.0)
    d = _reset(m)
    heights = []
    for _ in range(int(round(1.0 / m.opt.timestep))):
        mujoco.mj_step(m, d)
        heights.append(d.qpos[2])
    assert min(heights) > 0.6
    assert np.isfinite(d.qpos).all()


def test_default_gains_no_nan(model):
    d = _reset(model)
    np.testing.assert_allclose(d.ctrl, g1.KNEES_BENT_QPOS[7:])
    for _ in range(200):
        mujoco.mj_step(model, d)
    assert np.isfinite(d.qpos).all() and np.isfinite(d.qvel).all()
    assert np.isfinite(d.sensordata).all()
    assert np.all(np.abs(d.actuator_force) <= model.actuator_forcerange[:, 1] + 1e-9)


def test_scene_xml_roundtrip(model):
    xml = g1.g1_scene_xml()
    assert "<mesh" not in xml
    m = mujoco.MjModel.from_xml_string(xml)
    assert (m.nq, m.nv, m.nu, m.nkey, m.ngeom) == (model.nq, model.nv, model.nu, model.nkey, model.ngeom)
    np.testing.assert_allclose(m.key_qpos, model.key_qpos)
    # MJCF text keeps 6 significant digits.
    np.testing.assert_allclose(m.actuator_biasprm, model.actuator_biasprm, rtol=1e-5)
    assert m.body_subtreemass[0] == pytest.approx(model.body_subtreemass[0])


def _robot_xml_without_actuators(tmp_path, extra_key: bool = False):
    spec = g1.g1_robot_spec()
    for act in list(spec.actuators):
        spec.delete(act)
    if extra_key:
        spec.add_key(name="user_pose", qpos=np.asarray(g1.HOME_QPOS).tolist())
    spec.compile()
    path = tmp_path / "user_g1.xml"
    path.write_text(spec.to_xml())
    return path


def test_user_mjcf_without_actuators_gets_the_project_servos(tmp_path):
    path = _robot_xml_without_actuators(tmp_path)
    m = g1.g1_model(mjcf=path)
    assert m.nu == 29
    assert m.actuator("left_knee_joint").gainprm[0] == pytest.approx(g1.KP["left_knee_joint"])


def test_scene_from_user_mjcf_keeps_user_keys_after_ours(tmp_path):
    path = _robot_xml_without_actuators(tmp_path, extra_key=True)
    m = g1.g1_model(mjcf=path)
    keys = [_name(m, mujoco.mjtObj.mjOBJ_KEY, k) for k in range(m.nkey)]
    assert keys == ["knees_bent", "home", "user_pose"]
    np.testing.assert_allclose(m.key_qpos[0], g1.KNEES_BENT_QPOS)
    np.testing.assert_allclose(m.key_qpos[2], g1.HOME_QPOS)
    assert mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "floor") >= 0


def test_user_mjcf_missing_joints_names_the_first_and_the_file(tmp_path):
    path = tmp_path / "partial.xml"
    path.write_text(
        """<mujoco><worldbody><body name="pelvis"><freejoint/>
        <geom size="0.1"/>
        <body name="l"><joint name="left_hip_pitch_joint" axis="0 1 0"/><geom size="0.05"/></body>
        </body></worldbody></mujoco>"""
    )
    with pytest.raises(RobotModelError) as err:
        g1.g1_scene_spec(mjcf=path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{path} has no joint 'left_hip_roll_joint' (and 27 more: ")
    assert "right_knee_joint" in message and "left_hip_pitch_joint," not in message
