"""Registers the built-in ``g1_motion_tracking`` task through the ``unilab`` entry-point group."""

from __future__ import annotations

from pathlib import Path

from unilab.hookspecs import hookimpl


@hookimpl
def unilab_register_tasks(register):
    """Register ``g1_motion_tracking``: G1 whole-body motion tracking (BeyondMimic)."""
    from unilab.tasks.g1_motion_tracking.config import G1MotionTrackingConfig
    from unilab.tasks.g1_motion_tracking.env_cfg import make_env
    from unilab.tasks.spec import TaskSpec

    register(
        "g1_motion_tracking",
        TaskSpec(
            config_cls=G1MotionTrackingConfig,
            make_env=make_env,
            owner_configs=Path(__file__).parent / "configs",
            description="Unitree G1 29-DoF tracks a reference motion clip (BeyondMimic)",
        ),
    )
