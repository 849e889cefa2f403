"""OffPolicyRunner: transitions stored, metrics, callbacks, and that SAC actually learns."""

from __future__ import annotations

import time

import pytest
import torch

from unilab_rl import OffPolicyRunner


def test_truncated_rows_store_the_pre_reset_observation(make_env, make_sac) -> None:
    env = make_env(num_envs=8, max_episode_length=3)
    sac = make_sac(env, learning_starts=100)  # collection only
    OffPolicyRunner(env, sac).learn(3)
    rows = slice(16, 24)  # the third env step: every episode ends here
    time_fraction = sac.replay.next_obs["critic"][rows, 2]  # critic obs = [g - x, x, t / T]
    terminated = sac.replay.terminated[rows]
    truncated = ~terminated
    assert truncated.any()
    # s' of a time-out is the observation at t = T, not the first one of the next episode (t = 0),
    # and the row is stored as non-terminal, so it bootstraps.
    assert torch.all(time_fraction[truncated] == 1.0)
    # Terminal rows reached the target: |g - x| < REACH in their s'.
    assert torch.all(sac.replay.next_obs["actor"][rows][terminated].abs() < env.REACH)
    # Consistency: s' of step k is s of step k+1 for envs that did not end.
    torch.testing.assert_close(sac.replay.next_obs["actor"][0:8], sac.replay.obs["actor"][8:16])


def test_random_actions_during_warm_up_then_policy(make_env, make_sac, monkeypatch) -> None:
    env = make_env()
    sac = make_sac(env, learning_starts=3)
    calls = []
    real_act = sac.act
    monkeypatch.setattr(sac, "act", lambda obs, deterministic=False: calls.append(sac.iteration) or real_act(obs))
    updates = []
    real_update = sac.update
    monkeypatch.setattr(sac, "update", lambda: updates.append(sac.iteration) or real_update())
    OffPolicyRunner(env, sac).learn(5)
    assert calls == [3, 4]  # policy acts from iteration learning_starts on
    assert updates == [2, 3, 4]  # updates once learning_starts * num_envs transitions are stored


def test_metrics_and_summary(make_env, make_sac) -> None:
    env = make_env(num_envs=8, max_episode_length=5)
    sac = make_sac(env, learning_starts=2)
    logged: list[tuple[int, dict[str, float]]] = []
    summary = OffPolicyRunner(env, sac, log_fn=lambda it, m: logged.append((it, m))).learn(12)

    assert [it for it, _ in logged] == list(range(1, 13))
    keys = set().union(*(m.keys() for _, m in logged))
    for key in ("Train/mean_reward", "Train/mean_episode_length", "Loss/critic", "Loss/actor", "Loss/alpha",
                "Policy/alpha", "Perf/total_fps", "Perf/collection_time", "Perf/learning_time",
                "Episode_Reward/distance", "Episode_Termination/reached"):
        assert key in keys, key
    assert "Loss/critic" not in logged[0][1]  # no update before learning_starts
    last = logged[-1][1]
    assert 1 <= last["Train/mean_episode_length"] <= 5
    assert all(isinstance(v, float) for v in last.values())

    assert summary.iterations == 12 and summary.final_iteration == 12 == sac.iteration
    assert summary.env_steps == 12 * 8
    assert summary.fps > 0 and summary.wall_time_s > 0
    assert summary.final_mean_reward == last["Train/mean_reward"]
    assert summary.best_mean_reward >= summary.final_mean_reward
    assert summary.final_mean_episode_length == last["Train/mean_episode_length"]


