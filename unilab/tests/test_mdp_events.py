"""Domain randomization and pushes of g1_walk_flat through the backend's per-world parameters."""

from __future__ import annotations

import pytest
import torch

from unilab.robots import g1
from unilab.robots.g1 import g1_constants
from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
from unisim.backends.mujoco import MujocoBackend

N = 8


def build(**overrides):
    cfg = G1WalkFlatConfig(**overrides)
    return make_env(cfg, backend_cls=MujocoBackend, num_envs=N, nthread=1, seed=3)


@pytest.fixture(scope="module")
def env():
    e = build()
    yield e
    e.close()


@pytest.fixture(scope="module")
def plain():
    e = build(domain_randomization={"enabled": False}, push={"enabled": False}, observation_noise=False)
    yield e
    e.close()


def test_foot_friction_is_one_value_per_world_in_range_on_the_foot_geoms_only(env, plain):
    friction = env.backend.model_field("geom_friction")  # (N, ngeom, 3)
    default = plain.backend.model_field("geom_friction")
    feet = env.meta.geom_ids(g1.FOOT_GEOM_NAMES)
    mu = friction[:, feet, 0]  # (N, 14)
    assert torch.equal(mu, mu[:, :1].expand_as(mu))  # shared across all sole geoms of a world
    assert ((mu >= 0.3) & (mu <= 1.2)).all()
    assert len(torch.unique(mu[:, 0])) == N  # differs per world
    assert torch.all(default[:, feet, 0] == g1_constants.FOOT_FRICTION)
    others = [i for i in range(friction.shape[1]) if i not in feet]
    assert torch.equal(friction[:, others], default[:, others])
    assert torch.equal(friction[:, feet, 1:], default[:, feet, 1:])  # torsional, rolling kept


def test_torso_com_offset_within_range_per_world_and_other_bodies_kept(env, plain):
    ipos = env.backend.model_field("body_ipos")
    default = plain.backend.model_field("body_ipos")
    torso = env.meta.body_id(g1.TORSO_BODY)
    offset = ipos[:, torso] - default[:, torso]
    assert (offset.abs() <= torch.tensor([0.025, 0.025, 0.03]) + 1e-6).all()
    assert len(torch.unique(offset[:, 0])) == N
    others = [i for i in range(ipos.shape[1]) if i != torso]
    assert torch.equal(ipos[:, others], default[:, others])


def test_encoder_bias_is_in_range_and_only_in_the_actor_joint_positions():
    e = build(observation_noise=False, push={"enabled": False})
    try:
        bias = e.robot.encoder_bias
        assert bias.shape == (N, 29)
        assert (bias.abs() <= 0.015).all() and bias.abs().max() > 0.005
        obs = e.reset()
        joint_pos = slice(9, 38)
        diff = obs["actor"][:, joint_pos] - obs["critic"][:, joint_pos]
        assert torch.allclose(diff, bias, atol=1e-6)
        others = [i for i in range(99) if not 9 <= i < 38]
        assert torch.equal(obs["actor"][:, others], obs["critic"][:, others])  # no noise, no bias
    finally:
        e.close()


def test_disabled_randomization_has_no_startup_events(plain):
    assert not any(t.mode in ("startup", "interval") for t in plain.cfg.events.values())
    assert torch.equal(plain.robot.encoder_bias, torch.zeros(N, 29))


def test_push_changes_base_velocity_of_the_given_rows_only(env):
    env.reset()
    qpos, qvel = env.backend.qpos.clone(), env.backend.qvel.clone()
    push = env.cfg.events["push_robot"]
    rows = torch.tensor([1, 5])
    push.func(env, rows, **push.params)
    new_qpos, new_qvel = env.backend.qpos, env.backend.qvel
    assert torch.equal(new_qpos, qpos)
    others = [i for i in range(N) if i not in rows.tolist()]
    assert torch.equal(new_qvel[others], qvel[others])
    assert torch.equal(new_qvel[:, 6:], qvel[:, 6:])  # joints untouched
    delta = new_qvel[rows, :6] - qvel[rows, :6]
    limit = torch.tensor([0.25, 0.25, 0.2, 0.26, 0.26, 0.39])  # half the mjlab ranges
    assert (delta.abs() <= limit + 1e-6).all() and (delta.abs() > 0).all()


def test_interval_timer_pushes_only_the_due_rows_and_redraws_their_interval(env):
    env.reset()
    timers = env.event_manager.time_left["push_robot"]
    timers[:] = 10.0
    timers[3] = 0.5 * env.step_dt  # due at the next env step
    qvel = env.backend.qvel.clone()
    env.event_manager.step()
    changed = (env.backend.qvel[:, :6] != qvel[:, :6]).any(dim=1)
    assert changed.tolist() == [i == 3 for i in range(N)]
    assert 1.0 <= float(timers[3]) <= 3.0
    assert torch.allclose(timers[[0, 1, 2, 4, 5, 6, 7]], torch.full((7,), 10.0 - env.step_dt))


def test_reset_places_the_base_in_range(env):
    env.reset()
    pos = env.backend.qpos[:, :3]
    default = env.meta.default_qpos[:3]
    assert ((pos[:, :2] - default[:2]).abs() <= 0.5).all()
    dz = pos[:, 2] - default[2]
    assert ((dz >= 0.01 - 1e-6) & (dz <= 0.05 + 1e-6)).all()
    assert torch.equal(env.backend.qvel, torch.zeros_like(env.backend.qvel))
