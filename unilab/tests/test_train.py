"""`unilab train` end to end on a handful of envs: run directory, summary schema, checkpoints,
TensorBoard, and clean shutdown on SIGINT/SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

UNILAB = str(Path(sys.executable).parent / "unilab")
SMALL = [
    "runtime.mode=sync",  # this file tests the in-process loop; test_train_async*.py the collector
    "training.num_envs=4",
    "algo.batch_size=64",
    "algo.num_updates=1",
    "algo.learning_starts=2",
    "algo.buffer_size_per_env=64",
    "sim.nthread=1",
    "training.log_interval=1",
    "training.no_play=true",  # play + export after training are covered by test_play/test_export
]


def train(tmp_path: Path, *extra: str, timeout: float = 240) -> subprocess.CompletedProcess:
    cmd = [UNILAB, "train", "--algo", "sac", "--task", "g1_walk_flat", "--sim", "mujoco", *SMALL,
           f"training.log_dir={tmp_path / 'logs'}", *extra]
    return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=timeout)


def only_run_dir(tmp_path: Path) -> Path:
    runs = list((tmp_path / "logs" / "sac" / "g1_walk_flat").iterdir())
    assert len(runs) == 1
    assert runs[0].name.endswith("_mujoco")
    return runs[0]


def test_short_training_run_writes_a_complete_run_directory(tmp_path):
    # no evaluation of the final policy: test_a_completed_run_evaluates_its_final_policy checks it
    result = train(tmp_path, "training.max_iterations=6", "training.checkpoint_interval=3", "training.eval_interval=0")
    assert result.returncode == 0, result.stderr
    run = only_run_dir(tmp_path)
    summary = json.loads((run / "run_summary.json").read_text())
    assert summary["status"] == "normal_completion"
    assert summary["iterations"] == 6
    assert summary["env_steps"] == 24
    assert summary["env_steps_per_s"] > 0
    assert summary["learner_device"] == "cpu" and summary["env_device"] == "cpu"
    assert summary["metric_schema_version"] == 1
    for key in ("final_mean_reward", "best_mean_reward", "mean_episode_length"):
        assert key in summary
    assert isinstance(summary["episode_rewards"], dict)
    config = json.loads((run / "run_config.json").read_text())
    assert config["config"]["training"]["num_envs"] == 4
    assert config["plugins"]["sim"]["distribution"] == "unisim"
    assert (run / "model_3.pt").exists() and (run / "model_6.pt").exists()
    ckpt = torch.load(run / "model_last.pt", weights_only=False)
    assert ckpt["iteration"] == 6
    assert list(run.glob("events.out.tfevents.*"))
    # stdout is a pipe here: plain progress lines, the first and the last iteration at least.
    lines = [ln for ln in result.stdout.splitlines() if ln.startswith("train ")]
    assert lines[0].startswith("train 1/6 (16%): ") and lines[-1].startswith("train 6/6 (100%): ")
    assert "env steps/s, mean reward " in lines[-1] and "mean episode length " in lines[-1]


def test_a_completed_run_evaluates_its_final_policy(finished_walk_run, tmp_path):
    """With evaluation during training on (the owner settings' training.eval_interval=250), a run
    that completes evaluates its final policy with the task's suite in a background process, even
    before the first interval: run_summary.json and TensorBoard record that evaluation, and the
    snapshot is kept as policy_best.onnx."""
    from unilab.plots import read_scalars

    run = finished_walk_run(tmp_path)  # 2 iterations
    summary = json.loads((run / "run_summary.json").read_text())
    assert summary["status"] == "normal_completion"
    during = summary["eval_during_training"]
    assert during["interval"] == 250 and during["error"] is None and during["evals"] == 1
    (entry,) = during["history"]
    assert entry["iteration"] == 2 and entry["env_steps"] == 4
    last = during["last"]
    assert last["suite"] == "walking" and last["policy"]["kind"] == "training" and last["policy"]["iteration"] == 2
    assert last["policy"]["actor"] == "the actor's moving average, algo.actor_ema=0.005"  # what is deployed
    assert len(last["cases"]) == 15 and last["headline"] == entry["headline"]
    assert [(step, value) for step, _, value in read_scalars(run)["Eval/headline"]] == [(2, entry["headline"])]
    # the one evaluated snapshot is the best so far: exported as policy_best.onnx
    assert during["best"] == {"file": "policy_best.onnx", "suite": "walking", "iteration": 2,
                              "headline": entry["headline"], "passed": entry["passed"]}
    assert during["best_error"] is None and (run / "policy_best.onnx").is_file()


def test_progress_lines_when_stdout_is_not_a_terminal():
    import io

    from unilab.progress import LineProgress as _LineProgress
    from unilab.progress import make_progress as _progress

    assert _progress(False, 10) is None
    assert isinstance(_progress(None, 10), _LineProgress)  # pytest captures stdout: not a tty
    out = io.StringIO()
    progress = _LineProgress(total=50, num_envs=4, every_s=3600.0, stream=out)
    for i in range(1, 51):
        stats = {"final_mean_reward": 0.5 * i, "mean_episode_length": 10.0} if i > 20 else {}
        progress.update(i, {}, stats)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2  # the first iteration, then nothing for an hour, then the last
    assert lines[0].startswith("train 1/50 (2%): ") and "mean reward -, mean episode length -" in lines[0]
    assert lines[1].startswith("train 50/50 (100%): ")
    assert "mean reward 25.000, mean episode length 10.0" in lines[1]
    out = io.StringIO()
    progress = _LineProgress(total=50, num_envs=4, every_s=0.0, stream=out)
    for i in range(1, 6):
        progress.update(i, {}, {})
    assert len(out.getvalue().splitlines()) == 5  # every update once the interval has passed


def test_progress_lines_of_a_resumed_run_count_from_its_start(monkeypatch):
    import io

    from unilab import progress as progress_mod

    now = [100.0]
    monkeypatch.setattr(progress_mod.time, "monotonic", lambda: now[0])
    out = io.StringIO()
    progress = progress_mod.LineProgress(total=320, num_envs=32, every_s=3600.0, stream=out, start=300)
    for i in range(301, 321):
        now[0] = 100.5 if i == 301 else 110.5 if i == 320 else 105.0  # the first line at 0.5 s, the last at 10.5 s
        progress.update(i, {}, {})
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].startswith("train 301/320 ")
    # 20 iterations of 32 envs in the 10 s since the first line, not 320 iterations' worth
    assert lines[1].startswith("train 320/320 (100%): 61 env steps/s")


@pytest.mark.parametrize("sig, status, code", [(signal.SIGINT, "interrupted", 130),
                                               (signal.SIGTERM, "terminated", 143)])
def test_signal_stops_with_checkpoint_and_no_child_left(tmp_path, sig, status, code):
    cmd = [UNILAB, "train", "--algo", "sac", "--task", "g1_walk_flat", "--sim", "mujoco", *SMALL,
           f"training.log_dir={tmp_path / 'logs'}", "training.max_iterations=100000"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        summary_path = None
        while time.monotonic() < deadline:
            found = list((tmp_path / "logs").rglob("run_summary.json"))
            if found:
                summary_path = found[0]
                # wait until some iterations have run
                if list(found[0].parent.glob("events.out.tfevents.*")):
                    time.sleep(3.0)
                    break
            time.sleep(0.2)
        assert summary_path is not None, "training never started"
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == code, stderr
    summary = json.loads(summary_path.read_text())
    assert summary["status"] == status
    ckpt = torch.load(summary_path.parent / "model_last.pt", weights_only=False)
    assert ckpt["iteration"] == summary["iterations"]
    # No process of the run's session is left.
    leftover = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True)
    assert leftover.stdout.strip() == ""
