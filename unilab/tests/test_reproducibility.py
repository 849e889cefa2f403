"""A seeded CPU run is reproducible: two `unilab train` runs with the same seed and thread counts
log the same rewards, episode statistics and losses for their first iterations.

Episodes are shortened to 0.1 s (5 env steps) so episodes end, and their reward terms are logged,
from the first iterations; SAC updates start after 3 iterations, so the comparison covers the
random warm-up, the first gradient updates and the policy acting on their result.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from unilab.plots import read_scalars

UNILAB = str(Path(sys.executable).parent / "unilab")
ITERATIONS = 12
ARGS = [
    "training.num_envs=4",
    "algo.batch_size=32",
    "algo.num_updates=1",
    "algo.learning_starts=3",
    "algo.buffer_size_per_env=64",
    f"training.max_iterations={ITERATIONS}",
    "sim.nthread=1",
    "env.episode_length_s=0.1",
    "training.seed=7",
    "training.log_interval=1",
    f"training.checkpoint_interval={ITERATIONS}",
    "training.no_play=true",
]


def start(tmp_path: Path, name: str) -> subprocess.Popen:
    """`unilab train` with :data:`ARGS` logging under ``tmp_path / name``, started in a new process."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")  # same torch thread count
    cmd = [UNILAB, "train", "--algo", "sac", "--task", "g1_walk_flat", "--sim", "mujoco", *ARGS,
           f"training.log_dir={tmp_path / name}"]  # fmt: skip
    return subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def scalars(proc: subprocess.Popen, tmp_path: Path, name: str) -> dict:
    """The logged scalars of the run ``proc`` writes under ``tmp_path / name``, once it ends."""
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    (run_dir,) = list((tmp_path / name / "sac" / "g1_walk_flat").iterdir())
    return {
        tag: [(step, value) for step, _, value in points]
        for tag, points in read_scalars(run_dir).items()
        if not tag.startswith("Perf/")  # timings differ run to run
    }


def test_two_seeded_cpu_runs_log_identical_first_iterations(tmp_path):
    procs = {name: start(tmp_path, name) for name in ("a", "b")}  # side by side: independent processes
    try:
        first, second = (scalars(proc, tmp_path, name) for name, proc in procs.items())
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert first.keys() == second.keys()
    for tag in ("Train/mean_reward", "Episode_Reward/track_linear_velocity", "Loss/critic"):
        assert tag in first, sorted(first)
    assert len(first["Train/mean_reward"]) >= ITERATIONS - 5
    for tag in first:
        assert first[tag] == second[tag], tag  # exact: same floats at the same iterations
