"""``runtime.policy_device=server``: the acting server answers the Gaussian the collector's policy
copy would draw its action from, with the learner's weights of the last publish; a run served by
it stores exactly what CPU collectors store (the shards' noise stays in the collectors) with
several collectors, shards in threads or pipelined; a failing server or a dead collector ends
the run with an error naming it and leaves no process. Here the learner, and so the server, is
on the CPU; the CUDA path (high-priority stream, events, capture lock) needs a GPU."""

from __future__ import annotations

import copy
import functools
import os
import signal
import threading
import time

import pytest
import torch

from unilab_rl import SAC, AsyncOffPolicyRunner, CollectorDied, FlashSAC, FlashSACConfig, RuntimeConfig, SACConfig
from unilab_rl.algorithms.sac.networks import ExplorationPolicy as SACExplorationPolicy
from unilab_rl.async_runtime import ActingServer, ActingServerDied, ActingSlots, collector_policy_device
from unilab_rl.async_runtime.acting_server import GRAPH_AFTER
from unilab_rl.testing import PointEnv, live_children, make_learner

# Spawned collectors need a picklable, module-level env factory.
make_point_env = functools.partial(PointEnv, num_envs=8, max_episode_length=5, seed=3)

FLASHSAC_SMALL = {
    "learning_starts": 2, "buffer_size_per_env": 64, "batch_size": 32, "num_updates": 1,
    "actor_hidden_dim": 16, "critic_hidden_dim": 16, "actor_num_blocks": 1, "critic_num_blocks": 1, "num_bins": 21,
    "device": "cpu", "block_steps": 3, "num_blocks": 2,
}
TIMEOUT_S = 60.0
"""Longest a test waits for an answer or a run before it fails (instead of hanging)."""


