"""A run's memory is estimated from its config before anything large is built, and a run that
does not fit the host (or the learner's device) is refused with one line naming the key, the
estimate and what is available; training.allow_large=true starts it anyway."""

from __future__ import annotations

import pytest
import torch

from unilab import memory
from unilab.config import layer_overrides
from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
from unilab_rl.algorithms.sac.config import SACConfig
from unilab_rl.runtime import RuntimeConfig
from unisim.backends.mujoco import MujocoBackend


@pytest.fixture(scope="module")
def probe():
    env = make_env(G1WalkFlatConfig(), backend_cls=MujocoBackend, num_envs=1, nthread=1, seed=0)
    yield env
    env.close()


def test_the_estimate_has_each_allocation_with_its_keys(probe):
    cfg = SACConfig(buffer_size_per_env=1000, batch_size=1024)
    runtime = RuntimeConfig(mode="async", num_blocks=4, block_steps=8)
    est = memory.estimate("sac", cfg, runtime, 256, probe, torch.device("cuda", 0))
    per_transition = 2 * 4 * (probe.obs_dims["actor"] + probe.obs_dims["critic"]) + 4 * 29 + 5
    parts = {p.what: p for p in est.parts}
    assert parts["replay buffer"].nbytes == 1000 * 256 * per_transition and parts["replay buffer"].on_device
    assert parts["gradient update"].nbytes == 1024 * memory.UPDATE_BYTES_PER_SAMPLE["sac"]
    assert parts["async block ring"].nbytes == 4 * 8 * 256 * per_transition and not parts["async block ring"].on_device
    world = memory.bytes_per_world(probe)
    assert 10_000 < world < 20_000  # measured: 15.0 KB of resident memory per g1_walk_flat world
    assert parts["envs"].nbytes == 2 * 256 * world  # async: the trainer's env and the collectors'
    assert est.total(True) == parts["replay buffer"].nbytes + parts["gradient update"].nbytes
    # on the CPU everything is host memory
    assert memory.estimate("sac", cfg, runtime, 256, probe, torch.device("cpu")).total(on_device=True) == 0


def test_flashsac_update_memory_follows_its_critic_kind(probe):
    from unilab_rl.algorithms.flashsac.config import FlashSACConfig

    sync = RuntimeConfig(mode="sync")
    for critic, per_sample in (("categorical", memory.UPDATE_BYTES_PER_SAMPLE["flashsac"]),
                               ("mlp", memory.FLASHSAC_SCALAR_CRITIC_BYTES_PER_SAMPLE)):
        est = memory.estimate("flashsac", FlashSACConfig(batch_size=2048, critic=critic), sync, 16, probe,
                              torch.device("cpu"))
        assert {p.what: p for p in est.parts}["gradient update"].nbytes == 2048 * per_sample
    assert memory.FLASHSAC_SCALAR_CRITIC_BYTES_PER_SAMPLE < memory.UPDATE_BYTES_PER_SAMPLE["flashsac"]


def test_the_refusal_names_the_largest_parts_keys_the_estimate_and_what_is_available(probe):
    cfg, sync = SACConfig(), RuntimeConfig(mode="sync")
    est = memory.estimate("sac", cfg, sync, 100_000_000, probe, torch.device("cpu"))
    line = memory.refusal(est, host=16 * 10**9, device=None)
    replay = 1024 * 100_000_000 * (2 * 4 * (probe.obs_dims["actor"] + probe.obs_dims["critic"]) + 4 * 29 + 5)
    need = memory._size(est.total(on_device=False))
    assert line.startswith(f"algo.buffer_size_per_env=1024, training.num_envs=100000000: this run needs about {need} ")
    assert f"of host memory (replay buffer {memory._size(replay)}: 1024 x 100000000 transitions of {memory._size(replay // (1024 * 100_000_000))}; envs" in line
    assert line.endswith("but 16.0 GB is available; lower algo.buffer_size_per_env or training.num_envs, or set "
                         "training.allow_large=true to start anyway")
    assert memory.refusal(est, host=None, device=None) is None  # unknown: not refused
    small = memory.estimate("sac", SACConfig(buffer_size_per_env=64, batch_size=64), sync, 8, probe,
                            torch.device("cpu"))
    assert memory.refusal(small, host=16 * 10**9, device=None) is None
    device = memory.estimate("sac", SACConfig(batch_size=10**6), sync, 8, probe, torch.device("cuda", 0))
    assert memory.refusal(device, host=16 * 10**9, device=10**9).startswith(
        "algo.batch_size=1000000: this run needs about 67.0 GB of memory on cuda:0 (gradient update 67.0 GB")


@pytest.mark.parametrize("key, value", [("algo.buffer_size_per_env", 30000), ("algo.batch_size", 2000)])
def test_a_run_that_does_not_fit_is_refused_before_the_run_directory(tmp_path, monkeypatch, key, value,
                                                                     unilab_in_process):
    """`unilab train` (in this process) on a "machine" with 50 MB available."""
    monkeypatch.setattr(memory, "available_host_bytes", lambda: 50 * 10**6)
    small = ["runtime.mode=sync", "training.num_envs=4", "algo.learning_starts=1", "training.max_iterations=2",
             "sim.nthread=1", "training.no_play=true", f"training.log_dir={tmp_path / 'logs'}", "algo.batch_size=16",
             "algo.buffer_size_per_env=16"]
    args = ["train", "--algo", "sac", "--task", "g1_walk_flat", *layer_overrides(small, [f"{key}={value}"])]
    result = unilab_in_process(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("error: ")]
    assert len(lines) == 1 and lines[0].startswith(f"error: {key}={value}"), result.stderr
    assert "but 50.0 MB is available" in lines[0] and "training.allow_large=true" in lines[0]
    assert "Traceback" not in result.stderr and not list((tmp_path / "logs").glob("*/*/*"))
    if key == "algo.buffer_size_per_env":  # the override starts it (once is enough: a whole run, not evaluated)
        allowed = unilab_in_process(*args, "training.allow_large=true", "training.eval_interval=0", cwd=tmp_path)
        assert allowed.returncode == 0, allowed.stderr
