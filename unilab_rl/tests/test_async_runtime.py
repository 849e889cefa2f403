"""AsyncOffPolicyRunner: same replay contents as the sync runner, UTD held, collector death,
clean stop, weight broadcast."""

from __future__ import annotations

import functools
import os
import signal
import time

import pytest
import torch

from unilab_rl import AsyncOffPolicyRunner, CollectorDied, OffPolicyRunner
from unilab_rl.async_runtime import COLLECTOR_PHASES, SharedWeights, flat_state, load_flat_state

from unilab_rl.testing import PointEnv, live_children

# The collector is spawned: the env factory must be picklable, so it is a module-level function.
make_point_env = functools.partial(PointEnv, num_envs=8, max_episode_length=5, seed=3)


class _FailingEnv(PointEnv):
    def step(self, actions):
        if int(self.t.max()) >= 2:
            raise RuntimeError("physics exploded")
        return super().step(actions)


def _make_failing_env():
    return _FailingEnv(num_envs=8, max_episode_length=5, seed=3)


class _TimedPhysicsEnv(PointEnv):
    """Reports 3 ms of "physics" per step (a sleep) in ``physics_time_s``, as ManagerBasedRlEnv
    reports its ``backend.step``."""

    def __init__(self, num_envs: int, max_episode_length: int, seed: int) -> None:
        super().__init__(num_envs, max_episode_length, seed)
        self.physics_time_s = 0.0

    def step(self, actions):
        t0 = time.perf_counter()
        time.sleep(0.003)
        self.physics_time_s += time.perf_counter() - t0
        return super().step(actions)


make_timed_env = functools.partial(_TimedPhysicsEnv, num_envs=8, max_episode_length=5, seed=3)


def test_collection_time_is_split_by_phase(make_sac) -> None:
    logged: list[dict[str, float]] = []
    sac = make_sac(make_point_env(), learning_starts=2, block_steps=4, num_blocks=2)
    summary = AsyncOffPolicyRunner(make_timed_env, sac, log_fn=lambda it, m: logged.append(m)).learn(12)
    phases = summary.collector_phase_time_s
    assert tuple(phases) == COLLECTOR_PHASES and all(v >= 0 for v in phases.values())
    assert 12 * 0.003 <= phases["physics"] <= summary.collection_time_s
    assert phases["policy"] > 0 and phases["env"] > 0 and phases["write"] > 0
    assert sum(phases.values()) == pytest.approx(summary.collection_time_s, rel=0.05)
    assert all(m["Perf/collector_physics_time"] >= 0.003 for m in logged)
    # An env without physics_time_s: the whole env.step counts as env.
    sac = make_sac(make_point_env(), learning_starts=2, block_steps=4, num_blocks=2)
    phases = AsyncOffPolicyRunner(make_point_env, sac).learn(4).collector_phase_time_s
    assert phases["physics"] == 0.0 and phases["env"] > 0



def _replay_rows(sac, rows: int) -> dict[str, torch.Tensor]:
    r = sac.replay
    return {"obs": r.obs["critic"][:rows], "next_obs": r.next_obs["critic"][:rows], "actions": r.actions[:rows],
            "rewards": r.rewards[:rows], "terminated": r.terminated[:rows]}


def test_async_and_sync_store_the_same_replay_contents(make_sac) -> None:
    iterations = 10  # not a multiple of block_steps: the last block is partial
    sync_env = make_point_env()
    sync = make_sac(sync_env, learning_starts=100, block_steps=4, num_blocks=2)  # warm-up actions only
    OffPolicyRunner(sync_env, sync, seed=7).learn(iterations)

    asyn = make_sac(make_point_env(), learning_starts=100, block_steps=4, num_blocks=2)
    summary = AsyncOffPolicyRunner(make_point_env, asyn, seed=7).learn(iterations)

    assert summary.runtime == "async" and asyn.iteration == iterations == sync.iteration
    assert len(asyn.replay) == len(sync.replay) == iterations * 8
    for key, value in _replay_rows(sync, iterations * 8).items():
        torch.testing.assert_close(_replay_rows(asyn, iterations * 8)[key], value, rtol=0, atol=0, msg=key)
    # The normalizers merged the same steps in the same order.
    for group in sync.obs_normalizers:
        torch.testing.assert_close(asyn.obs_normalizers[group].mean, sync.obs_normalizers[group].mean)
        torch.testing.assert_close(asyn.obs_normalizers[group].var, sync.obs_normalizers[group].var)
    assert summary.transfer["blocks"] == 3 and summary.transfer["bytes_to_learner"] > 0


