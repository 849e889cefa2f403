"""Helpers of `unilab train` for the async runtime and resume: RNG state round trip through a
weights-only checkpoint, the CPU thread split, and resume checkpoint lookup."""

from __future__ import annotations

import os
import random
import time

import numpy as np
import pytest
import torch

from unilab.build import thread_split
from unilab.errors import UserError
from unilab.resume import find_resume_checkpoint, rng_state, set_rng_state


def _draws() -> tuple:
    return random.random(), float(np.random.normal()), float(np.random.rand()), float(torch.rand(1))


def test_rng_state_survives_a_weights_only_checkpoint(tmp_path) -> None:
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    np.random.normal()  # leaves a cached gaussian in numpy's state
    torch.save({"rng": rng_state()}, tmp_path / "ckpt.pt")
    expected = _draws()
    _draws(), _draws()
    set_rng_state(torch.load(tmp_path / "ckpt.pt", weights_only=True)["rng"])
    assert _draws() == expected


def test_thread_split_keeps_cores_for_collector_and_learner() -> None:
    cores = len(os.sched_getaffinity(0))
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert thread_split("sync", 0, 1, 0, cpu) == {"physics": cores, "collector": 0, "learner": 0}
    split = thread_split("async", 0, 1, 0, cuda)
    assert split["learner"] == 1 and split["collector"] == 1
    assert split["physics"] == max(1, cores - 2)
    assert thread_split("async", 6, 2, 3, cpu) == {"physics": 6, "collector": 2, "learner": 3}
    assert min(thread_split("async", 0, 1, 0, cpu).values()) >= 1


def test_find_resume_checkpoint(tmp_path) -> None:
    with pytest.raises(UserError, match="no run with a model_last.pt"):
        find_resume_checkpoint("latest", str(tmp_path), "sac", "g1_walk_flat")
    old, new = (tmp_path / "sac" / "g1_walk_flat" / name for name in ("a", "b"))
    for age, run in ((100, old), (0, new)):
        run.mkdir(parents=True)
        (run / "model_last.pt").write_bytes(b"x")
        os.utime(run / "model_last.pt", (time.time() - age, time.time() - age))
    assert find_resume_checkpoint("latest", str(tmp_path), "sac", "g1_walk_flat") == new / "model_last.pt"
    assert find_resume_checkpoint(str(old), str(tmp_path), "sac", "g1_walk_flat") == old / "model_last.pt"
    assert find_resume_checkpoint(str(old / "model_last.pt"), "x", "sac", "t") == old / "model_last.pt"
    with pytest.raises(UserError, match="no such checkpoint"):
        find_resume_checkpoint(str(tmp_path / "missing"), str(tmp_path), "sac", "g1_walk_flat")


def test_a_run_no_longer_than_the_warm_up_warns_that_its_policy_is_untrained(caplog):
    from types import SimpleNamespace

    from unilab.build import check_schedule as _check_schedule

    def cfg(starts, size=1024):
        return SimpleNamespace(learning_starts=starts, buffer_size_per_env=size)

    with caplog.at_level("WARNING", logger="unilab.build"):
        _check_schedule(cfg(100), 101)
    assert not caplog.records
    with caplog.at_level("WARNING", logger="unilab.build"):
        _check_schedule(cfg(100), 100)
    assert "training.max_iterations=100 <= algo.learning_starts=100" in caplog.text and "untrained" in caplog.text
    with pytest.raises(UserError, match="algo.buffer_size_per_env=64 is smaller than algo.learning_starts=100"):
        _check_schedule(cfg(100, size=64), 1000)


def test_a_sync_run_names_the_async_settings_given_on_the_command_line_it_ignores(caplog):
    from unilab.build import algo_settings, prepare, warn_ignored_runtime_keys

    def ignored(overrides, preset="laptop"):
        caplog.clear()
        algo_reg, _, _, cfg = prepare("sac", "g1_walk_flat", "mujoco", overrides, preset)
        with caplog.at_level("WARNING", logger="unilab.build"):
            keys = warn_ignored_runtime_keys(overrides, algo_settings(algo_reg, cfg)[1])
        return keys, caplog.text

    # the laptop preset runs sync: the async keys typed on the command line are named, each with its value
    keys, text = ignored(["runtime.policy_device=server", "training.seed=2", "runtime.collector_shards=2",
                          "runtime.compile=false"])
    assert keys == ["runtime.policy_device", "runtime.collector_shards"]
    assert "runtime.policy_device=server is a setting of the async runtime" in text
    assert "runtime.collector_shards=2" in text and "runtime.compile" not in text
    # the owner YAML's own async settings (pipelined shards) are not the user's: no warning
    assert ignored([]) == ([], "")
    # with the async runtime nothing is ignored
    assert ignored(["runtime.mode=async", "runtime.policy_device=server"]) == ([], "")
    assert ignored(["runtime.policy_device=server"], preset=None) == ([], "")
