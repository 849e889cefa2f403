"""g1_walk_flat on the MuJoCo backend: the VecEnv contract, truncation vs termination, resets,
episode logs and the task switches."""

from __future__ import annotations

import math

import pytest
import torch

from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
from unilab_rl.vecenv import VecEnv
from unisim.backends.mujoco import MujocoBackend


def build(num_envs: int = 4, **overrides):
    cfg = G1WalkFlatConfig(**overrides)
    return make_env(cfg, backend_cls=MujocoBackend, num_envs=num_envs, nthread=1, seed=0)


@pytest.fixture(scope="module")
def env():
    e = build()
    yield e
    e.close()


def test_env_satisfies_vecenv_protocol(env):
    assert isinstance(env, VecEnv)
    assert env.obs_dims == {"actor": 103, "critic": 115}  # mjlab's 99 and 111 + the gait clock
    assert env.num_actions == 29
    assert env.max_episode_length == 1000  # 20 s at 50 Hz
    assert torch.all(env.action_low < 0) and torch.all(env.action_high > 0)


def test_step_shapes_dtypes_and_finite(env):
    obs = env.reset()
    assert set(obs) == {"actor", "critic"}
    for _ in range(10):
        a = env.action_low + (env.action_high - env.action_low) * torch.rand(4, 29)
        obs, reward, terminated, truncated, extras = env.step(a)
        assert obs["actor"].shape == (4, 103) and obs["actor"].dtype == torch.float32
        assert reward.shape == (4,) and reward.dtype == torch.float32
        assert terminated.dtype == torch.bool and truncated.dtype == torch.bool
        assert torch.isfinite(obs["actor"]).all() and torch.isfinite(reward).all()
        assert set(extras["final_obs"]) == {"actor", "critic"}


def test_critic_group_has_no_noise_actor_does(env):
    env.reset()
    obs, *_ = env.step(torch.zeros(4, 29))
    diff = (obs["actor"] - obs["critic"][:, :103]).abs()
    assert diff[:, :3].max() > 0  # base_lin_vel carries ±0.5 noise
    assert torch.allclose(obs["actor"][:, 67:103], obs["critic"][:, 67:103])  # actions, command, gait


def test_time_out_truncates_and_does_not_terminate():
    env = build(num_envs=2, episode_length_s=0.1)  # 5 env steps
    env.reset()
    for i in range(5):
        obs, reward, terminated, truncated, extras = env.step(torch.zeros(2, 29))
    assert truncated.all() and not terminated.any()
    assert "Episode_Termination/time_out" in extras["log"]
    assert extras["log"]["Episode_Termination/time_out"] == 1.0
    assert (env.episode_length == 0).all()
    env.close()


def test_tipped_robot_terminates_and_final_obs_is_pre_reset():
    env = build(num_envs=2)
    env.reset()
    qpos = env.backend.qpos.clone()
    # Row 0 lies on its side: rotate the base 90 degrees about x.
    qpos[0, 3:7] = torch.tensor([math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0])
    env.backend.set_state(torch.tensor([0]), qpos=qpos[:1])
    obs, reward, terminated, truncated, extras = env.step(torch.zeros(2, 29))
    assert terminated.tolist() == [True, False]
    assert not truncated.any()
    gravity = slice(6, 9)  # projected_gravity in the critic group
    assert extras["final_obs"]["critic"][0, gravity][2] > -0.5  # still lying down before reset
    assert obs["critic"][0, gravity][2] < -0.9  # upright after the reset
    assert torch.equal(extras["final_obs"]["critic"][1], obs["critic"][1])
    env.close()


def test_same_seed_same_rollout():
    def rollout():
        env = build(num_envs=2)
        env.reset()
        g = torch.Generator().manual_seed(3)
        rewards = []
        for _ in range(5):
            a = torch.rand(2, 29, generator=g) - 0.5
            _, r, *_ = env.step(a)
            rewards.append(r)
        env.close()
        return torch.stack(rewards)

    assert torch.equal(rollout(), rollout())


