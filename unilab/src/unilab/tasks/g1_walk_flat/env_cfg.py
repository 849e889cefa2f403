"""Builds the g1_walk_flat env: terms in mjlab's velocity-task style on our G1 model."""

from __future__ import annotations

import math
from pathlib import Path

import torch

from unilab.envs import mdp
from unilab.envs.manager_based_rl_env import EnvCfg, ManagerBasedRlEnv
from unilab.envs.managers import EventTerm, ObsTerm, RewardTerm, TerminationTerm
from unilab.robots import g1
from unilab.tasks.g1_walk_flat.config import G1WalkFlatConfig


def make_env_cfg(cfg: G1WalkFlatConfig, robot_mjcf: str | None = None) -> EnvCfg:
    """The EnvCfg of g1_walk_flat from its settings.

    Args:
        cfg: task settings.
        robot_mjcf: path of a user G1 MJCF, or None for the G1 described in this project.
    """
    if robot_mjcf and not Path(robot_mjcf).is_file():
        raise FileNotFoundError(f"robot.mjcf: no such file {robot_mjcf!r}")
    mjcf = g1.g1_scene_xml(mjcf=robot_mjcf)
    joint_names = tuple(g1.G1_JOINT_NAMES)
    scale = torch.tensor([g1.ACTION_SCALE[j] for j in joint_names], dtype=torch.float32)

    ##
    # Observations: actor (noisy, 99) and critic (noise-free) groups.
    ##
    def group(noisy: bool) -> dict[str, ObsTerm]:
        n = (lambda x: x) if noisy else (lambda x: None)
        return {
            "base_lin_vel": ObsTerm(mdp.base_lin_vel, noise=n(0.5)),
            "base_ang_vel": ObsTerm(mdp.base_ang_vel, noise=n(0.2)),
            "projected_gravity": ObsTerm(mdp.projected_gravity, noise=n(0.05)),
            "joint_pos": ObsTerm(mdp.joint_pos_rel, noise=n(0.01)),
            "joint_vel": ObsTerm(mdp.joint_vel, noise=n(1.5)),
            "actions": ObsTerm(mdp.last_action),
            "command": ObsTerm(mdp.generated_command, params={"name": "twist"}),
        }

    ##
    # Rewards (weights from the task config).
    ##
    w = cfg.rewards
    rewards = {
        "track_linear_velocity": RewardTerm(
            mdp.track_linear_velocity, w.track_linear_velocity, {"std": 0.5}
        ),
        "track_angular_velocity": RewardTerm(
            mdp.track_angular_velocity, w.track_angular_velocity, {"std": math.sqrt(0.5)}
        ),
        "upright": RewardTerm(mdp.upright, w.upright, {"std": math.sqrt(0.2), "body": g1.TORSO_BODY}),
        "action_rate_l2": RewardTerm(mdp.action_rate_l2, w.action_rate_l2),
        "joint_pos_limits": RewardTerm(
            mdp.joint_pos_limits, w.joint_pos_limits, {"soft_factor": g1.SOFT_JOINT_POS_LIMIT_FACTOR}
        ),
    }

    terminations = {
        "time_out": TerminationTerm(mdp.time_out, time_out=True),
        "fell_over": TerminationTerm(
            mdp.bad_orientation, params={"limit_angle": math.radians(cfg.tilt_limit_deg)}
        ),
        "nan_state": TerminationTerm(mdp.nan_detected),
    }

    events = {
        "reset_base": EventTerm(
            mdp.reset_root_state_uniform,
            mode="reset",
            params={"xy": cfg.reset_xy_m, "yaw": cfg.reset_yaw_rad},
        ),
    }

    c = cfg.commands
    ranges = mdp.VelocityCommandRanges(
        lin_vel_x=c.lin_vel_x,
        lin_vel_y=c.lin_vel_y,
        ang_vel_z=c.ang_vel_z,
        resampling_time_s=c.resampling_time_s,
        standing_fraction=c.standing_fraction,
    )
    return EnvCfg(
        mjcf=mjcf,
        joint_names=joint_names,
        action_scale=scale,
        decimation=cfg.decimation,
        episode_length_s=cfg.episode_length_s,
        observations={"actor": group(cfg.observation_noise), "critic": group(False)},
        rewards=rewards,
        terminations=terminations,
        events=events,
        commands={"twist": lambda env: mdp.UniformVelocityCommand(env, ranges)},
        tracked_bodies=(g1.PELVIS_BODY, g1.TORSO_BODY, *g1.FOOT_BODIES),
        noise=cfg.observation_noise,
    )


def make_env(
    cfg: G1WalkFlatConfig,
    *,
    backend_cls,
    num_envs: int,
    nthread: int = 0,
    cpu_ids: list[int] | None = None,
    robot_mjcf: str | None = None,
    seed: int = 0,
) -> ManagerBasedRlEnv:
    """Build the g1_walk_flat env on ``backend_cls`` (see :class:`ManagerBasedRlEnv`)."""
    return ManagerBasedRlEnv(
        make_env_cfg(cfg, robot_mjcf),
        backend_cls,
        num_envs,
        nthread=nthread,
        cpu_ids=cpu_ids,
        seed=seed,
    )
