"""Builds the g1_walk_flat env: mjlab's G1 velocity task (``tasks/velocity/velocity_env_cfg.py``
and ``config/g1/env_cfgs.py``, v1.6.0) on our G1 model, trimmed for CPU physics (no heading
commands, no terrain), with holosoma's gait clock and posture penalties
(:mod:`unilab.tasks.g1_walk_flat.config`).

Observation layout (columns, in order):

- ``actor`` (103): base_lin_vel 3 (IMU velocimeter, ±0.5), base_ang_vel 3 (gyro, ±0.2),
  projected_gravity 3 (IMU up vector, ±0.05), joint_pos 29 (rel. to the default pose, plus the
  encoder bias, ±0.01), joint_vel 29 (±1.5), actions 29, command 3, gait_phase 4 (sin of the
  left and right foot's gait phase, then cos; noise-free).
- ``critic`` (115): the same terms noise-free with the unbiased joint_pos, then foot_height 2,
  foot_air_time 2, foot_contact 2, foot_contact_forces 6 (as mjlab); its first 103 columns stay
  the actor's layout.

With ``env.gait.enabled=false`` there is no ``gait_phase``: mjlab's actor 99 and critic 111.

Every observation term carries its left/right mirror rule (:mod:`unilab.envs.mirror`), so the env
offers ``env.mirror`` for symmetry augmentation (``algo.symmetry``).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from unilab.envs import mdp, mirror
from unilab.envs.contact import ContactSensorCfg
from unilab.envs.manager_based_rl_env import EnvCfg, ManagerBasedRlEnv
from unilab.envs.managers import EventTerm, ObsTerm, PenaltyCurriculum, RewardTerm, TerminationTerm
from unilab.envs.mirror import MirrorRule
from unilab.robots import RobotDescription
from unilab.robots.g1 import G1
from unilab.robots.scene import FOOT_SITES
from unilab.tasks.g1_walk_flat.config import G1WalkFlatConfig
from unilab.tasks.scene import make_task_env, task_scene
from unilab.utils.names import resolve_name_values

##
# Robot-specific constants.
##

FEET_GROUND = "feet_ground_contact"
SELF_COLLISION = "self_collision"
FOOT_POS_SENSORS = tuple(f"{site}_pos" for site in FOOT_SITES)
FOOT_VEL_SENSORS = tuple(f"{site}_lin_vel" for site in FOOT_SITES)
JOINTS = MirrorRule.joints()
# gait_phase columns: sin(phi_left), sin(phi_right), cos(phi_left), cos(phi_right); the feet swap
GAIT_PHASE = MirrorRule.sided(("left_sin", "right_sin", "left_cos", "right_cos"))

# Per-joint posture tolerances, rad (mjlab config/g1/env_cfgs.py): knees and hip pitch loosest
# for the stride, hip roll/yaw tighter against sway, ankle roll and waist roll/pitch tight for
# balance, arms moderate; running about 1.5-2x walking.
POSTURE_STD_STANDING = {r".*": 0.05}
POSTURE_STD_WALKING = {
    r".*hip_pitch.*": 0.3, r".*hip_roll.*": 0.15, r".*hip_yaw.*": 0.15, r".*knee.*": 0.35,
    r".*ankle_pitch.*": 0.25, r".*ankle_roll.*": 0.1,
    r".*waist_yaw.*": 0.2, r".*waist_roll.*": 0.08, r".*waist_pitch.*": 0.1,
    r".*shoulder_pitch.*": 0.15, r".*shoulder_roll.*": 0.15, r".*shoulder_yaw.*": 0.1,
    r".*elbow.*": 0.15, r".*wrist.*": 0.3,
}  # fmt: skip
POSTURE_STD_RUNNING = {
    r".*hip_pitch.*": 0.5, r".*hip_roll.*": 0.2, r".*hip_yaw.*": 0.2, r".*knee.*": 0.6,
    r".*ankle_pitch.*": 0.35, r".*ankle_roll.*": 0.15,
    r".*waist_yaw.*": 0.3, r".*waist_roll.*": 0.08, r".*waist_pitch.*": 0.2,
    r".*shoulder_pitch.*": 0.5, r".*shoulder_roll.*": 0.2, r".*shoulder_yaw.*": 0.15,
    r".*elbow.*": 0.35, r".*wrist.*": 0.3,
}  # fmt: skip
# Per-joint weights of the quadratic pose penalty (holosoma ``g1_29dof_loco`` ``pose``, listed
# there in G1 joint order): the stride joints nearly free, hip yaw and ankles held, the waist and
# arms pinned to the default pose.
POSE_L2_WEIGHTS = {
    r".*hip_pitch.*": 0.01, r".*hip_roll.*": 1.0, r".*hip_yaw.*": 5.0, r".*knee.*": 0.01,
    r".*ankle.*": 5.0, r"waist_.*": 50.0, r".*(shoulder|elbow|wrist).*": 50.0,
}  # fmt: skip


def contact_sensors(robot: RobotDescription = G1) -> dict[str, ContactSensorCfg]:
    """The task's contact sensors: each foot against the world (floor), and robot against robot."""
    return {
        FEET_GROUND: ContactSensorCfg(
            primary_subtrees=tuple(robot.feet), secondary_body="world",
            reduce="netforce", track_air_time=True,
        ),
        SELF_COLLISION: ContactSensorCfg(
            primary_subtrees=(robot.base_body,), secondary_subtree=robot.base_body, reduce="maxforce",
        ),
    }  # fmt: skip


