"""Registers the built-in ``g1_walk_flat`` task through the ``unilab`` entry-point group."""

from __future__ import annotations

from pathlib import Path

from unilab.hookspecs import hookimpl


def walking_suite():
    """The walking suite with g1_walk_flat's keys: evaluation settings (no observation noise, no
    pushes, no domain randomization, no start offset, no time-out within a case) and the keys that
    turn each robustness case on."""
    from unilab.eval.walking import WalkingSuite

    return WalkingSuite(
        eval_overrides=(
            "env.observation_noise=false", "env.push.enabled=false", "env.domain_randomization.enabled=false",
            "env.reset_xy_m=0.0", "env.reset_yaw_rad=0.0", "env.episode_length_s=3600",
        ),
        push_overrides=("env.push.enabled=true",),
        noise_overrides=("env.observation_noise=true",),
        dr_overrides=("env.domain_randomization.enabled=true",),
    )  # fmt: skip


@hookimpl
def unilab_register_tasks(register):
    """Register ``g1_walk_flat``: G1 velocity tracking on flat ground."""
    from unilab.tasks.g1_walk_flat.config import G1WalkFlatConfig
    from unilab.tasks.g1_walk_flat.env_cfg import make_env
    from unilab.tasks.spec import CurriculumState, TaskSpec

    register(
        "g1_walk_flat",
        TaskSpec(
            config_cls=G1WalkFlatConfig,
            make_env=make_env,
            owner_configs=Path(__file__).parent / "configs",
            description="Unitree G1 29-DoF tracks base velocity commands on flat ground",
            eval_suites=(walking_suite(),),
            curricula=(
                CurriculumState(
                    log_key="Curriculum/penalty_scale", start_key="env.penalty_curriculum.start",
                    initial_key="env.penalty_curriculum.initial", enabled_key="env.penalty_curriculum.enabled",
                    name="penalty curriculum",
                ),
                *(
                    CurriculumState(
                        log_key=f"Curriculum/command_{axis}_level",
                        start_key=f"env.commands.curriculum.start_{axis}_level",
                        initial_key="env.commands.curriculum.initial_fraction",
                        enabled_key="env.commands.curriculum.enabled", name=f"command curriculum ({name})",
                    )
                    for axis, name in (("lin", "linear"), ("ang", "angular"))
                ),
            ),
        ),
    )
