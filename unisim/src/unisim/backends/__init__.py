"""Backends shipped with unisim.

``mujoco``: :class:`unisim.backends.mujoco.MujocoBackend`, MuJoCo CPU physics on mjbatch_uni
(host-bridge tensors). It is imported on first use, so that ``import unisim.backends`` needs
neither MuJoCo nor mjbatch_uni.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MujocoBackend"]


def __getattr__(name: str) -> Any:
    if name == "MujocoBackend":
        from unisim.backends.mujoco import MujocoBackend

        return MujocoBackend
    raise AttributeError(f"module 'unisim.backends' has no attribute {name!r}")
