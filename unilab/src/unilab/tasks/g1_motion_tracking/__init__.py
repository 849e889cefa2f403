"""g1_motion_tracking: the Unitree G1 tracks a reference whole-body motion (BeyondMimic)."""

from unilab.tasks.g1_motion_tracking.config import G1MotionTrackingConfig
from unilab.tasks.g1_motion_tracking.env_cfg import DEFAULT_MOTION, make_env, make_env_cfg

__all__ = ["DEFAULT_MOTION", "G1MotionTrackingConfig", "make_env", "make_env_cfg"]