def _within(timeout_s: float, fn, *args):
    """``fn(*args)`` in a thread; its result or its exception, or a failure after ``timeout_s``."""
    out: dict = {}

    def body() -> None:
        try:
            out["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            out["error"] = exc

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert not thread.is_alive(), f"still running after {timeout_s} s: a hang"
    if "error" in out:
        raise out["error"]
    return out["value"]


def _learner(algo: str, make_sac):
    env = make_point_env()
    if algo == "sac":
        learner = make_sac(env, learning_starts=2, block_steps=3, num_blocks=2)
        learner.obs_normalizers["actor"].update(torch.randn(64, 1) * 2 + 0.5)
    else:
        learner = make_learner(FlashSAC, FlashSACConfig, env, **FLASHSAC_SMALL)
    with torch.no_grad():  # weights far from the initial zero heads: the answers depend on them
        for p in learner.actor.parameters():
            p.normal_(0.0, 0.5)
    return learner


def _ask(slots: ActingSlots, slot: int, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The server's answer for ``obs`` on ``slot`` (copies), or a failure after :data:`TIMEOUT_S`."""
    deadline = time.monotonic() + TIMEOUT_S
    answer = slots.request(slot, obs, lambda: time.monotonic() > deadline)
    assert answer is not None, "no answer from the acting server"
    return answer[0].clone(), answer[1].clone()


@pytest.mark.parametrize("algo", ["sac", "flashsac"])
def test_the_server_answers_what_the_collectors_policy_draws_its_action_from(algo, make_sac) -> None:
    learner = _learner(algo, make_sac)
    collector_copy = copy.deepcopy(learner.exploration_policy()).to("cpu")  # as CollectorPool sends it
    slots = ActingSlots(2, 8, 1, 1, torch.multiprocessing.get_context("spawn"))
    server = ActingServer(learner, slots)
    server.start()
    try:
        for slot in (0, 1):
            obs = torch.randn(8, 1) * 2
            mean, log_std = _ask(slots, slot, obs)
            expected = collector_copy.gaussian(obs)
            torch.testing.assert_close((mean, log_std), expected, rtol=0, atol=0)
            # The collector's noise on the answer gives the action the whole policy gives, draw
            # for draw (FlashSAC: held noise, several steps).
            here, served = copy.deepcopy(collector_copy), copy.deepcopy(collector_copy)
            torch.manual_seed(11 + slot)
            direct = [here(obs) for _ in range(3)]
            torch.manual_seed(11 + slot)
            via_server = [served.explore_from(mean, log_std) for _ in range(3)]
            torch.testing.assert_close(via_server, direct, rtol=0, atol=0)
            assert not torch.allclose(direct[0], collector_copy.actor.squash(mean))  # noise was added

        # The learner updates its weights in place: the server keeps acting with the snapshot of
        # the last publish, then with the new weights once published.
        obs = torch.randn(8, 1)
        before = _ask(slots, 0, obs)
        with torch.no_grad():
            for p in learner.actor.parameters():
                p.add_(0.25)
        torch.testing.assert_close(_ask(slots, 0, obs), before, rtol=0, atol=0)
        server.publish()
        updated = copy.deepcopy(learner.exploration_policy()).to("cpu").gaussian(obs)
        torch.testing.assert_close(_ask(slots, 1, obs), updated, rtol=0, atol=0)
        assert not torch.equal(updated[0], before[0])
        assert (server.calls, server.snapshots) == (5, 1)
    finally:
        assert server.stop() == []
    server.raise_if_failed()


def _fields(sac, iterations: int) -> dict[str, torch.Tensor]:
    r, rows = sac.replay, iterations * 8
    return {"obs": r.obs["critic"][:rows], "actor_obs": r.obs["actor"][:rows], "next_obs": r.next_obs["critic"][:rows],
            "actions": r.actions[:rows], "rewards": r.rewards[:rows], "terminated": r.terminated[:rows]}


def _run_fixed_actor(policy_device: str, collectors: int, shards: int, stepping: str, iterations: int = 7):
    """An async run whose actor never changes (random weights, no actor updates, no observation
    normalization), so the collectors' initial copies (``cpu``, never broadcast to) and the
    server's live weights act alike, and the stored data depends on the seeds alone."""
    sac = make_learner(SAC, SACConfig, make_point_env(), batch_size=64, num_updates=2, buffer_size_per_env=64,
                       actor_hidden=(32, 32), critic_hidden=(32, 32), device="cpu", learning_starts=2,
                       actor_update_period=10**6, obs_normalization=False, block_steps=3, num_blocks=2,
                       sync_weights_every=10**6, policy_device=policy_device, num_collectors=collectors,
                       collector_shards=shards, shard_stepping=stepping)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in sac.actor.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
    runner = AsyncOffPolicyRunner(make_point_env, sac, seed=7, env_seed=3)
    summary = _within(TIMEOUT_S, runner.learn, iterations)
    return sac, runner, summary


@pytest.fixture(scope="module")
def cpu_reference() -> dict[str, torch.Tensor]:
    """Replay contents of two CPU collectors of one shard each (the same as any split into two
    shards: each shard's noise depends on its seed alone)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        sac, _, summary = _run_fixed_actor("cpu", 2, 1, "threads")
    finally:
        torch.set_num_threads(threads)
    assert summary.policy_device == "cpu"
    return _fields(sac, 7)


@pytest.mark.parametrize("collectors, shards, stepping", [(2, 1, "threads"), (1, 2, "threads"), (1, 2, "pipeline")])
def test_a_served_run_stores_what_cpu_collectors_store(cpu_reference, collectors, shards, stepping) -> None:
    sac, runner, summary = _run_fixed_actor("server", collectors, shards, stepping)
    assert summary.status == "normal_completion" and summary.policy_device == "server:cpu"
    for key, value in cpu_reference.items():
        torch.testing.assert_close(_fields(sac, 7)[key], value, rtol=0, atol=0, msg=key)
    assert cpu_reference["actions"][16:].unique().numel() > 30  # policy actions with noise, after the warm-up
    # Iterations 2..6 acted through the server, one request per shard; no weights broadcast.
    assert summary.transfer["acting_calls"] == 5 * 2 and summary.transfer["weight_snapshots"] >= 1
    assert summary.transfer["weight_broadcasts"] == 0 and summary.transfer["weight_pulls"] == 0
    assert runner.collector_exitcodes == [0] * collectors and summary.cleanup_errors == []
    assert not runner.server._thread.is_alive()
    assert live_children() == []


def test_flashsac_trains_with_the_acting_server() -> None:
    flash = make_learner(FlashSAC, FlashSACConfig, make_point_env(), **FLASHSAC_SMALL, policy_device="server",
                         num_collectors=2, collector_shards=2, shard_stepping="pipeline")
    summary = _within(TIMEOUT_S, AsyncOffPolicyRunner(make_point_env, flash, seed=5).learn, 8)
    assert summary.status == "normal_completion" and summary.policy_device == "server:cpu"
    assert len(flash.replay) == 8 * 8 and flash.num_critic_updates >= 6
    assert summary.transfer["acting_calls"] == 6 * 4 and summary.collector_exitcodes == [0, 0]
    assert live_children() == []


def test_a_failing_server_fails_the_run_naming_it(make_sac, monkeypatch) -> None:
    # The server runs in this process, so patching the policy class reaches it; the spawned
    # collectors draw their noise with the unpatched class.
    def explode(self, obs):
        raise RuntimeError("acting exploded")

    monkeypatch.setattr(SACExplorationPolicy, "gaussian", explode)
    sac = make_sac(make_point_env(), learning_starts=2, block_steps=2, num_blocks=2, policy_device="server")
    runner = AsyncOffPolicyRunner(make_point_env, sac)
    with pytest.raises(ActingServerDied, match=r"^the acting server \(thread of the learner process\) failed at "
                                               r"iteration \d+: RuntimeError: acting exploded"):
        _within(TIMEOUT_S, runner.learn, 10_000)
    assert isinstance(runner.server.error, RuntimeError)
    assert runner.summary.status == "failed" and runner.summary.error.startswith("the acting server")
    assert runner.collector_exitcodes == [0]  # waiting for an answer, then stopped cleanly
    assert not runner.server._thread.is_alive()
    assert live_children() == []


def test_a_dead_collector_fails_a_served_run_and_stops_the_server(make_sac) -> None:
    sac = make_sac(make_point_env(), learning_starts=1, block_steps=1, num_blocks=2, policy_device="server",
                   num_collectors=2)
    runner = AsyncOffPolicyRunner(make_point_env, sac)

    def kill_collector(iteration, metrics):
        if iteration == 3:
            os.kill(runner.pool.procs[1].pid, signal.SIGKILL)

    with pytest.raises(CollectorDied, match=r"collector 1 of 2 \(pid \d+\) exited with code -9") as err:
        _within(TIMEOUT_S, runner.learn, 10_000, None, kill_collector)
    assert not isinstance(err.value, ActingServerDied)
    assert runner.server.calls > 0 and not runner.server._thread.is_alive()
    assert live_children() == []


def test_server_values_are_checked_and_recorded(make_env, make_sac) -> None:
    assert RuntimeConfig(policy_device="server").policy_device == "server"
    with pytest.raises(ValueError, match=r"^runtime.policy_device must be 'cpu', 'learner' or 'server', got 'gpu'$"):
        RuntimeConfig(policy_device="gpu")
    assert collector_policy_device("server", torch.device("cuda", 1)) == "server:cuda:1"
    assert collector_policy_device("server", "cpu") == "server:cpu"

    class Unsplit(torch.nn.Module):  # an exploration policy with only a forward pass
        def forward(self, obs):
            return obs

    sac = make_sac(make_env(num_envs=8), policy_device="server")
    sac.exploration_policy = Unsplit
    with pytest.raises(ValueError, match=r"runtime.policy_device=server needs .*Unsplit lacks gaussian, explore_from: "
                                         r"use runtime.policy_device=learner or cpu"):
        AsyncOffPolicyRunner(make_point_env, sac)


def test_on_the_cpu_the_server_never_captures_a_graph(make_sac) -> None:
    learner = _learner("sac", make_sac)
    slots = ActingSlots(1, 8, 1, 1, torch.multiprocessing.get_context("spawn"))
    server = ActingServer(learner, slots)
    server.start()
    try:
        for _ in range(GRAPH_AFTER + 2):
            _ask(slots, 0, torch.randn(8, 1))
        assert not server.graphed and server.graph_error is None
    finally:
        assert server.stop() == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the server's CUDA graph needs a GPU")
@pytest.mark.parametrize("algo", ["sac", "flashsac"])
def test_on_cuda_the_server_replays_its_graph_with_the_last_published_weights(algo) -> None:
    env = make_point_env()
    if algo == "sac":
        learner = make_learner(SAC, SACConfig, env, device="cuda", learning_starts=2, block_steps=3, num_blocks=2,
                               batch_size=32, buffer_size_per_env=64, actor_hidden=(32, 32), critic_hidden=(32, 32))
    else:
        learner = make_learner(FlashSAC, FlashSACConfig, env, **(FLASHSAC_SMALL | {"device": "cuda"}))
    with torch.no_grad():
        for p in learner.actor.parameters():
            p.normal_(0.0, 0.5)
    slots = ActingSlots(2, 8, 1, 1, torch.multiprocessing.get_context("spawn"))
    slots.pin()
    server = ActingServer(learner, slots)
    server.start()
    try:
        def expected(obs):  # the live policy on the GPU, eager
            with torch.inference_mode():
                return tuple(t.cpu() for t in learner.exploration_policy().gaussian(obs.cuda()))

        obs = [torch.randn(8, 1) * 2 for _ in range(GRAPH_AFTER + 3)]
        for i, o in enumerate(obs):
            torch.testing.assert_close(_ask(slots, i % 2, o), expected(o))
        assert server.graphed, server.graph_error
        # new weights reach the graph only when published
        before = _ask(slots, 0, obs[0])
        with torch.no_grad():
            for p in learner.actor.parameters():
                p.add_(0.25)
        torch.testing.assert_close(_ask(slots, 1, obs[0]), before, rtol=0, atol=0)
        server.publish()
        torch.testing.assert_close(_ask(slots, 0, obs[0]), expected(obs[0]))
        assert not torch.equal(_ask(slots, 1, obs[0])[0], before[0])
    finally:
        assert server.stop() == []
        slots.unpin()
    server.raise_if_failed()
