"""The example third-party backend (examples/unisim-mjstep), installed with pip like any other
distribution: discovered through its entry point, conforming, and training with --sim mjstep.

pip installs it (the ``install_example`` fixture, conftest.py: no deps, no build isolation)
into a folder that is put on PYTHONPATH, an environment layer over the project's .venv that the
test throws away.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def example(install_example):
    return install_example("unisim-mjstep")


def test_installed_example_is_discovered_through_its_entry_point(example):
    assert list(example.site.glob("unisim_mjstep-0.1.0.dist-info"))
    result = example.run(str(BIN / "unilab"), "plugins")
    assert result.returncode == 0, result.stderr
    row = next(ln for ln in result.stdout.splitlines() if " mjstep " in ln)
    assert "backend" in row and "unisim-mjstep" in row and "0.1.0" in row, result.stdout
    assert result.stderr == ""


def test_installed_example_passes_conformance_with_pytest(example, tmp_path):
    result = example.run(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         str(example.source / "tests"), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    summary = result.stdout.strip().splitlines()[-1]
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|error|errors)", summary)}
    assert counts.get("passed", 0) >= 10 and set(counts) == {"passed"}, summary  # the conformance checks ran


def test_installed_example_trains_with_sim_set_to_its_name(example, tmp_path):
    result = example.run(
        str(BIN / "unilab"), "train", "--algo", "sac", "--task", "g1_walk_flat",
        "--sim", "mjstep",
        "training.num_envs=2", "training.max_iterations=3", "algo.batch_size=32",
        "algo.learning_starts=1", "algo.num_updates=1", "algo.buffer_size_per_env=64",
        "env.domain_randomization.enabled=false",  # mjstep does not declare randomization
        "training.log_interval=1", "training.no_play=true",
        f"training.log_dir={tmp_path / 'logs'}",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (run_dir,) = (tmp_path / "logs" / "sac" / "g1_walk_flat").iterdir()
    assert run_dir.name.endswith("_mjstep")
    summary = json.loads((run_dir / "run_summary.json").read_text())
    assert summary["status"] == "normal_completion" and summary["iterations"] == 3
    config = json.loads((run_dir / "run_config.json").read_text())
    assert config["plugins"]["sim"] == {"name": "mjstep", "distribution": "unisim-mjstep",
                                        "version": "0.1.0"}
    packages = config["workspace"]["packages"]
    assert set(packages) == {"mjbatch_uni", "unisim", "unilab_rl", "unilab"}
    assert all("dirty" in p and "pinned_commit" in p for p in packages.values())
