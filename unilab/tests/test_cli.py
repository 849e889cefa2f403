"""The `unilab` command: bad input gives one line, exit 2, no run directory. Usage errors and the
plugin listing run the installed console script in a new process, as a user runs it; the table of
bad settings runs the same entry point in this process (what it checks is what the command prints
and writes)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

UNILAB = str(Path(sys.executable).parent / "unilab")


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, UNILAB_STRICT_PLUGINS="1")
    return subprocess.run(
        [UNILAB, *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env
    )


BASE = ["train", "--algo", "sac", "--task", "g1_walk_flat", "--sim", "mujoco"]


@pytest.mark.parametrize(
    "args, expected",
    [
        (["train", "--algo", "sac", "--task", "g1_fly", "--sim", "mujoco"],
         ["--task", "unknown task 'g1_fly'", "g1_walk_flat"]),
        (["train", "--algo", "ppo2", "--task", "g1_walk_flat", "--sim", "mujoco"],
         ["--algo", "unknown algorithm 'ppo2'", "sac"]),
        (["train", "--algo", "sac", "--task", "g1_walk_flat", "--sim", "isaac"],
         ["--sim", "unknown backend 'isaac'", "mujoco"]),
        ([*BASE, "algo.max_iteration=5"],
         ["unknown key 'algo.max_iteration'", "did you mean 'training.max_iterations'"]),
        ([*BASE, "training.num_envs=abc"], ["training.num_envs", "'abc'", "integer"]),
        ([*BASE, "--preset", "huge"], ["unknown preset 'huge'", "laptop"]),
        ([*BASE, "training.num_envs=-3"], ["training.num_envs", "-3", "greater than or equal to 1"]),
        ([*BASE, "algo.device=cuda"], ["algo.device", "training.device"]),
        ([*BASE, "training.log_dir=/proc/nope"], ["training.log_dir", "cannot be created"]),
        ([*BASE, "algo.buffer_size_per_env=8", "algo.learning_starts=10"],
         ["algo.buffer_size_per_env=8", "algo.learning_starts=10", "never update"]),
        ([*BASE, "env.commands.lin_vel_x=[1.0,-0.5]"],
         ["invalid value for env.commands.lin_vel_x", "[1.0, -0.5]", "min <= max"]),
        ([*BASE, "runtime.mode=async", "runtime.num_collectors=2", "sim.cpu_ids=[0,1]"],
         ["sim.cpu_ids=[0, 1]", "runtime.num_collectors=2", "same cores"]),
        ([*BASE, "runtime.cuda_graph=maybe"], ["invalid value for runtime.cuda_graph: 'maybe'", "boolean", "'auto'"]),
        ([*BASE, "training.device=cpu", "runtime.cuda_graph=true"],
         ["runtime.cuda_graph=true needs a CUDA learner device, got training.device=cpu", "runtime.cuda_graph=auto"]),
        ([*BASE, "runtime.mode=async", "training.num_envs=6", "runtime.collector_shards=4"],
         ["training.num_envs=6 must be divisible by runtime.num_collectors * runtime.collector_shards", "= 1 * 4"]),
    ],
    ids=["task", "algo", "backend", "key", "type", "preset", "range", "device", "log_dir", "buffer",
         "command-range", "cpu-ids-collectors", "cuda-graph-value", "cuda-graph-cpu", "shards"],
)
def test_bad_input_is_one_clear_line(tmp_path, args, expected, unilab_in_process):
    result = unilab_in_process(*args, cwd=tmp_path, env={"UNILAB_STRICT_PLUGINS": "1"})
    assert result.returncode == 2, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    for text in expected:
        assert text in lines[0]
    assert "Traceback" not in result.stderr + result.stdout
    assert list(tmp_path.iterdir()) == [], "bad input must not write a run directory"


@pytest.mark.parametrize("command", ["train", "config"])
def test_a_setting_written_as_an_option_gets_the_override_hint(tmp_path, command):
    result = run_cli(command, *BASE[1:], "--num_envs", "8", cwd=tmp_path)
    line = one_line(result)
    assert "No such option: --num_envs" in line and "write num_envs=VALUE" in line
    assert "unilab config --algo A --task T" in line and f"`unilab {command} --help`" in line
    # A misspelt option keeps click's own suggestion instead.
    line = one_line(run_cli(command, *BASE[1:], "--alg", "sac", cwd=tmp_path))
    assert "Possible options: --algo" in line and "key=value" not in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args, expected",
    [
        (["eval"], "Missing argument 'RUN'"),
        (["eval", "latest", "--num-envs", "abc"], "Invalid value for '--num-envs'"),
        (["train", "--task", "g1_walk_flat"], "Missing option '--algo'"),
        (["motion", "import", "clip.csv"], "Missing option '--out'"),
        (["evall"], "No such command 'evall'. Did you mean 'eval'?"),
    ],
)  # fmt: skip
def test_a_usage_error_is_one_error_line_naming_the_commands_help(tmp_path, args, expected):
    line = one_line(run_cli(*args, cwd=tmp_path))
    assert expected in line and "--help`" in line


def test_a_group_without_a_command_still_prints_its_help(tmp_path):
    result = run_cli("motion", cwd=tmp_path)
    assert "Usage: unilab motion" in result.stdout and "error:" not in result.stderr


def one_line(result) -> str:
    """The single ``error:`` line of a usage error (exit code 2, no usage block, no box)."""
    assert result.returncode == 2, result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    return lines[0]


def test_plugins_lists_builtins_with_distribution(tmp_path):
    result = run_cli("plugins", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for kind, name, dist in [
        ("backend", "mujoco", "unisim"),
        ("algorithm", "sac", "unilab-rl"),
        ("task", "g1_walk_flat", "unilab"),
        ("robot", "g1", "unilab"),
    ]:
        row = next((ln for ln in out.splitlines() if f" {name} " in ln), "")
        assert kind in row and dist in row and "0.1.0" in row, out
