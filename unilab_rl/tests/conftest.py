"""Shared fixtures: a tiny deterministic VecEnv and a small-network SAC factory."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from unilab_rl.algorithms.sac import SAC, SACConfig
from unilab_rl.testing import PointEnv, make_learner

DEVICE = torch.device("cpu")


def _evaluate(policy, num_envs: int = 64, episodes_per_env: int = 1, seed: int = 123) -> float:
    """Mean undiscounted return of ``policy(env, obs) -> actions`` over fresh episodes."""
    env = PointEnv(num_envs=num_envs, seed=seed)
    obs = env.reset()
    returns = torch.zeros(num_envs)
    finished = torch.zeros(num_envs, dtype=torch.long)
    total = []
    while len(total) < num_envs * episodes_per_env:
        obs, reward, terminated, truncated, _ = env.step(policy(env, obs))
        returns += reward
        done = (terminated | truncated) & (finished < episodes_per_env)
        total += returns[done].tolist()
        finished += done.long()
        returns[terminated | truncated] = 0.0
    return sum(total) / len(total)


SMALL = dict(
    batch_size=64,
    num_updates=2,
    actor_update_period=2,
    buffer_size_per_env=64,
    learning_starts=2,
    actor_hidden=(32, 32),
    critic_hidden=(32, 32),
    device="cpu",
)


def _make_sac(env: PointEnv, **overrides) -> SAC:
    """SAC with :data:`SMALL` settings; ``overrides`` may hold SAC fields, runtime fields
    (``mode`` defaults to ``"sync"``) and ``device`` ("cpu" unless given)."""
    return make_learner(SAC, SACConfig, env, **{**SMALL, **overrides})


# Helpers are handed out as fixtures (not imported from conftest) so this suite can run in one
# pytest session with the other packages' suites, whose conftest modules share the name.


@pytest.fixture
def make_env() -> Callable[..., PointEnv]:
    """``make_env(num_envs=8, max_episode_length=20, seed=0) -> PointEnv``."""
    return PointEnv


@pytest.fixture
def make_sac() -> Callable[..., SAC]:
    """``make_sac(env, **settings) -> SAC`` with small networks (on the CPU unless ``device=``)."""
    return _make_sac


@pytest.fixture
def evaluate() -> Callable[..., float]:
    """``evaluate(policy) -> mean return``, ``policy(env, obs) -> actions`` on fresh PointEnvs."""
    return _evaluate


@pytest.fixture(autouse=True)
def _seed_and_one_thread():
    """Seed torch, and use one intra-op thread: these networks are tiny, and on a loaded machine
    a second thread waiting for a busy core makes each op orders of magnitude slower."""
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
