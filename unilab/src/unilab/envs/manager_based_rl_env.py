"""ManagerBasedRlEnv: a batched RL env assembled from term dicts on a unisim backend.

It satisfies :class:`unilab_rl.VecEnv`. One env step: process the action into joint targets, step
the physics ``decimation`` times, refresh the robot view and the contact sensors, advance the
commands' clocks (gait phase, reference motion frame), evaluate terminations (terminated vs
time-out truncation) and rewards (``weight * term * step_dt``) with the commands the policy
observed, update the commands (resampling due rows), compute the observations, fire interval events
(pushes) on the rows that go on, then reset the rows that ended.

Terminations and rewards come before the command update, as in mjlab's
``ManagerBasedRlEnv.step`` (mujocolab/mjlab@01b98a3, ``src/mjlab/envs/manager_based_rl_env.py``):
a command resampled in this step is first seen in this step's observation and first rewarded in
the next step, so no transition is rewarded for a command its observation did not hold.

Everything is batched over rows in torch; no Python loop runs over envs. Observations are computed
once per step when no row ends; otherwise a second time, and only the ended rows take the new
values (the others keep exactly the ``final_obs`` values, noise included).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from unilab.envs.contact import ContactSensor, ContactSensorCfg
from unilab.envs.managers import (
    EventManager,
    EventTerm,
    JointPositionAction,
    ObservationManager,
    PenaltyCurriculum,
    ObsTerm,
    RewardManager,
    RewardTerm,
    TerminationManager,
    TerminationTerm,
)
from unilab.envs.mdp.rewards import COMMAND_CACHE
from unilab.envs.mirror import check_symmetric_joint_setup, joint_mirror, observation_mirror
from unilab.envs.robot import RobotMeta, RobotView
from unilab_rl.vecenv import Mirror
from unisim import SimBackend, SimSpec


DIVERGED_KEY = "Env/diverged_fraction"
"""Step log key: the share of the rows whose physics diverged in this step (each ends terminated,
reward 0). A fraction rather than a count, so the async runtime's mean over equal shards is
still exact; ``unilab.divergence.DivergenceMonitor`` turns it back into counts."""
ENDED_KEY = "Env/ended_fraction"
"""Step log key: the share of the rows whose episode ended in this step (terminated or truncated)."""


@dataclass
class EnvCfg:
    """Everything a ManagerBasedRlEnv is built from (tasks produce it; users tune the task config).

    Attributes:
        mjcf: scene MJCF text (robot + floor + options + keyframe 0 = the default pose).
        joint_names: controlled joints, in action order.
        action_scale: (J,) rad per action unit.
        decimation: physics steps per env step.
        episode_length_s: episode duration before time-out truncation, s.
        observations: group -> term name -> ObsTerm (groups "actor" and "critic").
        rewards, terminations, events: term name -> term.
        commands: name -> factory ``f(env) -> command`` with ``command`` (N, d),
            ``reset(env_ids)`` and one or both of ``advance(dt)``, run right after the physics
            (a clock that moves with the state: a gait phase, a reference motion's frame), and
            ``update(dt)``, run after terminations and rewards (a target that is resampled, which
            the rewards must see as the policy observed it); an optional
            ``metrics() -> dict[str, float]`` is added to the step's log whenever rows reset.
        tracked_bodies: bodies the backend reports poses and velocities for.
        contact_sensors: name -> :class:`~unilab.envs.contact.ContactSensorCfg`; the MJCF must
            contain their MuJoCo sensors (:func:`~unilab.envs.contact.add_contact_sensors`).
        noise: whether actor observation noise is applied.
        penalty_curriculum: scales the negative-weight reward terms by episode length
            (:class:`~unilab.envs.managers.PenaltyCurriculum`); None keeps them at full weight.
        reset_kinematics_only: the backend's resets may leave the acceleration-dependent values
            of the reset rows (contact forces, contact and other acceleration-stage sensors)
            unset until their next step (:attr:`unisim.SimSpec.reset_kinematics_only`): for a
            task none of whose terms or commands reads those of a reset row before its next
            step (the contact sensors re-read them at the reset, and the next step's update
            overwrites them before any term reads them). Rollouts are the same either way.
    """

    mjcf: str
    joint_names: tuple[str, ...]
    action_scale: torch.Tensor
    decimation: int = 4
    episode_length_s: float = 20.0
    observations: dict[str, dict[str, ObsTerm]] = field(default_factory=dict)
    rewards: dict[str, RewardTerm] = field(default_factory=dict)
    terminations: dict[str, TerminationTerm] = field(default_factory=dict)
    events: dict[str, EventTerm] = field(default_factory=dict)
    commands: dict[str, Callable[["ManagerBasedRlEnv"], Any]] = field(default_factory=dict)
    tracked_bodies: tuple[str, ...] = ()
    contact_sensors: dict[str, ContactSensorCfg] = field(default_factory=dict)
    noise: bool = True
    penalty_curriculum: PenaltyCurriculum | None = None
    reset_kinematics_only: bool = False


class ManagerBasedRlEnv:
    """A batch of ``num_envs`` robot envs that auto-reset (the unilab_rl VecEnv protocol).

    Args:
        cfg: the env description.
        backend_cls: a :class:`unisim.SimBackend` class (``--sim``).
        num_envs: parallel worlds.
        nthread: physics threads (0: all cores).
        cpu_ids: optional cores to pin physics to.
        seed: seed of the env's torch generator (commands, events, noise draw from it).

    Attributes (besides the VecEnv ones):
        backend: the :class:`unisim.SimBackend`.
        robot: :class:`~unilab.envs.robot.RobotView` of the robot.
        contact_sensors: name -> :class:`~unilab.envs.contact.ContactSensor`.
        step_dt: env step, s (``decimation * dt``).
        step_cache: dict of values that several terms of one step share (see
            :func:`unilab.envs.mdp.rewards.step_cached`); cleared when the state changes, its
            command-derived entry (:func:`unilab.envs.mdp.rewards.command_cached`) also when
            the commands change.
        sensor_stack_views: sensor names -> (N, len(names), dim) strided view of those sensors'
            readings in the backend's buffer, kept across steps by
            :func:`unilab.envs.mdp.rewards.stack_sensors` (used while the backend hands out
            views of the same buffer; read-only).
        episode_length: (N,) int64 env steps since each row's reset.
        physics_time_s: wall seconds spent in ``backend.step`` by :meth:`step` since the env was
            built (the async collector reports it per block: physics vs the env's own work).
    """

    def __init__(
        self,
        cfg: EnvCfg,
        backend_cls: type[SimBackend],
        num_envs: int,
        *,
        nthread: int = 0,
        cpu_ids: list[int] | None = None,
        seed: int = 0,
    ) -> None:
        self.cfg = cfg
        self.num_envs = num_envs
        self.backend = backend_cls(
            SimSpec(
                mjcf=cfg.mjcf,
                num_envs=num_envs,
                nthread=nthread,
                decimation=cfg.decimation,
                tracked_bodies=tuple(cfg.tracked_bodies),
                cpu_ids=cpu_ids,
                reset_kinematics_only=cfg.reset_kinematics_only,
            )
        )
        self.device = self.backend.device
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(seed)  # commands, events and observation noise draw from it
        self.meta = RobotMeta.from_mjcf(cfg.mjcf, cfg.joint_names)
        self.robot = RobotView(self.backend, self.meta)
        self.step_dt = self.meta.dt * cfg.decimation
        self.max_episode_length_s = cfg.episode_length_s
        self.max_episode_length = int(round(cfg.episode_length_s / self.step_dt))
        self.episode_length = torch.zeros(num_envs, dtype=torch.long, device=self.device)
        self.physics_time_s = 0.0
        self._pending = None  # the step step_async started: its ctrl, or the physics' future
        # values several terms of one step read (e.g. the command speed), cleared whenever the
        # state or the commands change (after the step's command update and after resets)
        self.step_cache: dict = {}
        # strided views of same-sized sensors, kept across steps (mdp.rewards.stack_sensors)
        self.sensor_stack_views: dict[tuple[str, ...], torch.Tensor] = {}

        self.contact_sensors = {
            name: ContactSensor(self, name, c) for name, c in cfg.contact_sensors.items()
        }
        self.action_manager = JointPositionAction(self, cfg.action_scale)
        self.num_actions = self.action_manager.dim
        self.action_low = self.action_manager.low
        self.action_high = self.action_manager.high
        self.commands = {name: make(self) for name, make in cfg.commands.items()}
        self._advancing = [c for c in self.commands.values() if hasattr(c, "advance")]
        self._updating = [c for c in self.commands.values() if hasattr(c, "update")]
        self.event_manager = EventManager(self, cfg.events)
        # _reset_rows skips its keyframe reset when a later step of it writes the reset rows'
        # whole state through backend.reset anyway: the first reset event (``resets_backend``),
        # or, with no reset events, the first command (``resets_backend``, e.g. the motion
        # command's reference-state initialization). What reads the physics state in between
        # reads it again before use: the robot view right after that reset, the contact sensors
        # after the next physics step.
        first_command = next(iter(self.commands.values()), None)
        has_reset_events = any(t.mode == "reset" for t in cfg.events.values())
        self._reset_writes_state = self.event_manager.first_reset_resets_backend or (
            not has_reset_events and bool(getattr(first_command, "resets_backend", False))
        )
        self.reward_manager = RewardManager(self, cfg.rewards, cfg.penalty_curriculum)
        self.termination_manager = TerminationManager(self, cfg.terminations)
        self.observation_manager = ObservationManager(self, cfg.observations)
        self.observation_manager.noise_enabled = cfg.noise
        self.obs_dims = dict(self.observation_manager.dims)
        self._mirror: Mirror | None = None  # built by the `mirror` property on first use
        self.event_manager.apply("startup", torch.arange(num_envs, device=self.device))

    # ---------------------------------------------------------------- VecEnv API
    def reset(self) -> dict[str, torch.Tensor]:
        """Reset every env. Returns group -> (num_envs, obs_dims[group]) float32."""
        self._reset_rows(torch.arange(self.num_envs, device=self.device))
        return self.observation_manager.compute()

    def step(self, actions: torch.Tensor):
        """One env step; see :meth:`unilab_rl.VecEnv.step` for the returned tuple."""
        self.step_async(actions)
        return self.step_wait()

    def step_async(self, actions: torch.Tensor, physics=None):
        """The first half of :meth:`step` (:mod:`unilab_rl.vecenv`, "Split steps"): check and
        apply ``actions``, then start the physics on ``physics`` (anything with
        ``concurrent.futures.Executor.submit``; None: it runs in :meth:`step_wait`). Until
        :meth:`step_wait` returns, nothing of the env may be read or called but that.

        Returns:
            The physics' ``concurrent.futures.Future`` (None when ``physics`` is None).

        Raises:
            ValueError: ``actions`` not (num_envs, num_actions); a step already started.
        """
        if actions.shape != (self.num_envs, self.num_actions):
            raise ValueError(
                f"actions must have shape (num_envs={self.num_envs}, num_actions="
                f"{self.num_actions}), got {tuple(actions.shape)}"
            )
        if self._pending is not None:
            raise ValueError("step_async: the previous step has not been finished by step_wait")
        ctrl = self.action_manager.process(actions.to(self.device, torch.float32))
        self._pending = ctrl if physics is None else physics.submit(self._physics, ctrl)
        return None if physics is None else self._pending

    def _physics(self, ctrl: torch.Tensor) -> None:
        t0 = time.perf_counter()
        self.backend.step(ctrl, self.cfg.decimation)
        self.physics_time_s += time.perf_counter() - t0

    def step_wait(self):
        """The second half of :meth:`step`: wait for the physics :meth:`step_async` started, then
        terminations, rewards, commands, observations, events and resets; returns what
        :meth:`step` returns.

        Raises:
            ValueError: no step started.
        """
        pending, self._pending = self._pending, None
        if pending is None:
            raise ValueError("step_wait: no step started (step_async first)")
        if isinstance(pending, torch.Tensor):
            self._physics(pending)
        else:
            pending.result()  # re-raises the physics' error
        self.robot.refresh()
        for sensor in self.contact_sensors.values():
            sensor.update(self.step_dt)
        self.episode_length += 1
        for command in self._advancing:
            command.advance(self.step_dt)
        self.step_cache.clear()  # terms share per-step values through it (joint errors, command speed)

        # Terminations and rewards see the commands of the observation the action was chosen on.
        terminated, truncated = self.termination_manager.compute()
        reward = self.reward_manager.compute()
        for command in self._updating:
            command.update(self.step_dt)
        # the state is unchanged: the observations reuse its shared values (joint errors, foot
        # sensors); the command-derived ones are recomputed
        self.step_cache.pop(COMMAND_CACHE, None)
        final_obs = self.observation_manager.compute()
        terminated, diverged = self._contain_divergence(terminated, reward, final_obs)

        done = terminated | truncated
        # Interval events (pushes) act after the observation: the policy sees their effect in the
        # next step's observation, as an unobserved disturbance of the next transition. Rows that
        # end now are not pushed: they reset below, after every push of this step, and their
        # timers restart there.
        self.event_manager.step(skip=done)
        done_ids = done.nonzero(as_tuple=False).flatten()
        log: dict[str, float] = {}
        if len(done_ids):
            log = self._reset_rows(done_ids)
            fresh = self.observation_manager.compute(done_ids)
            obs = {g: final_obs[g].index_put((done_ids,), fresh[g]) for g in fresh}
        else:
            obs = final_obs
        log[DIVERGED_KEY] = diverged / self.num_envs
        log[ENDED_KEY] = len(done_ids) / self.num_envs
        self.step_cache.clear()
        return obs, reward, terminated, truncated, {"final_obs": final_obs, "log": log}

    def close(self) -> None:
        """Release the backend."""
        self.backend.close()

    @property
    def mirror(self) -> Mirror:
        """The left/right mirror of observations and actions (:class:`unilab_rl.vecenv.Mirror`),
        built on first use from the observation terms' mirror rules (in concatenation order) and
        the joint names (:mod:`unilab.envs.mirror`); tensors on the CPU.

        Returns:
            ``Mirror(obs={group: (perm (d,) int64, sign (d,) float32)}, actions=(perm (A,), sign (A,)))``.

        Raises:
            ValueError: an observation term has no mirror rule (naming it), a rule does not fit,
                or the default pose, action scale or action box is not left/right symmetric.
        """
        if self._mirror is None:
            names = self.meta.joint_names
            check_symmetric_joint_setup(
                names, self.action_manager.offset, self.action_manager.scale,
                self.action_manager.low, self.action_manager.high,
            )  # fmt: skip
            obs = observation_mirror(self.cfg.observations, self.observation_manager.layout, names)
            self._mirror = Mirror(obs=obs, actions=joint_mirror(names))
        return self._mirror

    # ---------------------------------------------------------------- internals
    def _contain_divergence(
        self, terminated: torch.Tensor, reward: torch.Tensor, final_obs: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, int]:
        """Rows whose physics diverged in this step (``backend.diverged()``: non-finite state,
        MuJoCo's bad qpos/qvel/qacc warning or a physics error) end here as terminated, with
        reward 0 and an all-zero final observation, so the transition the learner stores is
        bounded: its reward and s' were computed from a state that is not physics (rewards of
        -1e17 entered the replay before), and terminated means s' is never bootstrapped from.
        ``reward`` and ``final_obs`` are changed in place.

        Returns:
            ``terminated`` (N,) bool with the diverged rows set, and their count.
        """
        diverged = self.robot.diverged  # read once per step (the nan_state term reads it too)
        count = int(diverged.sum())
        if count:
            reward[diverged] = 0.0
            for obs in final_obs.values():
                obs[diverged] = 0.0
            terminated = terminated | diverged
        return terminated, count

    def _reset_rows(self, env_ids: torch.Tensor) -> dict[str, float]:
        """Log the ending episodes of ``env_ids``, then reset them. Returns the log entries."""
        log = self.reward_manager.reset(env_ids)
        log.update(self.termination_manager.reset(env_ids))
        log["Episode/length_s"] = float(self.episode_length[env_ids].float().mean()) * self.step_dt
        if not self._reset_writes_state:
            self.backend.reset(env_ids)  # else a reset event or the first command resets these rows itself
        self.event_manager.apply("reset", env_ids)
        self.event_manager.reset(env_ids)  # interval timers restart with the episode
        self.robot.refresh()
        for sensor in self.contact_sensors.values():
            sensor.reset(env_ids)
        self.action_manager.reset(env_ids)
        for command in self.commands.values():
            command.reset(env_ids)
            if hasattr(command, "metrics"):  # e.g. the motion command's sampling statistics
                log.update(command.metrics())
        self.episode_length[env_ids] = 0
        self.step_cache.clear()
        return log
