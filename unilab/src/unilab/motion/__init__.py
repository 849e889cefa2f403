"""Motion clips for tracking tasks: the npz format, forward kinematics, importers, inspection, the
motion library (several clips) and recording a walking policy.

Names are loaded on first use (PEP 562), so ``unilab --help`` and the CLI's other commands do not
import MuJoCo through this package.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "LIMIT_TOLERANCE_RAD": "clip",
    "REQUIRED_KEYS": "clip",
    "MotionClip": "clip",
    "MotionFormatError": "clip",
    "joint_limit_violations": "clip",
    "load_motion": "clip",
    "validate_motion": "clip",
    "fk_motion": "kinematics",
    "foot_floor_depth": "kinematics",
    "lift_clip_feet": "kinematics",
    "lift_feet": "kinematics",
    "qvel_from_qpos": "kinematics",
    "resample_qpos": "kinematics",
    "CSV_FPS": "lafan",
    "import_lafan_csv": "lafan",
    "read_lafan_csv": "lafan",
    "write_lafan_csv": "lafan",
    "ImportResult": "importers",
    "detect_layout": "importers",
    "import_motion": "importers",
    "InspectReport": "inspect",
    "inspect_motion": "inspect",
    "ClipInfo": "library",
    "MotionLibrary": "library",
    "load_motion_library": "library",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'unilab.motion' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"unilab.motion.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