def make_env_cfg(cfg: G1WalkFlatConfig, robot=None) -> EnvCfg:
    """The EnvCfg of g1_walk_flat from its settings.

    Args:
        cfg: task settings.
        robot: the run's ``robot.*`` settings (:class:`unilab.config.RobotConfig`: ``name``,
            ``mjcf``, ``actuators``), or None for the built-in G1 (:func:`unilab.robots.robot_scene`).

    Raises:
        unilab.robots.RobotModelError: (a ValueError) a robot model that cannot serve, one line.
    """
    scene, scale = task_scene(robot, contact_sensors)
    desc = scene.robot
    joint_names = desc.joint_names

    ##
    # Observations: actor (noisy, 99) and critic (noise-free, privileged, 111).
    ##
    def policy_terms(noisy: bool, biased: bool) -> dict[str, ObsTerm]:
        n = (lambda x: x) if noisy else (lambda x: None)
        # mirror rules: the IMU site lies on the sagittal plane with the pelvis axes, so its
        # readings mirror as base-frame vectors (unilab.envs.mirror)
        terms = {
            "base_lin_vel": ObsTerm(mdp.builtin_sensor, n(cfg.base_lin_vel_noise), {"sensor_name": "imu_lin_vel"},
                                    mirror=mirror.VECTOR),
            "base_ang_vel": ObsTerm(mdp.builtin_sensor, n(0.2), {"sensor_name": "imu_ang_vel"},
                                    mirror=mirror.AXIAL_VECTOR),
            "projected_gravity": ObsTerm(
                mdp.projected_gravity_from_sensor, n(0.05), {"sensor_name": "imu_upvector"},
                mirror=mirror.VECTOR,
            ),
            "joint_pos": ObsTerm(mdp.joint_pos_rel, n(0.01), {"biased": biased}, mirror=JOINTS),
            "joint_vel": ObsTerm(mdp.joint_vel, n(1.5), mirror=JOINTS),
            "actions": ObsTerm(mdp.last_action, mirror=JOINTS),
            "command": ObsTerm(mdp.generated_command, params={"name": "twist"},
                               mirror=mirror.VELOCITY_COMMAND),
        }  # fmt: skip
        if cfg.gait.enabled:  # holosoma's sin/cos gait phase, noise-free in both groups
            terms["gait_phase"] = ObsTerm(mdp.gait_phase, params={"name": "gait"}, mirror=GAIT_PHASE)
        return terms

    # Per-foot terms: columns in FOOT_POS_SENSORS / contact-sensor subtree (FOOT_BODIES) order;
    # contact forces are world-frame 3-vectors per foot.
    feet_sensors = MirrorRule.sided(FOOT_POS_SENSORS)
    feet_bodies = MirrorRule.sided(desc.feet)
    critic = {
        **policy_terms(noisy=False, biased=False),
        "foot_height": ObsTerm(mdp.foot_height, params={"sensor_names": FOOT_POS_SENSORS}, mirror=feet_sensors),
        "foot_air_time": ObsTerm(mdp.foot_air_time, params={"sensor_name": FEET_GROUND}, mirror=feet_bodies),
        "foot_contact": ObsTerm(mdp.foot_contact, params={"sensor_name": FEET_GROUND}, mirror=feet_bodies),
        "foot_contact_forces": ObsTerm(
            mdp.foot_contact_forces, params={"sensor_name": FEET_GROUND},
            mirror=MirrorRule.sided(desc.feet, signs=(1.0, -1.0, 1.0)),
        ),
    }  # fmt: skip

    ##
    # Rewards (weights from the task config).
    ##
    w = cfg.rewards
    std = {
        f"std_{regime}": torch.tensor(resolve_name_values(table, joint_names), dtype=torch.float32)
        for regime, table in (
            ("standing", POSTURE_STD_STANDING),
            ("walking", POSTURE_STD_WALKING),
            ("running", POSTURE_STD_RUNNING),
        )
    }
    feet = {"command_name": "twist", "command_threshold": 0.05}
    tr = cfg.tracking
    if tr.ang_vel_kernel == "yaw":
        track_ang = RewardTerm(mdp.track_yaw_rate, w.track_angular_velocity, {"std": tr.yaw_std})
    else:
        track_ang = RewardTerm(mdp.track_angular_velocity, w.track_angular_velocity,
                               {"std": tr.ang_vel_std, "xy_std": tr.ang_vel_xy_std})
    rewards = {
        "track_linear_velocity": RewardTerm(
            mdp.track_linear_velocity, w.track_linear_velocity, {"std": tr.lin_vel_std}
        ),
        "track_linear_velocity_fine": RewardTerm(
            mdp.track_linear_velocity, w.track_linear_velocity_fine, {"std": tr.lin_vel_fine_std}
        ),
        "track_angular_velocity": track_ang,
        "track_angular_velocity_fine": RewardTerm(
            mdp.track_yaw_rate, w.track_angular_velocity_fine, {"std": tr.yaw_fine_std}
        ),
        "ang_vel_xy": RewardTerm(mdp.ang_vel_xy_l2, w.ang_vel_xy),
        "upright": RewardTerm(mdp.upright, w.upright, {"std": math.sqrt(0.2), "body": desc.torso_body}),
        "pose": RewardTerm(
            mdp.variable_posture,
            w.pose,
            {**std, "command_name": "twist", "walking_threshold": 0.05, "running_threshold": 1.5},
        ),
        "body_ang_vel": RewardTerm(mdp.body_ang_vel_l2, w.body_ang_vel, {"body": desc.torso_body}),
        "orientation_l2": RewardTerm(mdp.orientation_l2, w.orientation_l2),
        "pose_l2": RewardTerm(
            mdp.joint_deviation_l2, w.pose_l2,
            {"weights": torch.tensor(resolve_name_values(POSE_L2_WEIGHTS, joint_names), dtype=torch.float32)},
        ),

        "angular_momentum": RewardTerm(
            mdp.angular_momentum_l2, w.angular_momentum, {"sensor_name": "root_angmom"}
        ),
        "action_rate_l2": RewardTerm(mdp.action_rate_l2, w.action_rate_l2),
        "joint_pos_limits": RewardTerm(
            mdp.joint_pos_limits, w.joint_pos_limits, {"soft_factor": desc.soft_joint_pos_limit_factor}
        ),
        "foot_clearance": RewardTerm(
            mdp.foot_clearance,
            w.foot_clearance,
            {"target_height": 0.1, "pos_sensors": FOOT_POS_SENSORS, "vel_sensors": FOOT_VEL_SENSORS,
             **feet},
        ),  # fmt: skip
        "foot_slip": RewardTerm(
            mdp.foot_slip_l2,
            w.foot_slip,
            {"sensor_name": FEET_GROUND, "vel_sensors": FOOT_VEL_SENSORS, **feet},
        ),
        "air_time": RewardTerm(
            mdp.foot_air_time_window,
            w.air_time,
            {"sensor_name": FEET_GROUND, "threshold_min": 0.05, "threshold_max": 0.5,
             "command_name": "twist", "command_threshold": 0.5},
        ),  # fmt: skip
        "alive": RewardTerm(mdp.is_alive, w.alive),
        "feet_phase": RewardTerm(
            mdp.feet_phase,
            w.feet_phase,
            {"swing_height": cfg.gait.swing_height_m, "sigma": cfg.gait.sigma,
             "pos_sensors": FOOT_POS_SENSORS, "gait_command_name": "gait"},
        ),  # fmt: skip
        "self_collisions": RewardTerm(
            mdp.self_collision_count,
            w.self_collisions,
            {"sensor_name": SELF_COLLISION, "force_threshold": 10.0},
        ),
    }

    ##
    # Terminations.
    ##
    terminations = {
        "time_out": TerminationTerm(mdp.time_out, time_out=True),
        "fell_over": TerminationTerm(
            mdp.bad_orientation, params={"limit_angle": math.radians(cfg.tilt_limit_deg)}
        ),
        "nan_state": TerminationTerm(mdp.nan_detected),
    }

    ##
    # Events: reset, domain randomization (startup), pushes (interval).
    ##
    events = {
        "reset_base": EventTerm(
            mdp.reset_root_state_uniform,
            mode="reset",
            params={"xy": cfg.reset_xy_m, "yaw": cfg.reset_yaw_rad, "z": cfg.reset_z_m},
        ),
    }
    dr = cfg.domain_randomization
    if dr.enabled:
        events["foot_friction"] = EventTerm(
            mdp.randomize_geom_friction,
            mode="startup",
            params={"body_names": tuple(desc.feet), "friction_range": dr.foot_friction},
        )
        events["torso_com"] = EventTerm(
            mdp.randomize_body_com,
            mode="startup",
            params={"body_names": (desc.torso_body,), "offset_range": dr.torso_com_m},
        )
        events["encoder_bias"] = EventTerm(
            mdp.randomize_encoder_bias,
            mode="startup",
            params={"bias_range": (-dr.encoder_bias_rad, dr.encoder_bias_rad)},
        )
    if cfg.push.enabled:
        v = cfg.push.velocity
        events["push_robot"] = EventTerm(
            mdp.push_by_setting_velocity,
            mode="interval",
            interval_range_s=cfg.push.interval_s,
            params={"velocity_range": {k: (-getattr(v, k), getattr(v, k))
                                       for k in ("x", "y", "z", "roll", "pitch", "yaw")}},
        )  # fmt: skip

    c = cfg.commands
    ranges = mdp.VelocityCommandRanges(
        lin_vel_x=c.lin_vel_x,
        lin_vel_y=c.lin_vel_y,
        ang_vel_z=c.ang_vel_z,
        resampling_time_s=c.resampling_time_s,
        standing_fraction=c.standing_fraction,
        lin_vel_deadband=c.lin_vel_deadband,
    )
    cc = c.curriculum
    curriculum = (
        mdp.VelocityCommandCurriculum(
            initial_fraction=cc.initial_fraction, step_fraction=cc.step_fraction,
            threshold=cc.threshold, interval_s=cc.interval_s,
            start_lin=cc.start_lin_level, start_ang=cc.start_ang_level,
        )
        if cc.enabled
        else None
    )  # fmt: skip
    commands = {"twist": lambda env: mdp.UniformVelocityCommand(env, ranges, curriculum)}
    if cfg.gait.enabled:  # after "twist": each step and reset it reads the updated twist
        g = cfg.gait
        gait = mdp.GaitPhaseSettings(
            period_s=g.period_s, frequency_width_hz=g.frequency_width_hz,
            randomize_phase=g.randomize_phase, velocity_command="twist",
        )
        commands["gait"] = lambda env: mdp.GaitPhaseCommand(env, gait)
    return EnvCfg(
        mjcf=scene.to_xml(),
        joint_names=joint_names,
        action_scale=scale,
        decimation=cfg.decimation,
        episode_length_s=cfg.episode_length_s,
        observations={"actor": policy_terms(cfg.observation_noise, biased=True), "critic": critic},
        rewards=rewards,
        terminations=terminations,
        events=events,
        commands=commands,
        tracked_bodies=(desc.base_body, desc.torso_body, *desc.feet),
        contact_sensors=contact_sensors(desc),
        noise=cfg.observation_noise,
        penalty_curriculum=_penalty_curriculum(cfg),
    )


def _penalty_curriculum(cfg: G1WalkFlatConfig) -> PenaltyCurriculum | None:
    c = cfg.penalty_curriculum
    if not c.enabled:
        return None
    weights = cfg.rewards.model_dump()

    def on(names: list[str]) -> tuple[str, ...]:  # a weight of 0: the term is not built
        return tuple(name for name in names if weights[name] < 0.0)

    return PenaltyCurriculum(
        initial=c.initial, min_scale=c.min_scale, up_length_s=c.up_length_s,
        down_length_s=c.down_length_s, step=c.step, exempt=on(c.exempt), late=on(c.late), start=c.start,
    )


def make_env(cfg: G1WalkFlatConfig, **kwargs: Any) -> ManagerBasedRlEnv:
    """Build the g1_walk_flat env: :func:`unilab.tasks.scene.make_task_env` with :func:`make_env_cfg`
    (keywords ``backend_cls``, ``num_envs``, ``nthread``, ``cpu_ids``, ``robot``, ``seed``)."""
    return make_task_env(make_env_cfg, cfg, **kwargs)
