"""AsyncOffPolicyRunner with several env shards, as collector processes (``num_collectors``), as
threads of one collector (``collector_shards``) or both: every shard's env rows stored once per
step, exactly as a single-shard run with the shard's seeds; UTD held; episode statistics merged;
one collector's death or one shard thread's error fails the run naming it; bad settings rejected."""

from __future__ import annotations

import functools
import os
import signal

import pytest
import torch

from unilab_rl import AsyncOffPolicyRunner, CollectorDied, OffPolicyRunner, RuntimeConfig
from unilab_rl.async_runtime import SHARD_SEED_STRIDE
from unilab_rl.async_runtime import merge_logs as _merge_logs
from unilab_rl.testing import PointEnv, live_children

# Picklable factory; with several collectors the runner overrides num_envs and seed per shard.
make_point_env = functools.partial(PointEnv, num_envs=8, max_episode_length=5, seed=3)



def _fields(sac, steps: int, n: int) -> dict[str, torch.Tensor]:
    """Replay contents as (steps, n, ...) tensors."""
    r, rows = sac.replay, steps * n
    fields = {"obs": r.obs["critic"], "next_obs": r.next_obs["critic"], "actor_obs": r.obs["actor"],
              "actions": r.actions, "rewards": r.rewards, "terminated": r.terminated}
    return {k: v[:rows].reshape(steps, n, *v.shape[1:]) for k, v in fields.items()}


@pytest.mark.parametrize("collectors, shards, stepping", [(2, 1, "threads"), (1, 2, "threads"), (2, 2, "threads"),
                                                         (1, 2, "pipeline"), (2, 2, "pipeline")])
def test_shards_store_each_shard_like_a_single_shard_run(make_sac, collectors, shards, stepping) -> None:
    iterations, n_shards = 6, collectors * shards  # 6 steps with block_steps=4: the last block is partial
    shard = 8 // n_shards
    asyn = make_sac(make_point_env(), learning_starts=100, block_steps=4, num_blocks=2, num_collectors=collectors,
                    collector_shards=shards, shard_stepping=stepping)
    logged: list[dict[str, float]] = []
    runner = AsyncOffPolicyRunner(make_point_env, asyn, seed=7, env_seed=3, log_fn=lambda it, m: logged.append(m))
    summary = runner.learn(iterations)

    assert asyn.iteration == iterations and len(asyn.replay) == iterations * 8
    assert summary.transfer["blocks"] == 2 and runner.collector_exitcodes == [0] * collectors
    got = _fields(asyn, iterations, 8)
    returns, lengths = [], []
    for k in range(n_shards):  # shard k == a single-collector run with the shard's env and action seeds
        env = PointEnv(num_envs=shard, max_episode_length=5, seed=3 + k * SHARD_SEED_STRIDE)
        ref = make_sac(env, learning_starts=100)
        ref_runner = OffPolicyRunner(env, ref, seed=7 + k * SHARD_SEED_STRIDE)
        ref_runner.learn(iterations)
        for key, value in _fields(ref, iterations, shard).items():
            torch.testing.assert_close(got[key][:, k * shard : (k + 1) * shard], value, rtol=0, atol=0, msg=key)
        returns += list(ref_runner.episode_returns)
        lengths += list(ref_runner.episode_lengths)
    # Episode statistics over both shards.
    assert sorted(runner.episode_returns) == pytest.approx(sorted(returns))
    assert summary.final_mean_episode_length == pytest.approx(sum(lengths) / len(lengths))
    assert any("Episode_Reward/distance" in m for m in logged)
    assert live_children() == []


def test_shards_in_threads_draw_the_policy_noise_of_shards_in_processes(make_sac) -> None:
    """Two shards in one collector's threads, or pipelined from one thread, store exactly what two
    collector processes store,
    with the policy acting (and drawing noise) from the first step: each shard's noise stream
    depends on its seed, not on thread order. No weights are broadcast (sync_weights_every is
    out of reach), so the acting policy is the same initial one in both runs."""
    iterations = 6
    rows = {}
    for collectors, shards, stepping in ((2, 1, "threads"), (1, 2, "threads"), (1, 2, "pipeline")):
        sac = make_sac(make_point_env(), learning_starts=0, block_steps=3, num_blocks=2, sync_weights_every=10_000,
                       num_collectors=collectors, collector_shards=shards, shard_stepping=stepping)
        AsyncOffPolicyRunner(make_point_env, sac, seed=7, env_seed=3).learn(iterations)
        rows[collectors, shards, stepping] = _fields(sac, iterations, 8)
    assert rows[2, 1, "threads"]["actions"].unique().numel() > 40  # sampled actions, not a constant
    for key, value in rows[2, 1, "threads"].items():
        torch.testing.assert_close(rows[1, 2, "threads"][key], value, rtol=0, atol=0, msg=key)
        torch.testing.assert_close(rows[1, 2, "pipeline"][key], value, rtol=0, atol=0, msg=key)


