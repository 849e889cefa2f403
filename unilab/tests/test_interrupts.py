"""SIGINT/SIGTERM during training: held until a safe point, a second signal stops at once."""

import signal
import subprocess
import sys

import pytest

from unilab.interrupts import Interrupts as _Interrupts
from unilab.interrupts import TrainingInterrupted


def test_first_signal_waits_for_the_end_of_the_iteration():
    interrupts = _Interrupts()
    reached_end_of_block = False
    with interrupts.installed():
        with pytest.raises(TrainingInterrupted) as info:
            with interrupts.deferred():
                signal.raise_signal(signal.SIGINT)  # handler runs here, must not raise yet
                reached_end_of_block = True
    assert reached_end_of_block
    assert info.value.signum == signal.SIGINT


def test_a_second_signal_outside_a_write_raises_at_once():
    interrupts = _Interrupts()
    interrupts.duplicate_window_s = 0.0
    with interrupts.installed():
        signal.raise_signal(signal.SIGTERM)  # held: no safe point yet
        with pytest.raises(TrainingInterrupted) as info:
            signal.raise_signal(signal.SIGINT)
    assert info.value.signum == signal.SIGTERM  # the first signal decides the status


def test_the_group_copy_of_the_first_signal_does_not_stop_at_once():
    interrupts = _Interrupts()  # timeout and Ctrl-C signal the process and then its group
    with interrupts.installed():
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)  # within duplicate_window_s: the same request
        assert not interrupts.raised
        with pytest.raises(TrainingInterrupted):
            with interrupts.deferred():
                pass


def test_signals_while_closing_are_ignored():
    interrupts = _Interrupts()
    with interrupts.installed():
        interrupts.closing = True
        signal.raise_signal(signal.SIGINT)
        with interrupts.deferred():
            pass
    assert interrupts.pending is None and not interrupts.raised


# A child process: our handlers, then native code taking SIGINT over the way LLVM inside Triton
# does on each in-process compile (the same C handler, now with SA_RESETHAND | SA_NODEFER: the
# disposition is SIG_DFL while it runs), then one iteration's bookkeeping, then SIGINT twice in a
# row as GNU timeout sends it (to the process, then to its group).
_TAKEOVER_CHILD = r"""
import ctypes, os, signal, sys
from unilab.interrupts import Interrupts as _Interrupts
from unilab.interrupts import TrainingInterrupted

class Sigaction(ctypes.Structure):  # glibc's struct sigaction
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_ulong * 16),
                ("flags", ctypes.c_int), ("restorer", ctypes.c_void_p)]

libc = ctypes.CDLL(None, use_errno=True)
interrupts = _Interrupts()
with interrupts.installed():
    action = Sigaction()
    assert libc.sigaction(signal.SIGINT, None, ctypes.byref(action)) == 0
    action.flags |= 0x80000000 | 0x40000000  # SA_RESETHAND | SA_NODEFER
    assert libc.sigaction(signal.SIGINT, ctypes.byref(action), None) == 0
    with interrupts.deferred():
        pass
    try:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs between bytecodes
            pass
        with interrupts.deferred():  # the next iteration's safe point
            pass
    except TrainingInterrupted as exc:
        print("stopped by", exc)
        sys.exit(0)
print("not stopped")
sys.exit(1)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's struct sigaction")
def test_handlers_taken_over_by_native_code_are_installed_again():
    """Without the re-install at each deferred block the second SIGINT hits SIG_DFL: the process
    dies of SIGINT (returncode -2), printing nothing, as three GPU runs did under `timeout -s INT`."""
    proc = subprocess.run([sys.executable, "-c", _TAKEOVER_CHILD], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    assert "stopped by SIGINT" in proc.stdout


@pytest.mark.parametrize("compile_kind", ["python", "sleep"])
def test_a_held_signal_stops_a_long_compile_within_the_grace_period(compile_kind):
    """No safe point comes (a first torch.compile can take minutes): the watchdog delivers the
    signal again after grace_s and the handler raises where the main thread is."""
    import os
    import threading
    import time

    interrupts = _Interrupts()
    with interrupts.installed():
        threading.Timer(0.2, os.kill, args=(os.getpid(), signal.SIGINT)).start()
        t0 = time.monotonic()
        with pytest.raises(TrainingInterrupted) as info:
            if compile_kind == "python":  # compiling: Python code that runs for a minute
                while time.monotonic() - t0 < 60:
                    sum(range(1000))
            else:  # waiting for a compile worker
                time.sleep(60)
        elapsed = time.monotonic() - t0
    assert info.value.signum == signal.SIGINT
    assert 0.2 + interrupts.grace_s - 0.1 < elapsed < 0.2 + interrupts.grace_s + 1.0


def test_the_watchdog_leaves_a_write_to_finish_and_its_end_raises():
    import os
    import time

    interrupts = _Interrupts()
    interrupts.grace_s = 0.2
    with interrupts.installed():
        with pytest.raises(TrainingInterrupted):
            with interrupts.deferred():  # a checkpoint being written, slower than grace_s
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.6)
                finished_write = True
    assert finished_write


# `unilab train` in a child process whose learner's first update blocks for two minutes, as a
# first torch.compile can: SIGINT must end the run within a few seconds, saved and "interrupted".
_BLOCKING_COMPILE_CHILD = r"""
import sys, time
from pathlib import Path
from unilab.cli import app
from unilab_rl.algorithms.sac.agent import SAC

marker = Path(sys.argv[1])

def update(self):
    marker.write_text("compiling")
    t0 = time.monotonic()
    while time.monotonic() - t0 < 120:
        sum(range(1000))
    raise AssertionError("not interrupted")

SAC.update = update
app(sys.argv[2:], prog_name="unilab")
"""


def test_ctrl_c_during_a_long_first_compile_stops_within_seconds(tmp_path):
    import json
    import os
    import time

    import torch

    marker = tmp_path / "compiling"
    args = ["train", "--algo", "sac", "--task", "g1_walk_flat", "runtime.mode=sync", "training.num_envs=4",
            "algo.batch_size=16", "algo.learning_starts=2", "algo.buffer_size_per_env=16", "sim.nthread=1",
            "training.no_play=true", "training.max_iterations=10", f"training.log_dir={tmp_path / 'logs'}"]
    proc = subprocess.Popen([sys.executable, "-c", _BLOCKING_COMPILE_CHILD, str(marker), *args], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert marker.exists(), proc.communicate(timeout=10)
        summary_path = next((tmp_path / "logs").glob("sac/g1_walk_flat/*/run_summary.json"))
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        while json.loads(summary_path.read_text())["status"] == "running" and time.monotonic() - t0 < 60:
            time.sleep(0.05)
        stopped = time.monotonic() - t0  # the learner stopped, the checkpoint and summary written
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, stderr
    assert stopped < 4.0, (stopped, stderr)  # about 2 s; margin for a loaded 2-core machine
    summary = json.loads(summary_path.read_text())
    assert summary["status"] == "interrupted" and summary["iterations"] == 1  # the first update never ended
    assert torch.load(summary_path.parent / "model_last.pt", weights_only=True)["iteration"] == 1
