"""Learning-curve PNG from a run's TensorBoard scalars, and the training hook that never fails."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from unilab.plots import DEFAULT_PANELS, FILENAME, default_panels, read_scalars, write_learning_curve
from unilab.run_hooks import write_plot as _write_plot


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.fixture
def run_dir(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(tmp_path))
    for it in range(10, 110, 10):
        writer.add_scalar("Train/mean_episode_length", 5.0 * it, it)
        writer.add_scalar("Train/mean_reward", 0.5 * it, it)
        if it % 20 == 0:  # env episode logs appear only on some logged iterations
            writer.add_scalar("Episode_Reward/track_linear_velocity", it / 100.0, it)
    writer.close()
    (tmp_path / "run_summary.json").write_text(json.dumps({"num_envs": 64}))
    return tmp_path


def test_read_scalars_returns_every_point_in_step_order(run_dir):
    scalars = read_scalars(run_dir)
    steps = [s for s, _, _ in scalars["Train/mean_reward"]]
    assert steps == list(range(10, 110, 10))
    assert [v for _, _, v in scalars["Train/mean_episode_length"]] == [5.0 * s for s in steps]
    assert len(scalars["Episode_Reward/track_linear_velocity"]) == 5
    assert all(w > 1e9 for _, w, _ in scalars["Train/mean_reward"])  # epoch seconds


def test_write_learning_curve_writes_a_png_into_the_run_directory(run_dir):
    path = write_learning_curve(run_dir, targets={"Train/mean_episode_length": 900.0})
    assert path == run_dir / FILENAME
    width, height = png_size(path)
    assert width > 1000 and height > 500
    assert not list(run_dir.glob("*.tmp"))


def test_missing_tags_and_empty_runs_still_plot(tmp_path):
    path = write_learning_curve(tmp_path)  # no events at all: every panel says "no data"
    assert png_size(path)[0] > 0


def test_plot_failure_is_reported_not_raised(tmp_path):
    assert _write_plot(tmp_path / "missing", 4).startswith("failed: FileNotFoundError")
    assert _write_plot(tmp_path, 4) == FILENAME


def test_default_panels_show_the_task_headline_term(run_dir, tmp_path_factory):
    walk = [tag for tag, _ in default_panels(read_scalars(run_dir))]
    assert walk[-1] == "Episode_Reward/track_linear_velocity"

    from torch.utils.tensorboard import SummaryWriter

    motion_dir = tmp_path_factory.mktemp("motion")
    writer = SummaryWriter(log_dir=str(motion_dir))
    for it in (10, 20):
        writer.add_scalar("Train/mean_episode_length", 5.0 * it, it)
        writer.add_scalar("Episode_Reward/motion_body_pos", it / 100.0, it)
    writer.close()
    motion = [tag for tag, _ in default_panels(read_scalars(motion_dir))]
    assert motion == ["Train/mean_episode_length", "Train/mean_reward", "Episode_Reward/motion_body_pos"]
    assert default_panels([]) == DEFAULT_PANELS  # nothing logged: the walking panels, "no data"
    assert png_size(write_learning_curve(motion_dir))[0] > 1000


def test_an_eval_panel_follows_when_the_run_logged_evaluations():
    from unilab.plots import EVAL_PANEL

    walk = ["Train/mean_episode_length", "Episode_Reward/track_linear_velocity"]
    assert EVAL_PANEL not in default_panels(walk)
    panels = default_panels([*walk, "Eval/headline", "Eval/stand/passed"])
    assert panels[-1] == EVAL_PANEL and panels[:-1] == DEFAULT_PANELS
