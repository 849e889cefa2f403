"""``runtime.policy_device``: the async collector acting on the learner's device stores what
acting on its own CPU stores, bad values are refused naming the key, and the CPU collector keeps
CUDA hidden. The CUDA path itself needs a GPU: here the learner, and so "learner", is the CPU."""

from __future__ import annotations

import functools
import os

import pytest
import torch

from unilab_rl import AsyncOffPolicyRunner, FlashSAC, FlashSACConfig, RuntimeConfig
from unilab_rl.async_runtime import collector_policy_device
from unilab_rl.testing import PointEnv, live_children, make_learner

# Spawned collectors need picklable, module-level env factories.
make_point_env = functools.partial(PointEnv, num_envs=8, max_episode_length=5, seed=3)


class _CudaReportingEnv(PointEnv):
    """Logs whether ``CUDA_VISIBLE_DEVICES`` is empty in the process stepping it (1.0: empty)."""

    def step(self, actions):
        obs, reward, terminated, truncated, extras = super().step(actions)
        extras["log"]["Test/cuda_hidden"] = float(os.environ.get("CUDA_VISIBLE_DEVICES") == "")
        return obs, reward, terminated, truncated, extras


make_cuda_reporting_env = functools.partial(_CudaReportingEnv, num_envs=8, max_episode_length=5, seed=3)

FLASHSAC_SMALL = {
    "learning_starts": 3, "buffer_size_per_env": 64, "batch_size": 32, "num_updates": 1,
    "actor_hidden_dim": 16, "critic_hidden_dim": 16, "actor_num_blocks": 1, "critic_num_blocks": 1, "num_bins": 21,
    "device": "cpu", "block_steps": 4, "num_blocks": 2,
}


def _replay(agent, rows: int) -> dict[str, torch.Tensor]:
    r = agent.replay
    return {"obs": r.obs["actor"][:rows], "next_obs": r.next_obs["actor"][:rows], "actions": r.actions[:rows],
            "rewards": r.rewards[:rows], "terminated": r.terminated[:rows]}


def _collect(make_agent, policy_device: str, iterations: int):
    """One async run from the same initial weights; no broadcasts, so the collector's policy is the
    initial one throughout and its actions depend on the seeds alone (not on learner timing)."""
    torch.manual_seed(0)
    agent = make_agent(policy_device)
    summary = AsyncOffPolicyRunner(make_point_env, agent, seed=7).learn(iterations)
    assert summary.transfer["weight_pulls"] == 0
    return agent, summary


@pytest.mark.parametrize("algo", ["sac", "flashsac"])
def test_learner_policy_device_stores_the_same_replay_as_cpu(algo, make_sac) -> None:
    # learning_starts=3 of 10 iterations: warm-up actions (CPU generator) then policy actions
    # (sampling noise, FlashSAC's held noise) drawn in the collector; the last block is partial.
    no_broadcast = 10**6
    if algo == "sac":
        def make_agent(device):
            return make_sac(make_point_env(), learning_starts=3, block_steps=4, num_blocks=2,
                            sync_weights_every=no_broadcast, policy_device=device)
    else:
        def make_agent(device):
            return make_learner(FlashSAC, FlashSACConfig, make_point_env(), **FLASHSAC_SMALL,
                                sync_weights_every=no_broadcast, policy_device=device)
    iterations = 10
    cpu, cpu_summary = _collect(make_agent, "cpu", iterations)
    dev, dev_summary = _collect(make_agent, "learner", iterations)

    assert (cpu_summary.policy_device, dev_summary.policy_device) == ("cpu", "cpu")  # a CPU learner
    assert len(dev.replay) == len(cpu.replay) == iterations * 8
    for key, value in _replay(cpu, iterations * 8).items():
        torch.testing.assert_close(_replay(dev, iterations * 8)[key], value, rtol=0, atol=0, msg=key)
    assert live_children() == []


def test_policy_device_resolves_to_the_learners_device() -> None:
    assert collector_policy_device("cpu", torch.device("cuda", 1)) == "cpu"
    assert collector_policy_device("learner", torch.device("cuda", 1)) == "cuda:1"  # each rank its own
    assert collector_policy_device("learner", "cpu") == "cpu"
    with pytest.raises(ValueError, match="policy_device must be 'cpu', 'learner' or 'server', got 'gpu'"):
        collector_policy_device("gpu", "cpu")


def test_a_bad_policy_device_is_refused_naming_the_key(make_env, make_sac) -> None:
    with pytest.raises(ValueError, match=r"runtime.policy_device must be 'cpu', 'learner' or 'server', got 'cuda'"):
        RuntimeConfig(policy_device="cuda")
    assert RuntimeConfig().policy_device == "learner"
    sac = make_sac(make_env(num_envs=8))
    sac.runtime.policy_device = "gpu"  # set after the config's own check: the runner checks again
    with pytest.raises(ValueError, match="policy_device must be 'cpu', 'learner' or 'server', got 'gpu'"):
        AsyncOffPolicyRunner(make_point_env, sac)


@pytest.mark.parametrize("policy_device", ["cpu", "learner"])
def test_a_collector_acting_on_the_cpu_hides_cuda(policy_device, make_sac, monkeypatch) -> None:
    # The learner's CUDA_VISIBLE_DEVICES ("0") reaches the spawned collector, which must empty it
    # whenever its policy runs on the CPU (always with "cpu"; with "learner" on a CPU learner).
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    sac = make_sac(make_cuda_reporting_env(), learning_starts=2, block_steps=2, num_blocks=2,
                   policy_device=policy_device)
    logged: list[dict[str, float]] = []
    AsyncOffPolicyRunner(make_cuda_reporting_env, sac, log_fn=lambda it, m: logged.append(m)).learn(4)
    assert [m["Test/cuda_hidden"] for m in logged] == [1.0] * 4
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "0"  # the learner's own setting is untouched
