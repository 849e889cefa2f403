"""g1_walk_flat observations: layout, IMU-sensor terms against simulator truth, critic feet terms."""

from __future__ import annotations

import math

import pytest
import torch

from unilab.envs import mdp
from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
from unisim.backends.mujoco import MujocoBackend

N = 3
ACTOR = [("base_lin_vel", 3), ("base_ang_vel", 3), ("projected_gravity", 3), ("joint_pos", 29),
         ("joint_vel", 29), ("actions", 29), ("command", 3)]  # fmt: skip
CRITIC = ACTOR + [("foot_height", 2), ("foot_air_time", 2), ("foot_contact", 2), ("foot_contact_forces", 6)]


# mjlab's recipe alone: the code default without holosoma's gait clock, alive bonus, posture
# penalties and penalty curriculum
MJLAB = {
    "gait": {"enabled": False}, "penalty_curriculum": {"enabled": False},
    "rewards": {"alive": 0.0, "feet_phase": 0.0, "orientation_l2": 0.0, "pose_l2": 0.0},
}  # fmt: skip


@pytest.fixture(scope="module")
def env():
    cfg = G1WalkFlatConfig(**MJLAB, domain_randomization={"enabled": False}, push={"enabled": False})
    e = make_env(cfg, backend_cls=MujocoBackend, num_envs=N, nthread=1, seed=0)
    yield e
    e.close()


def widths(layout):
    return [(name, stop - start) for name, start, stop in layout]


def test_layout_actor_99_critic_111_in_mjlab_order(env):
    assert env.obs_dims == {"actor": 99, "critic": 111}
    assert widths(env.observation_manager.layout["actor"]) == ACTOR
    assert widths(env.observation_manager.layout["critic"]) == CRITIC


def test_imu_terms_match_the_simulated_base_state(env):
    env.reset()
    qpos, qvel = env.backend.qpos.clone(), env.backend.qvel.clone()
    half = 0.2
    qpos[:, 3:7] = torch.tensor([math.cos(half), math.sin(half) * 0.6, math.sin(half) * 0.8, 0.0])
    qvel[:, 3:6] = torch.tensor([0.3, -0.2, 0.5])
    qvel[:, 0:3] = torch.tensor([0.4, 0.1, 0.0])
    env.backend.set_state(torch.arange(N), qpos=qpos, qvel=qvel)
    env.robot.refresh()
    gravity = mdp.projected_gravity_from_sensor(env, "imu_upvector")
    assert torch.allclose(gravity, env.robot.projected_gravity_b, atol=1e-5)
    assert torch.allclose(mdp.builtin_sensor(env, "imu_ang_vel"), env.robot.base_ang_vel_b, atol=1e-5)
    # The velocimeter sits at the IMU site, r from the pelvis origin: v_imu = v_base + w x r.
    r = torch.tensor([0.04525, 0.0, -0.08339])
    expected = env.robot.base_lin_vel_b + torch.cross(env.robot.base_ang_vel_b, r.expand(N, 3), dim=1)
    assert torch.allclose(mdp.builtin_sensor(env, "imu_lin_vel"), expected, atol=1e-5)


def test_actor_noise_stays_within_its_bounds_and_critic_is_noise_free(env):
    env.reset()
    obs, *_ = env.step(torch.zeros(N, 29))
    diff = obs["actor"] - obs["critic"][:, :99]
    bounds = torch.cat([torch.full((w,), b) for (_, w), b in zip(ACTOR, (0.5, 0.2, 0.05, 0.01, 1.5, 0, 0))])
    assert (diff.abs() <= bounds + 1e-6).all()
    assert (diff[:, :67].abs() > 0).float().mean() > 0.99  # noisy columns are noised
    assert torch.equal(diff[:, 67:], torch.zeros(N, 32))  # actions and command are exact


def test_rows_that_did_not_reset_keep_their_final_observation(env):
    env.reset()
    qpos = env.backend.qpos.clone()
    qpos[0, 3:7] = torch.tensor([math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0])  # row 0 falls
    env.backend.set_state(torch.tensor([0]), qpos=qpos[:1])
    obs, _, terminated, _, extras = env.step(torch.zeros(N, 29))
    assert terminated.tolist() == [True, False, False]
    for group in ("actor", "critic"):
        assert torch.equal(obs[group][1:], extras["final_obs"][group][1:])  # same noise draw too
        assert not torch.equal(obs[group][0], extras["final_obs"][group][0])


def test_critic_feet_terms_at_rest_on_the_floor(env):
    env.reset()
    for _ in range(15):  # the robot drops 1-5 cm onto its feet
        obs, *_ = env.step(torch.zeros(N, 29))
    critic = obs["critic"]
    height, air, contact, forces = critic[:, 99:101], critic[:, 101:103], critic[:, 103:105], critic[:, 105:]
    assert (height.abs() < 0.02).all()
    assert torch.equal(contact, torch.ones(N, 2)) and torch.equal(air, torch.zeros(N, 2))
    f_z = forces.view(N, 2, 3)[..., 2]
    weight_share = torch.expm1(-f_z)  # invert sign(f) log(1 + |f|) for f < 0: |f|
    assert (f_z < 0).all() and (weight_share.sum(dim=1) > 100.0).all()  # robot weighs 327 N


def test_noise_is_the_documented_uniform_draw_bit_for_bit(env):
    """The actor's noise equals ``value + (2u - 1) * noise`` per noisy column, u one
    ``torch.rand`` draw of (N, noisy columns) from the env's generator, bit for bit."""
    env.reset()
    env.step(torch.zeros(N, 29))
    om = env.observation_manager
    om.noise_enabled = False
    clean = om.compute()["actor"]
    om.noise_enabled = True
    state = env.generator.get_state()
    noisy = om.compute()["actor"]
    env.generator.set_state(state)
    scale = torch.cat([torch.full((w,), b) for (_, w), b in zip(ACTOR, (0.5, 0.2, 0.05, 0.01, 1.5, 0, 0))])
    cols = (scale != 0).nonzero().flatten()
    u = torch.rand((N, len(cols)), generator=env.generator)
    expected = clean.clone()
    expected[:, cols] = clean[:, cols] + (u * 2.0 - 1.0) * scale[cols]
    assert torch.equal(noisy, expected)


def test_returned_observations_are_not_changed_by_later_steps(env):
    """``obs`` and ``final_obs`` of one step keep their values through the next steps (the
    collector holds them while the env steps on), resets included."""
    env.reset()
    qpos = env.backend.qpos.clone()
    qpos[0, 3:7] = torch.tensor([math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0])  # row 0 falls
    env.backend.set_state(torch.tensor([0]), qpos=qpos[:1])
    obs, _, terminated, _, extras = env.step(torch.zeros(N, 29))
    assert terminated[0]
    kept = {k: {g: v.clone() for g, v in d.items()} for k, d in (("obs", obs), ("final", extras["final_obs"]))}
    gen = torch.Generator().manual_seed(0)
    for _ in range(3):
        env.step(torch.rand(N, 29, generator=gen))
    for group in ("actor", "critic"):
        assert torch.equal(obs[group], kept["obs"][group])
        assert torch.equal(extras["final_obs"][group], kept["final"][group])
