"""g1_walk_flat reward terms on hand-built states whose expected value follows from the kernel.

Every state is written with ``set_state`` (mj_forward), so sensors and contacts match it. The
robot starts at the default ``knees_bent`` pose with identity orientation (reset yaw 0, no height
offset); its feet then float 3.5 mm above the floor, so ``grounded`` lowers the base by 4 mm to
put both soles in contact.
"""

from __future__ import annotations

import math

import pytest
import torch

from unilab.envs import mdp
from unilab.robots import g1
from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
from unisim.backends.mujoco import MujocoBackend

N = 2
JOINTS = list(g1.G1_JOINT_NAMES)


# mjlab's recipe alone: the code default without holosoma's gait clock, alive bonus, posture
# and roll/pitch-rate penalties, yaw-only kernel, penalty curriculum and the narrow linear
# kernel, at mjlab's weights
MJLAB = {
    "gait": {"enabled": False}, "penalty_curriculum": {"enabled": False},
    "tracking": {"ang_vel_kernel": "coupled"},
    "rewards": {"alive": 0.0, "feet_phase": 0.0, "orientation_l2": 0.0, "pose_l2": 0.0,
                "ang_vel_xy": 0.0, "track_linear_velocity": 2.0, "track_linear_velocity_fine": 0.0,
                "track_angular_velocity_fine": 0.0},
}  # fmt: skip


@pytest.fixture(scope="module")
def env():
    cfg = G1WalkFlatConfig(
        **MJLAB, reset_yaw_rad=0.0, reset_xy_m=0.0, reset_z_m=(0.0, 0.0), observation_noise=False,
        domain_randomization={"enabled": False}, push={"enabled": False},
    )  # fmt: skip
    e = make_env(cfg, backend_cls=MujocoBackend, num_envs=N, nthread=1, seed=0)
    yield e
    e.close()


def put(env, *, joints=None, base_quat=None, base_z=0.0, lin_vel=None, ang_vel=None, command=(0, 0, 0)):
    """Reset, then write one state into every row and refresh the env's views."""
    env.reset()
    qpos = env.backend.qpos.clone()
    qvel = torch.zeros_like(env.backend.qvel)
    qpos[:, 2] += base_z
    if base_quat is not None:
        qpos[:, 3:7] = torch.tensor(base_quat)
    for name, value in (joints or {}).items():
        qpos[:, env.meta.qpos_adr[JOINTS.index(name)]] = value
    if lin_vel is not None:
        qvel[:, 0:3] = torch.tensor(lin_vel)
    if ang_vel is not None:
        qvel[:, 3:6] = torch.tensor(ang_vel)
    env.backend.set_state(torch.arange(N), qpos=qpos, qvel=qvel)
    env.robot.refresh()
    for sensor in env.contact_sensors.values():
        sensor.refresh()
    env.commands["twist"].command[:] = torch.tensor(command, dtype=torch.float32)
    env.step_cache.clear()  # the state and command changed outside a step


def term(env, name):
    t = env.reward_manager.terms[name]
    value = t.func(env, **t.params)
    assert value.shape == (N,) and value.dtype == torch.float32
    return value


def grounded(**kw):
    return {"base_z": -0.004, **kw}


def test_all_weighted_terms_exist_with_mjlab_weights(env):
    weights = {k: t.weight for k, t in env.reward_manager.terms.items()}
    assert weights == {
        "track_linear_velocity": 2.0, "track_angular_velocity": 2.0, "upright": 1.0, "pose": 1.0,
        "body_ang_vel": -0.05, "angular_momentum": -0.02, "action_rate_l2": -0.1,
        "joint_pos_limits": -1.0, "foot_clearance": -2.0, "foot_slip": -0.1, "self_collisions": -1.0,
    }  # fmt: skip  (air_time has weight 0 and is not evaluated)


