"""SIGINT/SIGTERM during training: held until a safe point, a second signal stops at once."""

import signal

import pytest

from unilab.train import TrainingInterrupted, _Interrupts


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
    with interrupts.installed():
        signal.raise_signal(signal.SIGTERM)  # held: no safe point yet
        with pytest.raises(TrainingInterrupted) as info:
            signal.raise_signal(signal.SIGINT)
    assert info.value.signum == signal.SIGTERM  # the first signal decides the status


def test_signals_while_closing_are_ignored():
    interrupts = _Interrupts()
    with interrupts.installed():
        interrupts.closing = True
        signal.raise_signal(signal.SIGINT)
        with interrupts.deferred():
            pass
    assert interrupts.pending is None and not interrupts.raised
