"""Pick the learner device: cuda, then xpu, then mps, then cpu.

The order is fixed and nothing falls back silently: a device the user names but the machine lacks
is an error.
"""

from __future__ import annotations

import logging

import torch

logger = logging.getLogger(__name__)

_AUTO_ORDER = ("cuda", "xpu", "mps")


class DeviceUnavailableError(ValueError):
    """A device was named that this machine (or this torch build) does not have."""


def _device_count(device_type: str) -> int:
    """Number of devices of ``device_type`` that torch can use here (0 when absent)."""
    if device_type == "cpu":
        return 1
    if device_type == "cuda":
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    if device_type == "xpu":
        xpu = getattr(torch, "xpu", None)
        return xpu.device_count() if xpu is not None and xpu.is_available() else 0
    if device_type == "mps":
        mps = getattr(torch.backends, "mps", None)
        return 1 if mps is not None and mps.is_available() else 0
    return 0


def available_devices() -> list[str]:
    """Names of the learner devices usable here, best first, e.g. ``["cuda:0", "cuda:1", "cpu"]``."""
    names: list[str] = []
    for device_type in _AUTO_ORDER:
        count = _device_count(device_type)
        if device_type == "mps":
            names += ["mps"] if count else []
        else:
            names += [f"{device_type}:{i}" for i in range(count)]
    return names + ["cpu"]


def warn_cpu_learner() -> None:
    """Log the warning that ``"auto"`` found no accelerator and the learner runs on the CPU."""
    logger.warning(
        "No accelerator (cuda, xpu, mps) found: the learner runs on the CPU, so learning will "
        "be slow. Name a device (training.device=cpu on the unilab command line) to silence this warning."
    )


def is_auto(name: str | torch.device | None) -> bool:
    """Whether ``name`` asks :func:`resolve_device` to pick the device (``"auto"`` or None)."""
    return name is None or (isinstance(name, str) and name.strip().lower() == "auto")


def resolve_device(name: str | torch.device | None = "auto", *, warn: bool = True) -> torch.device:
    """Turn a device name into a usable :class:`torch.device`.

    Args:
        name: ``"auto"`` or ``None`` picks the first available of cuda, xpu, mps, cpu (cpu logs a
            warning that learning will be slow). Anything else (``"cuda"``, ``"cuda:1"``,
            ``"mps"``, ``"cpu"``, a ``torch.device``) is used as named.
        warn: log the CPU warning (:func:`warn_cpu_learner`) when ``"auto"`` lands on the CPU;
            False leaves it to the caller (e.g. after the rest of the input is checked).

    Returns:
        The device. A named accelerator without an index gets index 0 (``"cuda"`` -> ``cuda:0``).

    Raises:
        DeviceUnavailableError: the named device is not a device torch knows, or this machine
            lacks it (message lists the available ones). Never falls back silently.
    """
    if is_auto(name):
        for device_type in _AUTO_ORDER:
            if _device_count(device_type) > 0:
                return torch.device(device_type, 0) if device_type != "mps" else torch.device("mps")
        if warn:
            warn_cpu_learner()
        return torch.device("cpu")

    try:
        device = torch.device(name)
    except (RuntimeError, TypeError) as err:
        raise DeviceUnavailableError(
            f"Unknown device {name!r}; available here: {', '.join(available_devices())}"
        ) from err

    count = _device_count(device.type)
    index = device.index if device.index is not None else 0
    if count == 0 or index >= count:
        raise DeviceUnavailableError(
            f"Device {str(name)!r} is not available on this machine; available here: "
            f"{', '.join(available_devices())}"
        )
    if device.type in ("cuda", "xpu"):
        return torch.device(device.type, index)
    return device


__all__ = ["DeviceUnavailableError", "available_devices", "is_auto", "resolve_device", "warn_cpu_learner"]