def test_velocity_tracking_is_one_on_command_and_follows_the_kernel(env):
    put(env, lin_vel=(0.5, 0.2, 0.0), ang_vel=(0.0, 0.0, 0.4), command=(0.5, 0.2, 0.4))
    assert torch.allclose(term(env, "track_linear_velocity"), torch.ones(N), atol=1e-6)
    assert torch.allclose(term(env, "track_angular_velocity"), torch.ones(N), atol=1e-6)
    # vz = 0.1 m/s: exp(-0.01 / 0.25); roll rate 0.3 rad/s: exp(-0.09 / 0.5)
    put(env, lin_vel=(0.5, 0.2, 0.1), ang_vel=(0.3, 0.0, 0.4), command=(0.5, 0.2, 0.4))
    assert torch.allclose(term(env, "track_linear_velocity"), torch.full((N,), math.exp(-0.04)), atol=1e-5)
    assert torch.allclose(term(env, "track_angular_velocity"), torch.full((N,), math.exp(-0.18)), atol=1e-5)


def test_upright_is_one_when_upright_and_exp_sin2_when_tilted(env):
    put(env)
    assert torch.allclose(term(env, "upright"), torch.ones(N), atol=1e-6)
    theta = 0.3
    quat = (math.cos(theta / 2), math.sin(theta / 2), 0.0, 0.0)  # roll by theta
    put(env, base_quat=quat)
    expected = math.exp(-math.sin(theta) ** 2 / 0.2)  # torso follows the pelvis (waist at 0)
    assert torch.allclose(term(env, "upright"), torch.full((N,), expected), atol=1e-5)
    pelvis = mdp.upright(env, std=math.sqrt(0.2))
    assert torch.allclose(pelvis, torch.full((N,), expected), atol=1e-5)


@pytest.mark.parametrize(
    "command, joint, offset",
    [((0.0, 0.0, 0.0), "left_knee_joint", 0.05),  # standing: std 0.05 everywhere
     ((0.5, 0.0, 0.0), "left_knee_joint", 0.35),  # walking: knee std 0.35
     ((0.5, 0.0, 0.0), "waist_roll_joint", 0.08),  # walking: waist roll std 0.08
     ((1.2, 0.0, 0.5), "right_hip_pitch_joint", 0.5)],  # running (1.7 >= 1.5): hip pitch 0.5
)  # fmt: skip
def test_variable_posture_uses_the_regime_std(env, command, joint, offset):
    put(env, command=command)
    assert torch.allclose(term(env, "pose"), torch.ones(N), atol=1e-6)  # default pose
    default = float(env.robot.default_joint_pos[JOINTS.index(joint)])
    put(env, joints={joint: default + offset}, command=command)
    # one joint one std away: exp(-mean(...)) = exp(-1 / 29)
    assert torch.allclose(term(env, "pose"), torch.full((N,), math.exp(-1.0 / 29)), atol=1e-5)


def test_body_angular_velocity_and_angular_momentum(env):
    put(env)
    assert torch.equal(term(env, "body_ang_vel"), torch.zeros(N))
    assert torch.allclose(term(env, "angular_momentum"), torch.zeros(N), atol=1e-10)
    put(env, ang_vel=(0.5, 0.0, 0.7))  # roll 0.5 and yaw 0.7 rad/s, joints still
    assert torch.allclose(term(env, "body_ang_vel"), torch.full((N,), 0.25), atol=1e-6)
    assert (term(env, "angular_momentum") > 0.01).all()


def test_action_rate_and_joint_limits(env):
    put(env)
    am = env.action_manager
    a = torch.full((N, 29), 0.1)
    b = a.clone()
    b[:, 3] = 0.4
    am.process(a)
    am.process(b)
    assert torch.allclose(term(env, "action_rate_l2"), torch.full((N,), 0.09), atol=1e-6)
    assert torch.equal(term(env, "joint_pos_limits"), torch.zeros(N))  # default pose is inside
    lo, hi = g1.JOINT_RANGE["left_knee_joint"]
    soft_hi = 0.5 * (lo + hi) + 0.5 * (hi - lo) * g1.SOFT_JOINT_POS_LIMIT_FACTOR
    put(env, joints={"left_knee_joint": soft_hi + 0.1})
    assert torch.allclose(term(env, "joint_pos_limits"), torch.full((N,), 0.1), atol=1e-5)


