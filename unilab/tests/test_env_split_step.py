"""``ManagerBasedRlEnv.step_async`` / ``step_wait``: a step split around its physics, the physics
on another thread, returns exactly what ``step`` returns, over a seeded rollout with falls,
resets, pushes and command resamples; misuse is refused."""

from __future__ import annotations

import concurrent.futures

import pytest
import torch

from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
from unisim.backends.mujoco import MujocoBackend

N, STEPS = 8, 60


def _env():
    return make_env(G1WalkFlatConfig(), backend_cls=MujocoBackend, num_envs=N, nthread=1, seed=5)


def _rollout(split: bool) -> list:
    env, out = _env(), []
    actions = torch.Generator().manual_seed(0)
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as worker:
            out.append(env.reset())
            for _ in range(STEPS):
                u = torch.rand(N, env.num_actions, generator=actions)
                a = env.action_low + (env.action_high - env.action_low) * u  # robots fall and reset
                if split:
                    future = env.step_async(a, worker)
                    assert isinstance(future, concurrent.futures.Future)
                    out.append(env.step_wait())
                else:
                    out.append(env.step(a))
        out.append(env.physics_time_s > 0)
    finally:
        env.close()
    return out


def test_a_split_step_with_physics_on_a_worker_equals_step() -> None:
    plain, split = _rollout(False), _rollout(True)
    assert sum(int((s[2] | s[3]).sum()) for s in plain[1:-1]) > 0  # episodes ended and reset
    torch.testing.assert_close(split[:-1], plain[:-1], rtol=0, atol=0)
    assert split[-1] and plain[-1]  # physics time counted either way


def test_misuse_of_a_split_step_is_refused() -> None:
    env = _env()
    try:
        env.reset()
        with pytest.raises(ValueError, match="no step started"):
            env.step_wait()
        zero = torch.zeros(N, env.num_actions)
        assert env.step_async(zero) is None  # no executor: the physics runs in step_wait
        with pytest.raises(ValueError, match="not been finished"):
            env.step_async(zero)
        obs, reward, *_ = env.step_wait()
        assert reward.shape == (N,)
        with pytest.raises(ValueError, match="actions must have shape"):
            env.step_async(torch.zeros(N + 1, env.num_actions))
    finally:
        env.close()
