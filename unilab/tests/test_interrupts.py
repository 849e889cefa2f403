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