def test_foot_slip_is_zero_when_feet_do_not_move_and_v2_when_they_slide(env):
    put(env, **grounded(command=(0.5, 0.0, 0.0)))
    assert env.contact_sensors["feet_ground_contact"].in_contact.all()
    assert torch.allclose(term(env, "foot_slip"), torch.zeros(N), atol=1e-10)
    put(env, **grounded(lin_vel=(0.3, 0.0, 0.0), command=(0.5, 0.0, 0.0)))
    assert torch.allclose(term(env, "foot_slip"), torch.full((N,), 2 * 0.09), atol=1e-5)
    put(env, **grounded(lin_vel=(0.3, 0.0, 0.0), command=(0.0, 0.0, 0.0)))  # standing: off
    assert torch.equal(term(env, "foot_slip"), torch.zeros(N))
    put(env, lin_vel=(0.3, 0.0, 0.0), command=(0.5, 0.0, 0.0))  # airborne feet do not slip
    assert torch.equal(term(env, "foot_slip"), torch.zeros(N))


def test_foot_clearance_weights_the_height_error_by_foot_speed(env):
    put(env, **grounded(command=(0.5, 0.0, 0.0)))
    assert torch.allclose(term(env, "foot_clearance"), torch.zeros(N), atol=1e-6)  # still feet
    put(env, **grounded(lin_vel=(0.5, 0.0, 0.0), command=(0.5, 0.0, 0.0)))
    # both feet at z ~ 0 (0.5 mm into the floor) moving at 0.5 m/s: 2 * |0 - 0.1| * 0.5
    assert torch.allclose(term(env, "foot_clearance"), torch.full((N,), 0.1), atol=2e-3)
    put(env, **grounded(lin_vel=(0.5, 0.0, 0.0), command=(0.0, 0.0, 0.0)))
    assert torch.equal(term(env, "foot_clearance"), torch.zeros(N))


def test_self_collision_counts_a_self_contact_above_the_threshold(env):
    put(env)
    assert torch.equal(term(env, "self_collisions"), torch.zeros(N))
    put(env, joints={"left_shoulder_roll_joint": -1.0})  # left arm into the torso
    assert torch.equal(term(env, "self_collisions"), torch.ones(N))
    sensor = env.contact_sensors["self_collision"]
    assert (sensor.force.norm(dim=2) > 10.0).all()
    assert torch.equal(mdp.self_collision_count(env, "self_collision", force_threshold=1e9), torch.zeros(N))


def test_reward_is_weight_times_dt_times_terms_and_episode_sums_log(env):
    put(env, **grounded(lin_vel=(0.3, 0.0, 0.0), command=(0.5, 0.0, 0.0)))
    env.reward_manager.episode_sums.zero_()
    expected = sum(
        t.weight * env.step_dt * t.func(env, **t.params) for t in env.reward_manager.terms.values()
    )
    assert torch.allclose(env.reward_manager.compute(), expected, atol=1e-6)
    values = env.reward_manager.last_values()  # (N, T): the terms themselves, before weighting
    for i, t in enumerate(env.reward_manager.terms.values()):
        assert torch.allclose(values[:, i], t.func(env, **t.params), rtol=1e-5, atol=1e-6)
    log = env.reward_manager.reset(torch.arange(N))
    assert set(log) == {f"Episode_Reward/{k}" for k in env.reward_manager.terms}
    lin = term(env, "track_linear_velocity").mean() * 2.0 * env.step_dt / env.max_episode_length_s
    assert log["Episode_Reward/track_linear_velocity"] == pytest.approx(float(lin), rel=1e-5)
    assert torch.equal(env.reward_manager.episode_sums, torch.zeros(N, len(env.reward_manager.names)))