def test_async_holds_the_update_to_data_ratio_and_logs_it(make_sac) -> None:
    sac = make_sac(make_point_env(), learning_starts=2, num_updates=2, batch_size=16, block_steps=3, num_blocks=2,
                   sync_weights_every=2)
    logged: list[tuple[int, dict[str, float]]] = []
    summary = AsyncOffPolicyRunner(make_point_env, sac, log_fn=lambda it, m: logged.append((it, m))).learn(12)

    assert [it for it, _ in logged] == list(range(1, 13))
    # Updates start at iteration learning_starts - 1, as in the sync runner: 11 iterations x 2 updates.
    assert summary.updates == 22 == sac.num_critic_updates
    assert summary.utd_ratio == pytest.approx(22 * 16 / (12 * 8))
    assert logged[-1][1]["Perf/utd_ratio"] == pytest.approx(summary.utd_ratio)
    keys = set().union(*(m.keys() for _, m in logged))
    for key in ("Train/mean_reward", "Train/mean_episode_length", "Loss/critic", "Episode_Reward/distance",
                "Perf/collection_time", "Perf/learning_time", "Perf/learner_wait_time",
                "Perf/collector_wait_time", "Perf/total_fps", "Perf/policy_lag"):
        assert key in keys, key
    assert summary.transfer["weight_broadcasts"] == 11
    assert 0 < summary.first_update_time_s < summary.learning_time_s
    assert live_children() == []


def test_collector_stops_cleanly_and_reports_exit_code(make_sac) -> None:
    sac = make_sac(make_point_env(), learning_starts=1, block_steps=2)
    runner = AsyncOffPolicyRunner(make_point_env, sac)
    runner.learn(4)
    assert runner.collector_exitcode == 0 and runner.cleanup_errors == []
    assert live_children() == []


def test_a_killed_collector_fails_the_run_with_a_clear_message(make_sac) -> None:
    sac = make_sac(make_point_env(), learning_starts=1, block_steps=1, num_blocks=2)
    runner = AsyncOffPolicyRunner(make_point_env, sac)

    def kill_collector(iteration, metrics):
        if iteration == 2:
            os.kill(runner.pool.procs[0].pid, signal.SIGKILL)

    with pytest.raises(CollectorDied, match=r"collector process exited with code -9 at iteration \d+"):
        runner.learn(10_000, on_iteration=kill_collector)
    assert runner.collector_exitcode == -9
    assert 2 <= sac.iteration < 10_000
    assert live_children() == []


def test_an_error_in_the_collector_is_reported_with_its_message(make_sac) -> None:
    sac = make_sac(make_point_env(), learning_starts=1, block_steps=1)
    runner = AsyncOffPolicyRunner(_make_failing_env, sac)
    with pytest.raises(CollectorDied, match="RuntimeError: physics exploded"):
        runner.learn(20)
    assert runner.collector_exitcode == 1
    assert live_children() == []


def test_an_exception_in_the_learner_stops_the_collector(make_sac) -> None:
    sac = make_sac(make_point_env(), learning_starts=1, block_steps=2)
    runner = AsyncOffPolicyRunner(make_point_env, sac)

    def interrupt(iteration, metrics):
        if iteration == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        runner.learn(10_000, on_iteration=interrupt)
    assert sac.iteration == 3
    assert runner.collector_exitcode == 0
    assert live_children() == []


def test_weights_round_trip_through_shared_memory(make_env, make_sac) -> None:
    env = make_env()
    a, b = make_sac(env), make_sac(env, actor_lr=1e-3)
    torch.nn.init.normal_(a.actor.trunk[0].weight)
    a.obs_normalizers["actor"].update(torch.randn(16, 1) * 3 + 1)
    weights = SharedWeights(flat_state(a.exploration_policy()).numel(), torch.multiprocessing.get_context("spawn"))
    assert weights.pull(b.exploration_policy(), 0) == 0  # nothing published yet
    weights.publish(flat_state(a.exploration_policy()))
    assert weights.pull(b.exploration_policy(), 0) == 1
    torch.testing.assert_close(flat_state(b.exploration_policy()), flat_state(a.exploration_policy()))
    with pytest.raises(ValueError, match="values"):
        load_flat_state(b.exploration_policy(), torch.zeros(3))


_ORPHAN_SCRIPT = """
import functools, sys, torch
from unilab_rl import AsyncOffPolicyRunner, SACConfig, SAC
from unilab_rl.testing import PointEnv, make_learner
torch.set_num_threads(1)
make = functools.partial(PointEnv, num_envs=4, seed=0)
sac = make_learner(SAC, SACConfig, make(), batch_size=8, num_updates=1, buffer_size_per_env=16, learning_starts=1,
                   actor_hidden=(8,), critic_hidden=(8,), device="cpu", block_steps=1)
runner = AsyncOffPolicyRunner(make, sac)
def report(iteration, metrics):
    if iteration == 2:
        print(runner.pool.procs[0].pid, flush=True)
runner.learn(10**9, on_iteration=report)
"""


def test_the_collector_exits_when_the_learner_process_is_killed() -> None:
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-c", _ORPHAN_SCRIPT], stdout=subprocess.PIPE, text=True)
    try:
        collector = int(proc.stdout.readline())
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and os.path.exists(f"/proc/{collector}"):
            time.sleep(0.1)
        assert not os.path.exists(f"/proc/{collector}"), "collector outlived its learner"
    finally:
        if proc.poll() is None:
            proc.kill()