def test_episode_logs_name_every_reward_and_termination_term():
    env = build(num_envs=2, episode_length_s=0.1)
    env.reset()
    for _ in range(5):
        *_, extras = env.step(torch.zeros(2, 29))
    log = extras["log"]
    rewards = {k.split("/", 1)[1] for k in log if k.startswith("Episode_Reward/")}
    assert rewards == {
        "track_linear_velocity", "track_angular_velocity", "upright", "pose", "body_ang_vel",
        "angular_momentum", "action_rate_l2", "joint_pos_limits", "foot_clearance", "foot_slip",
        "self_collisions", "alive", "feet_phase", "orientation_l2", "pose_l2", "ang_vel_xy",
        "track_linear_velocity_fine", "track_angular_velocity_fine",
    }  # fmt: skip
    terminations = {k.split("/", 1)[1] for k in log if k.startswith("Episode_Termination/")}
    assert terminations == {"time_out", "fell_over", "nan_state"}
    assert all(math.isfinite(v) for v in log.values())
    env.close()


def test_reward_weights_switch_terms_on_and_off():
    env = build(num_envs=2, rewards={"air_time": 0.5, "self_collisions": 0.0})
    assert "air_time" in env.reward_manager.terms and "self_collisions" not in env.reward_manager.terms
    assert env.reward_manager.terms["air_time"].weight == 0.5
    env.close()


def _assert_fine_is_wide_to_the_fourth(env, wide_term: str, fine_term: str) -> None:
    """Over 10 steps of random actions from reset, the narrow kernel ``fine_term`` (width half of
    ``wide_term``'s) equals the wide one to the power (1 / 0.5)^2 = 4, row by row, and the two
    differ on these states."""
    env.reset()
    names = list(env.reward_manager.terms)
    wide, fine = names.index(wide_term), names.index(fine_term)
    torch.manual_seed(0)
    spread = 0.0
    for _ in range(10):
        env.step(torch.randn(4, 29) * 0.3)
        values = env.reward_manager.last_values()
        torch.testing.assert_close(values[:, fine], values[:, wide] ** 4, rtol=1e-4, atol=1e-6)
        spread = max(spread, float((values[:, wide] - values[:, fine]).abs().max()))
    assert spread > 1e-3  # the two kernels differ on these states


def test_the_fine_linear_kernel_scores_the_same_error_in_a_narrower_kernel():
    """``track_linear_velocity_fine`` is exp(-e / fine_std^2) of the wide term's error e, so with
    widths 0.5 and 0.25 it is the wide kernel to the power (0.5 / 0.25)^2 = 4, row by row."""
    env = build(num_envs=4, rewards={"track_linear_velocity_fine": 3.0}, tracking={"lin_vel_fine_std": 0.25})
    _assert_fine_is_wide_to_the_fourth(env, "track_linear_velocity", "track_linear_velocity_fine")
    assert env.reward_manager.terms["track_linear_velocity_fine"].weight == 3.0
    off = build(num_envs=2, rewards={"track_linear_velocity_fine": 0.0})
    assert "track_linear_velocity_fine" not in off.reward_manager.terms
    off.close()
    env.close()


def test_the_fine_yaw_kernel_scores_the_yaw_error_in_a_narrower_kernel():
    """``track_angular_velocity_fine`` is exp(-e / yaw_fine_std^2) of the yaw kernel's error e, so
    with widths 0.5 and 0.25 it is the yaw kernel to the power 4, row by row; weight 0 switches it off."""
    off = build(num_envs=2, rewards={"track_angular_velocity_fine": 0.0})
    assert "track_angular_velocity_fine" not in off.reward_manager.terms
    off.close()
    env = build(num_envs=4, tracking={"ang_vel_kernel": "yaw", "yaw_std": 0.5, "yaw_fine_std": 0.25})
    assert env.reward_manager.terms["track_angular_velocity_fine"].weight == 2.0  # on by default
    _assert_fine_is_wide_to_the_fourth(env, "track_angular_velocity", "track_angular_velocity_fine")
    env.close()


def test_randomization_and_pushes_are_switchable():
    on = build(num_envs=2)
    off = build(num_envs=2, domain_randomization={"enabled": False}, push={"enabled": False})
    assert {"foot_friction", "torso_com", "encoder_bias", "push_robot"} <= set(on.cfg.events)
    assert set(off.cfg.events) == {"reset_base"}
    on.close()
    off.close()
