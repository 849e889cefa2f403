"""The order of work inside ``ManagerBasedRlEnv.step``: rewards use the command the policy
observed (a resampled command is first observed, then rewarded), and interval events (pushes)
restart with each episode and never land on a row after its first observation was computed."""

from __future__ import annotations

import math

import pytest
import torch

from unilab.envs.mdp.commands import VelocityCommandRanges
from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
from unisim.backends.mujoco import MujocoBackend

QUIET = {"domain_randomization": {"enabled": False}, "reset_z_m": (0.0, 0.0)}


def build(num_envs: int, **overrides):
    cfg = G1WalkFlatConfig(**{**QUIET, **overrides})
    return make_env(cfg, backend_cls=MujocoBackend, num_envs=num_envs, nthread=1, seed=0)


def term_values(env) -> torch.Tensor:
    """(N, T) every evaluated reward term on the env's current state and commands."""
    env.step_cache.clear()
    terms = env.reward_manager.terms.values()
    return torch.stack([t.func(env, **t.params) for t in terms], dim=1)


def record_pushes(env) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Wrap the push term: each call appends (rows, their episode length in steps)."""
    calls: list[tuple[torch.Tensor, torch.Tensor]] = []
    term = env.event_manager.terms["push_robot"]
    inner = term.func

    def recorded(e, env_ids, **params):
        calls.append((env_ids.clone(), e.episode_length[env_ids].clone()))
        return inner(e, env_ids, **params)

    term.func = recorded
    return calls


def test_rewards_at_a_resample_step_use_the_observed_command():
    # every penalty on the curriculum's scale (none late): each term's value is known at every step
    env = build(2, gait={"enabled": True}, rewards={"feet_phase": 5.0}, push={"enabled": False},
                penalty_curriculum={"late": []})
    try:
        env.reset()
        twist, gait = env.commands["twist"], env.commands["gait"]
        actions = torch.zeros(2, env.num_actions)  # the default pose: both robots stand
        twist.command[0] = torch.tensor([0.6, 0.0, 0.8])  # row 0 walks and turns...
        twist.command[1] = 0.0
        gait.update(0.0)
        env.step(actions)
        # ... and at the next step its timer expires: the new draw is "stand" (all ranges 0)
        twist.ranges = VelocityCommandRanges(
            lin_vel_x=(0.0, 0.0), lin_vel_y=(0.0, 0.0), ang_vel_z=(0.0, 0.0),
            resampling_time_s=(5.0, 5.0), standing_fraction=1.0,
        )  # fmt: skip
        twist.time_left[0], twist.time_left[1] = 0.5 * env.step_dt, 100.0
        observed = twist.command.clone()
        obs, _, terminated, truncated, _ = env.step(actions)
        assert not (terminated | truncated).any()
        # the new command reaches the observation of this step (policy and critic)...
        cols = {n: (a, b) for n, a, b in env.observation_manager.layout["actor"]}
        a, b = cols["command"]
        assert obs["actor"][0, a:b].tolist() == [0.0, 0.0, 0.0]
        assert obs["actor"][1, a:b].tolist() == [0.0, 0.0, 0.0]
        a, b = cols["gait_phase"]
        assert obs["actor"][0, a:b].tolist() == pytest.approx([0.0, 0.0, -1.0, -1.0], abs=1e-6)
        # ... while every term of this step's reward was computed with the observed one
        got = env.reward_manager.last_values()
        new = term_values(env)
        twist.command.copy_(observed)
        gait.update(0.0)
        expected = term_values(env)
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)
        # the command-reading terms of row 0 pay differently under the new command
        names = env.reward_manager.names
        for name in ("track_linear_velocity", "track_angular_velocity", "pose", "feet_phase"):
            i = names.index(name)
            assert abs(float(expected[0, i] - new[0, i])) > 1e-3, name
        torch.testing.assert_close(got[1], new[1])  # row 1 kept its command
    finally:
        env.close()


def test_a_row_that_ends_is_not_pushed_and_its_push_timer_restarts():
    env = build(2)
    try:
        env.reset()
        calls = record_pushes(env)
        qpos = env.backend.qpos.clone()
        qpos[0, 3:7] = torch.tensor([math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0])
        env.backend.set_state(torch.tensor([0]), qpos=qpos[:1])  # row 0 lies on its side
        timers = env.event_manager.time_left["push_robot"]
        timers[:] = 0.5 * env.step_dt  # both rows due at this step
        obs, _, terminated, _, _ = env.step(torch.zeros(2, env.num_actions))
        assert terminated.tolist() == [True, False]
        assert len(calls) == 1 and calls[0][0].tolist() == [1]  # only the row that goes on
        # row 0 starts its episode at rest, as its first observation says
        assert torch.equal(env.backend.qvel[0, :6], torch.zeros(6))
        lo, hi = env.event_manager.terms["push_robot"].interval_range_s
        assert torch.all((timers >= lo) & (timers <= hi))
    finally:
        env.close()


def test_first_push_of_an_episode_comes_after_the_minimum_interval():
    # 75-step episodes: time-outs reset every row often; each episode should see one push
    env = build(16, episode_length_s=1.5, push={"interval_s": (1.0, 1.4)})
    try:
        env.reset()
        calls = record_pushes(env)
        lo, _ = env.event_manager.terms["push_robot"].interval_range_s
        actions = torch.zeros(16, env.num_actions)
        for _ in range(200):
            env.step(actions)
        lengths = torch.cat([length for _, length in calls])
        assert len(lengths) >= 16  # pushes happened
        assert float(lengths.min()) * env.step_dt >= lo - 1e-6
    finally:
        env.close()


def test_motion_tracking_push_timers_restart_on_reset():
    from unilab.tasks.g1_motion_tracking import G1MotionTrackingConfig
    from unilab.tasks.g1_motion_tracking import make_env as make_tracking_env

    cfg = G1MotionTrackingConfig(domain_randomization={"enabled": False})
    env = make_tracking_env(cfg, backend_cls=MujocoBackend, num_envs=3, nthread=1, seed=0)
    try:
        timers = env.event_manager.time_left["push_robot"]
        lo, hi = env.event_manager.terms["push_robot"].interval_range_s
        timers[:] = 0.5 * env.step_dt
        env.reset()
        assert torch.all((timers >= lo) & (timers <= hi))
        calls = record_pushes(env)
        env.step(torch.zeros(3, env.num_actions))
        assert calls == []
    finally:
        env.close()
