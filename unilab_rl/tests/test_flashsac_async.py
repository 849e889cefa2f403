"""FlashSAC in the async runtime: trains through AsyncOffPolicyRunner, stores what the sync runner
stores (replay and reward scaling), and the collector's actor copy acts like the learner's after a
weight sync (batch-norm running statistics included)."""

from __future__ import annotations

import copy
import functools
import math
import pickle

import pytest
import torch

from unilab_rl import AsyncOffPolicyRunner, FlashSAC, FlashSACConfig, Learner, OffPolicyRunner, RuntimeConfig, make_runner
from unilab_rl.async_runtime import SharedWeights, flat_state
from unilab_rl.learner import missing_members
from unilab_rl.testing import PointEnv, live_children, make_learner

# Spawned collectors need a picklable, module-level env factory.
make_point_env = functools.partial(PointEnv, num_envs=8, max_episode_length=5, seed=3)

SMALL = dict(
    max_iterations=12, learning_starts=2, buffer_size_per_env=64, batch_size=32, num_updates=2,
    actor_hidden_dim=16, critic_hidden_dim=16, actor_num_blocks=1, critic_num_blocks=1, num_bins=21,
    device="cpu", block_steps=3, num_blocks=2, sync_weights_every=2,
)


def make_flashsac(env, **overrides) -> FlashSAC:
    return make_learner(FlashSAC, FlashSACConfig, env, **{**SMALL, **overrides})


def test_runtime_settings_are_shared_and_checked():
    rt = RuntimeConfig()
    assert (rt.mode, rt.block_steps, rt.num_blocks, rt.sync_weights_every) == ("async", 8, 4, 8)
    assert (rt.num_collectors, rt.collector_threads, rt.learner_threads) == (1, 1, 0)
    for field, value in [("mode", "threads"), ("num_blocks", 1), ("block_steps", 0), ("sync_weights_every", 0),
                         ("collector_threads", 0), ("learner_threads", -1)]:
        with pytest.raises(ValueError, match=f"runtime.{field}"):
            RuntimeConfig(**{field: value})
    with pytest.raises(ValueError, match="divisible"):
        RuntimeConfig(num_collectors=3, collector_shards=1, mode="async").check_num_envs(10)
    RuntimeConfig(collector_shards=3, mode="sync").check_num_envs(10)  # the sync runtime has no shards
    with pytest.raises(ValueError, match=r"runtime.cuda_graph=true needs a CUDA learner device, got cpu"):
        make_flashsac(PointEnv(num_envs=8), cuda_graph=True)


def test_make_runner_follows_the_runtime(make_env):
    env = make_env(num_envs=8)
    agent = make_flashsac(env)
    assert type(make_runner(env, agent, agent.runtime)) is OffPolicyRunner
    agent = make_flashsac(env, mode="async")
    assert isinstance(agent, Learner) and missing_members(agent) == []
    assert type(make_runner(env, agent, agent.runtime, env_fn=make_point_env, env_seed=1)) is AsyncOffPolicyRunner
    with pytest.raises(ValueError, match="env_fn"):
        make_runner(env, agent, agent.runtime)


def test_the_async_runner_names_what_a_learner_lacks(make_env):
    class NotALearner:
        cfg = FlashSACConfig()
        num_envs = 8

    with pytest.raises(TypeError, match="lacks num_actions, device.*exploration_policy, .*store_steps, update"):
        AsyncOffPolicyRunner(make_point_env, NotALearner())


@pytest.mark.parametrize("num_collectors", [1, 2])
def test_flashsac_trains_async_and_leaves_no_child(num_collectors):
    agent = make_flashsac(make_point_env(), mode="async", num_collectors=num_collectors)
    logged: list[dict[str, float]] = []
    runner = AsyncOffPolicyRunner(make_point_env, agent, seed=1, log_fn=lambda it, m: logged.append(m))
    summary = runner.learn(12)

    assert summary.runtime == "async" and agent.iteration == 12
    # Updates start at iteration learning_starts - 1, as in the sync runner: 11 iterations x 2 updates.
    assert summary.updates == 22 == agent.num_critic_updates
    assert summary.transfer["weight_broadcasts"] == 11 and summary.transfer["blocks"] == 4
    keys = set().union(*logged)
    for key in ("Loss/critic", "Loss/actor", "Policy/reward_scale", "Train/mean_reward", "Perf/policy_lag"):
        assert key in keys, key
    assert all(math.isfinite(v) for m in logged for v in m.values())
    assert runner.collector_exitcodes == [0] * num_collectors and runner.cleanup_errors == []
    assert live_children() == []


