"""The example robot plugin (examples/unilab-robot-g1-home), installed with pip like any other
distribution: discovered through its entry point, passing unilab's conformance check, and training
with robot.name set to its name.

pip installs it (the ``install_example`` fixture, conftest.py: no deps, no build isolation)
into a folder that is put on PYTHONPATH, an environment layer over the project's .venv that the
test throws away.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def example(install_example):
    return install_example("unilab-robot-g1-home")


def test_installed_example_is_listed_as_a_robot(example):
    result = example.run(str(BIN / "unilab"), "plugins")
    assert result.returncode == 0, result.stderr
    rows = result.stdout.splitlines()
    mine = next(ln for ln in rows if " g1_home " in ln)
    assert "robot" in mine and "unilab-robot-g1-home" in mine and "0.1.0" in mine, result.stdout
    assert any(" g1 " in ln and "robot" in ln for ln in rows), result.stdout  # the built-in one
    assert result.stderr == ""


def test_installed_example_passes_conformance_with_pytest(example, tmp_path):
    result = example.run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         str(example.source / "tests"), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout, result.stdout


def test_installed_example_trains_with_robot_name_set_to_its_name(example, tmp_path):
    result = example.run(
        str(BIN / "unilab"), "train", "--algo", "sac", "--task", "g1_walk_flat", "--preset", "laptop",
        "robot.name=g1_home",
        "training.num_envs=2", "training.max_iterations=3", "algo.batch_size=32",
        "algo.learning_starts=1", "algo.num_updates=1", "algo.buffer_size_per_env=64",
        "sim.nthread=1", "training.device=cpu", "training.log_interval=1", "training.no_play=true",
        "training.progress=false", f"training.log_dir={tmp_path / 'logs'}",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (run_dir,) = (tmp_path / "logs" / "sac" / "g1_walk_flat").iterdir()
    summary = json.loads((run_dir / "run_summary.json").read_text())
    assert summary["status"] == "normal_completion" and summary["iterations"] == 3
    config = json.loads((run_dir / "run_config.json").read_text())
    assert config["config"]["robot"]["name"] == "g1_home", config.keys()
    assert config["plugins"]["robot"] == {"name": "g1_home", "distribution": "unilab-robot-g1-home",
                                          "version": "0.1.0"}
