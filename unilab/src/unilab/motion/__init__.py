"""Motion clips for tracking tasks: the npz format, forward kinematics and the LAFAN1 CSV importer."""

from unilab.motion.clip import (
    LIMIT_TOLERANCE_RAD,
    REQUIRED_KEYS,
    MotionClip,
    MotionFormatError,
    joint_limit_violations,
    load_motion,
    validate_motion,
)
from unilab.motion.kinematics import fk_motion, qvel_from_qpos, resample_qpos
from unilab.motion.lafan import CSV_FPS, import_lafan_csv, read_lafan_csv, write_lafan_csv

__all__ = [
    "CSV_FPS",
    "LIMIT_TOLERANCE_RAD",
    "REQUIRED_KEYS",
    "MotionClip",
    "MotionFormatError",
    "fk_motion",
    "import_lafan_csv",
    "joint_limit_violations",
    "load_motion",
    "qvel_from_qpos",
    "read_lafan_csv",
    "resample_qpos",
    "validate_motion",
    "write_lafan_csv",
]