@pytest.mark.parametrize("n_step", [1, 3])
def test_async_and_sync_store_the_same_replay_and_reward_scale(n_step):
    iterations = 10  # not a multiple of block_steps: the last block is partial; episodes time out at 5
    sync_env = make_point_env()
    sync = make_flashsac(sync_env, learning_starts=100, block_steps=4, n_step=n_step)  # warm-up actions only
    OffPolicyRunner(sync_env, sync, seed=7).learn(iterations)
    asyn = make_flashsac(make_point_env(), learning_starts=100, block_steps=4, mode="async", n_step=n_step)
    AsyncOffPolicyRunner(make_point_env, asyn, seed=7).learn(iterations)

    rows = (iterations - n_step + 1) * 8  # the n-step window holds the newest n_step - 1 steps back
    assert len(asyn.replay) == len(sync.replay) == rows
    for field in ("actions", "rewards", "terminated"):
        torch.testing.assert_close(getattr(asyn.replay, field)[:rows], getattr(sync.replay, field)[:rows],
                                   rtol=0, atol=0, msg=field)
    for group in ("actor", "critic"):
        torch.testing.assert_close(asyn.replay.obs[group][:rows], sync.replay.obs[group][:rows], rtol=0, atol=0)
        torch.testing.assert_close(asyn.replay.next_obs[group][:rows], sync.replay.next_obs[group][:rows],
                                   rtol=0, atol=0)
    # The time-outs crossed in the block: the running returns restarted where the sync ones did.
    a, s = asyn.reward_scaler, sync.reward_scaler
    torch.testing.assert_close(a.returns, s.returns)
    torch.testing.assert_close(a.return_abs_max, s.return_abs_max)
    torch.testing.assert_close(a.return_stats.var, s.return_stats.var)
    torch.testing.assert_close(a.scale(), s.scale())


def test_the_collector_copy_acts_like_the_learner_after_a_weight_sync():
    env = make_point_env()
    agent = make_flashsac(env, mode="async")
    live = agent.exploration_policy()
    obs = torch.linspace(-2.0, 2.0, 16).unsqueeze(-1)  # (16, 1) raw actor observations
    agent.act(obs)  # the learner's held noise now holds a draw: the copy must not inherit it
    # What the runner hands each collector: a CPU deep copy, pickled into the spawned process.
    collector = pickle.loads(pickle.dumps(copy.deepcopy(live).to("cpu")))
    assert collector.noise.noise is None and collector.noise.count == 0
    weights = SharedWeights(flat_state(live).numel(), torch.multiprocessing.get_context("spawn"))

    OffPolicyRunner(env, agent, seed=0).learn(6)  # updates move the weights and the batch-norm statistics
    norm = agent.actor.trunk.input_norm
    assert not torch.allclose(norm.running_mean, collector.actor.trunk.input_norm.running_mean)
    assert not torch.allclose(collector.deterministic(obs), agent.act(obs, deterministic=True))

    weights.publish(flat_state(live))
    assert weights.pull(collector, 0) == 1
    for name, value in agent.actor.state_dict().items():  # running statistics included
        torch.testing.assert_close(collector.actor.state_dict()[name], value, rtol=0, atol=0, msg=name)
    torch.testing.assert_close(collector.deterministic(obs), agent.act(obs, deterministic=True), rtol=0, atol=0)
    # Exploration: the collector holds its own noise for k steps and acts as the learner would with it.
    first = collector(obs)
    held = collector.noise.noise.clone()
    torch.testing.assert_close(first, agent.actor.explore(obs, held), rtol=0, atol=0)
    for _ in range(collector.noise.repeat - 1):
        torch.testing.assert_close(collector(obs), first, rtol=0, atol=0)
    assert not torch.equal(collector(obs), first)  # k used up: fresh noise