@pytest.fixture(scope="module")
def holosoma_env():
    """g1_walk_flat's code default: holosoma's quadratic posture penalties, yaw-only tracking
    kernel and roll/pitch-rate penalty on."""
    cfg = G1WalkFlatConfig(
        reset_yaw_rad=0.0, reset_xy_m=0.0, reset_z_m=(0.0, 0.0), observation_noise=False,
        domain_randomization={"enabled": False}, push={"enabled": False},
    )  # fmt: skip
    e = make_env(cfg, backend_cls=MujocoBackend, num_envs=N, nthread=1, seed=0)
    yield e
    e.close()


def test_orientation_l2_is_zero_upright_and_sin2_of_the_tilt_without_saturating(holosoma_env):
    env = holosoma_env
    assert env.reward_manager.terms["orientation_l2"].weight == -10.0
    put(env)
    assert torch.allclose(term(env, "orientation_l2"), torch.zeros(N), atol=1e-10)
    for theta in (0.3, 0.9):  # 0.9 rad: upright's kernel is down to 0.03, this still grows
        quat = (math.cos(theta / 2), 0.0, math.sin(theta / 2), 0.0)  # pitch by theta
        put(env, base_quat=quat)
        assert torch.allclose(term(env, "orientation_l2"), torch.full((N,), math.sin(theta) ** 2), atol=1e-5)


def test_yaw_kernel_ignores_roll_and_pitch_rate_which_the_separate_penalty_charges(holosoma_env):
    env = holosoma_env
    w = env.reward_manager.terms
    assert w["track_angular_velocity"].func.__name__ == "track_yaw_rate" and w["ang_vel_xy"].weight == -1.0
    # roll rate 0.3 rad/s, pitch rate 0.2, yaw on command: the yaw kernel stays 1, the
    # coupled kernel would pay exp(-0.13 / 0.5) (test above); the penalty is |w_xy|^2
    put(env, ang_vel=(0.3, 0.2, 0.4), command=(0.0, 0.0, 0.4))
    assert torch.allclose(term(env, "track_angular_velocity"), torch.ones(N), atol=1e-5)
    assert torch.allclose(term(env, "ang_vel_xy"), torch.full((N,), 0.13), atol=1e-5)
    # yaw 0.25 rad/s off the command: exp(-0.0625 / 0.5^2) with holosoma's width
    put(env, ang_vel=(0.0, 0.0, 0.15), command=(0.0, 0.0, 0.4))
    assert torch.allclose(term(env, "track_angular_velocity"), torch.full((N,), math.exp(-0.25)), atol=1e-5)


@pytest.mark.parametrize(
    "joint, weight", [("left_knee_joint", 0.01), ("right_hip_yaw_joint", 5.0), ("left_ankle_roll_joint", 5.0),
                      ("waist_pitch_joint", 50.0), ("right_wrist_yaw_joint", 50.0)],
)  # fmt: skip
def test_pose_l2_weights_each_joint_as_holosoma(holosoma_env, joint, weight):
    env = holosoma_env
    put(env)
    assert torch.allclose(term(env, "pose_l2"), torch.zeros(N), atol=1e-10)  # default pose
    default = float(env.robot.default_joint_pos[JOINTS.index(joint)])
    for offset in (0.1, -0.4):
        put(env, joints={joint: default + offset})
        expected = torch.full((N,), weight * offset**2)
        assert torch.allclose(term(env, "pose_l2"), expected, rtol=1e-4), joint


def test_base_lin_vel_noise_sets_the_actor_noise_range():
    cfg = G1WalkFlatConfig(base_lin_vel_noise=0.1)
    from unilab.tasks.g1_walk_flat.env_cfg import make_env_cfg

    assert make_env_cfg(cfg).observations["actor"]["base_lin_vel"].noise == 0.1
    with pytest.raises(ValueError, match="base_lin_vel_noise"):
        G1WalkFlatConfig(base_lin_vel_noise=-0.1)
