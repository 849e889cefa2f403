"""Device resolution: the auto order and the no-silent-fallback rule."""

from __future__ import annotations

import logging

import pytest
import torch

from unilab_rl import device as device_mod
from unilab_rl.device import DeviceUnavailableError, resolve_device


@pytest.fixture
def no_accelerators(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend this machine has only a CPU, whatever it really has."""
    monkeypatch.setattr(device_mod, "_device_count", lambda t: 1 if t == "cpu" else 0)


def test_auto_falls_back_to_cpu_with_a_warning(no_accelerators, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="unilab_rl.device"):
        assert resolve_device("auto") == torch.device("cpu")
        assert resolve_device(None) == torch.device("cpu")
    assert "slow" in caplog.text


def test_auto_leaves_the_warning_to_the_caller_when_asked(no_accelerators, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="unilab_rl.device"):
        assert resolve_device("auto", warn=False) == torch.device("cpu")
    assert caplog.text == ""


def test_auto_prefers_cuda_then_xpu_then_mps(monkeypatch: pytest.MonkeyPatch) -> None:
    present = {"cpu", "xpu", "mps"}
    monkeypatch.setattr(device_mod, "_device_count", lambda t: 1 if t in present else 0)
    assert resolve_device("auto") == torch.device("xpu", 0)
    present.add("cuda")
    assert resolve_device("auto") == torch.device("cuda", 0)
    present -= {"cuda", "xpu"}
    assert resolve_device("auto") == torch.device("mps")


@pytest.mark.parametrize("name", ["cuda", "cuda:0", "xpu", "mps"])
def test_named_absent_device_is_an_error_naming_it(no_accelerators, name: str) -> None:
    with pytest.raises(DeviceUnavailableError) as info:
        resolve_device(name)
    assert name in str(info.value) and "cpu" in str(info.value)  # names it and lists what exists
    assert isinstance(info.value, ValueError)


def test_index_beyond_device_count_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_mod, "_device_count", lambda t: {"cpu": 1, "cuda": 2}.get(t, 0))
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    assert resolve_device("cuda") == torch.device("cuda", 0)
    with pytest.raises(DeviceUnavailableError, match="cuda:2"):
        resolve_device("cuda:2")


def test_unknown_device_name_is_an_error() -> None:
    with pytest.raises(DeviceUnavailableError, match="gpu0"):
        resolve_device("gpu0")


def test_cpu_is_always_available() -> None:
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