@pytest.mark.parametrize("collectors, shards", [(2, 1), (1, 2)])
def test_shards_hold_the_update_to_data_ratio(make_sac, collectors, shards) -> None:
    sac = make_sac(make_point_env(), learning_starts=2, num_updates=2, batch_size=16, block_steps=3, num_blocks=2,
                   sync_weights_every=2, num_collectors=collectors, collector_shards=shards)
    logged: list[tuple[int, dict[str, float]]] = []
    runner = AsyncOffPolicyRunner(make_point_env, sac, log_fn=lambda it, m: logged.append((it, m)))
    summary = runner.learn(12)

    assert [it for it, _ in logged] == list(range(1, 13))
    assert summary.updates == 22 == sac.num_critic_updates  # as with one collector
    assert summary.utd_ratio == pytest.approx(22 * 16 / (12 * 8))
    assert len(sac.replay) == 12 * 8 and summary.env_steps == 12 * 8
    keys = set().union(*(m.keys() for _, m in logged))
    for key in ("Train/mean_reward", "Train/mean_episode_length", "Episode_Reward/distance",
                "Episode_Termination/reached", "Perf/policy_lag"):
        assert key in keys, key
    assert summary.transfer["weight_broadcasts"] == 11 and summary.transfer["weight_pulls"] > 0
    assert runner.collector_exitcode == 0 and runner.collector_exitcodes == [0] * collectors
    assert runner.cleanup_errors == [] and live_children() == []


class _FailingPointEnv(PointEnv):
    """A PointEnv whose third step raises, in the shard with seed 3 + SHARD_SEED_STRIDE only."""

    def __init__(self, num_envs: int, max_episode_length: int, seed: int) -> None:
        super().__init__(num_envs, max_episode_length, seed)
        self.breaks, self.steps = seed == 3 + SHARD_SEED_STRIDE, 0

    def step(self, actions):
        self.steps += 1
        if self.breaks and self.steps == 3:
            raise RuntimeError("shard 1 broke at its third step")
        return super().step(actions)


make_failing_env = functools.partial(_FailingPointEnv, num_envs=8, max_episode_length=5, seed=3)


@pytest.mark.parametrize("stepping", ["threads", "pipeline"])
def test_an_error_in_one_shard_thread_fails_the_run_naming_it(make_sac, stepping) -> None:
    sac = make_sac(make_point_env(), learning_starts=1, block_steps=1, num_blocks=2, collector_shards=2,
                   shard_stepping=stepping)
    runner = AsyncOffPolicyRunner(make_failing_env, sac, env_seed=3)
    with pytest.raises(CollectorDied, match=r"collector process failed at iteration \d+: collector shard 1 failed: "
                                            r"RuntimeError: shard 1 broke at its third step"):
        runner.learn(10_000)
    assert runner.collector_exitcode == 1 and sac.iteration < 10_000
    assert live_children() == []


def test_killing_one_of_two_collectors_fails_the_run_naming_it(make_sac) -> None:
    sac = make_sac(make_point_env(), learning_starts=1, block_steps=1, num_blocks=2, num_collectors=2)
    runner = AsyncOffPolicyRunner(make_point_env, sac)

    def kill_second(iteration, metrics):
        if iteration == 2:
            os.kill(runner.pool.procs[1].pid, signal.SIGKILL)

    with pytest.raises(CollectorDied, match=r"collector 1 of 2 \(pid \d+\) exited with code -9 at iteration \d+"):
        runner.learn(10_000, on_iteration=kill_second)
    assert runner.collector_exitcode == -9 and runner.collector_exitcodes == [0, -9]
    assert 2 <= sac.iteration < 10_000
    assert live_children() == []


def test_bad_num_collectors_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"runtime.num_collectors must be >= 1, got 0"):
        RuntimeConfig(num_collectors=0)
    with pytest.raises(ValueError, match=r"training.num_envs=8 must be divisible by runtime.num_collectors \* "
                                         r"runtime.collector_shards = 3 \* 1"):
        RuntimeConfig(num_collectors=3, collector_shards=1, mode="async").check_num_envs(8)
    with pytest.raises(ValueError, match=r"runtime.collector_shards must be >= 1, got 0"):
        RuntimeConfig(collector_shards=0)
    with pytest.raises(ValueError, match=r"collector_shards = 1 \* 3"):
        RuntimeConfig(collector_shards=3, mode="async").check_num_envs(8)
    RuntimeConfig(collector_shards=2, mode="sync").check_num_envs(5)  # the sync runtime has no shards


def test_env_logs_of_shards_are_merged() -> None:
    merged = _merge_logs([{"Episode_Reward/a": 1.0, "x": 2.0}, {"Episode_Reward/a": 4.0, "x": 4.0}, {}], [1, 3, 0])
    assert merged == {"Episode_Reward/a": pytest.approx((1.0 + 12.0) / 4), "x": 3.0}