def test_first_update_time_is_the_first_updates_own_time(make_env, make_sac, monkeypatch) -> None:
    # The first update stands in for a compile (0.2 s), the second is slower still (0.3 s): the
    # figure is the first call's own time, not the sum, the mean, the largest or the last.
    env = make_env(num_envs=8, max_episode_length=5)
    sac = make_sac(env, learning_starts=2)
    real_update, calls = sac.update, []

    def update():
        calls.append(1)
        time.sleep({1: 0.2, 2: 0.3}.get(len(calls), 0.0))
        return real_update()

    monkeypatch.setattr(sac, "update", update)
    summary = OffPolicyRunner(env, sac).learn(6)
    assert len(calls) == 5
    assert 0.2 <= summary.first_update_time_s < 0.3
    # No update in the call (still collecting the warm-up rows): no figure.
    env = make_env(num_envs=8, max_episode_length=5)
    assert OffPolicyRunner(env, make_sac(env, learning_starts=100)).learn(3).first_update_time_s is None


def test_episode_statistics_are_sums_of_rewards(make_env, make_sac) -> None:
    # With a fixed episode length and no early termination, mean return = mean of summed rewards.
    env = make_env(num_envs=4, max_episode_length=4)
    env.REACH = -1.0  # never terminates
    sac = make_sac(env, learning_starts=100)
    rewards = []
    real_step = env.step
    env.step = lambda a: (out := real_step(a), rewards.append(out[1].clone()))[0]
    summary = OffPolicyRunner(env, sac).learn(8)
    per_episode = torch.stack(rewards).reshape(2, 4, 4).sum(1)  # (episode, env)
    assert summary.final_mean_reward == pytest.approx(per_episode.mean().item(), rel=1e-5)
    assert summary.final_mean_episode_length == 4


def test_callback_can_stop_training_and_learning_resumes(make_env, make_sac) -> None:
    env = make_env()
    sac = make_sac(env)

    def stop_at_3(iteration: int, metrics: dict[str, float]) -> None:
        if iteration == 3:
            raise KeyboardInterrupt

    runner = OffPolicyRunner(env, sac)
    with pytest.raises(KeyboardInterrupt):
        runner.learn(10, on_iteration=stop_at_3)
    assert sac.iteration == 3  # the finished iteration is counted: a checkpoint now is consistent
    summary = runner.learn(2)
    assert summary.final_iteration == 5


def test_checkpoint_schedule(make_env, make_sac) -> None:
    env = make_env()
    saved: list[int] = []
    runner = OffPolicyRunner(env, make_sac(env), checkpoint_fn=saved.append, checkpoint_interval=2)
    runner.learn(5)
    assert saved == [2, 4, 5]
    saved.clear()
    runner.learn(1)
    assert saved == [6]


def test_start_iteration_sets_the_counter(make_env, make_sac) -> None:
    env = make_env()
    sac = make_sac(env, learning_starts=2)
    summary = OffPolicyRunner(env, sac).learn(2, start_iteration=40)
    assert summary.final_iteration == 42


def test_sac_learns_the_point_task(make_env, make_sac, evaluate) -> None:
    """A few thousand env steps take the policy more than halfway from its initial return to a
    hand-written controller's (about 4 s on one core)."""
    torch.manual_seed(0)
    env = make_env(num_envs=32, seed=0)
    sac = make_sac(
        env, batch_size=256, num_updates=4, actor_update_period=2, buffer_size_per_env=400, learning_starts=5,
        actor_hidden=(64, 64), critic_hidden=(64, 64), gamma=0.9, actor_lr=1e-3, critic_lr=1e-3,
    )
    def policy(e, obs):
        return sac.act(obs["actor"], deterministic=True)
    def oracle(e, obs):
        return e.oracle_actions()
    def uniform(e, obs):
        return sac.random_actions(e.num_envs)

    initial, random, best = evaluate(policy), evaluate(uniform), evaluate(oracle)
    summary = OffPolicyRunner(env, sac).learn(150)  # 4800 env steps, 600 critic updates
    trained = evaluate(policy)
    assert summary.env_steps == 4800
    assert trained > max(initial, random) + 0.5 * (best - max(initial, random)), (initial, random, trained, best)
