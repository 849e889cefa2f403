"""Registers the built-in ``g1_motion_tracking`` task through the ``unilab`` entry-point group."""

from __future__ import annotations

from pathlib import Path

from unilab.hookspecs import hookimpl


def tracking_suite():
    """The tracking suite with g1_motion_tracking's keys: the clip from the chosen frame in its
    exact reference state, no observation noise, pushes or domain randomization, no time-out
    within a clip, and the failure terms at BeyondMimic's thresholds (anchor height 0.25 m, anchor
    orientation 0.8) with the end-effector term out of the way. Bar: 95 % of clips completed from
    frame 0, each with the relative body position kernel at 0.9 or more."""
    from unilab.eval.tracking import TrackingSuite

    return TrackingSuite(
        eval_overrides=(
            "env.observation_noise=false", "env.push.enabled=false", "env.domain_randomization.enabled=false",
            "env.reset_noise.enabled=false", "env.motion.sampling=start", "env.episode_length_s=3600",
            "env.terminations.anchor_pos_z_m=0.25", "env.terminations.anchor_ori=0.8",
            "env.terminations.ee_body_pos_z_m=1000",
        ),
        completion_bar=0.95,
        body_pos_kernel_bar=0.9,
    )  # fmt: skip


@hookimpl
def unilab_register_tasks(register):
    """Register ``g1_motion_tracking``: G1 whole-body motion tracking (BeyondMimic)."""
    from unilab.tasks.g1_motion_tracking.config import G1MotionTrackingConfig
    from unilab.tasks.g1_motion_tracking.env_cfg import make_env, motion_data_files
    from unilab.tasks.spec import TaskSpec

    register(
        "g1_motion_tracking",
        TaskSpec(
            config_cls=G1MotionTrackingConfig,
            make_env=make_env,
            owner_configs=Path(__file__).parent / "configs",
            description="Unitree G1 29-DoF tracks a reference motion clip (BeyondMimic)",
            eval_suites=(tracking_suite(),),
            data_files=motion_data_files,
        ),
    )
