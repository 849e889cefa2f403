"""The G1 env's shards pipelined (``runtime.shard_stepping=pipeline``: the physics of both shards
on one worker thread through ``step_async``/``step_wait``) store exactly what shards in threads
store, with the policy acting from the first step."""

from __future__ import annotations

import functools

import torch

from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
from unilab_rl import AsyncOffPolicyRunner
from unilab_rl.algorithms.sac import SAC, SACConfig
from unilab_rl.testing import live_children, make_learner
from unisim.backends.mujoco import MujocoBackend

ENVS, ITERATIONS = 8, 6
env_fn = functools.partial(make_env, G1WalkFlatConfig(), backend_cls=MujocoBackend, num_envs=ENVS, nthread=1,
                           seed=3)  # picklable; the runner sets num_envs and seed per shard


def _replay(stepping: str) -> dict[str, torch.Tensor]:
    env = env_fn()
    try:
        sac = make_learner(SAC, SACConfig, env, batch_size=16, num_updates=1, learning_starts=0,
                           buffer_size_per_env=16, actor_hidden=(32, 32), critic_hidden=(32, 32), device="cpu",
                           mode="async", collector_shards=2, shard_stepping=stepping, block_steps=3, num_blocks=2,
                           sync_weights_every=10_000)  # no broadcast: both runs act with the initial actor
        torch.manual_seed(0)
        AsyncOffPolicyRunner(env_fn, sac, seed=7, env_seed=3).learn(ITERATIONS)
    finally:
        env.close()
    r, rows = sac.replay, ITERATIONS * ENVS
    return {"obs": r.obs["critic"][:rows], "next_obs": r.next_obs["critic"][:rows], "actions": r.actions[:rows],
            "rewards": r.rewards[:rows], "terminated": r.terminated[:rows]}


def test_pipelined_g1_shards_store_what_threaded_shards_store() -> None:
    threads, pipeline = _replay("threads"), _replay("pipeline")
    assert threads["actions"].abs().sum() > 0 and threads["rewards"].unique().numel() > ENVS  # real data
    for key, value in threads.items():
        torch.testing.assert_close(pipeline[key], value, rtol=0, atol=0, msg=key)
    assert live_children() == []
