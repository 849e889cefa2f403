"""The motion command: the reference frame of each env, reference-state initialization (RSI) and
adaptive sampling of start times.

Sources: BeyondMimic ``whole_body_tracking/tasks/tracking/mdp/commands.py`` (@cd65172) and mjlab
``tasks/tracking/mdp/commands.py`` (v1.6.0), as summarised in tasks.md section 3.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from unilab.motion import MotionClip
from unilab.utils.math import (
    quat_conjugate,
    quat_from_euler_xyz,
    quat_mul,
    quat_rotate,
    quat_rotate_inverse,
    yaw_quat,
)


# ============================================================================ adaptive sampling
class AdaptiveSampler:
    """Failure-weighted start-time bins (BeyondMimic "adaptive sampling", tasks.md section 3).

    The clip is cut into ``num_bins`` bins of about one second (``frames // control_rate + 1``).
    An episode that *terminates* (not times out) counts one failure in the bin of the frame where
    it failed; the per-bin counts are an EMA with rate ``alpha``, updated every env step. Start
    bins are drawn from ``p ∝ smooth(counts + uniform_ratio / num_bins)``, where ``smooth`` adds
    each bin's later neighbours with weights ``lambda^k`` (k < kernel_size, so a failure also
    raises the bins before it), then a uniform frame within the bin.

    Attributes:
        failed_count: (num_bins,) EMA of failures per bin.
        probabilities: (num_bins,) the current sampling distribution.
    """

    def __init__(
        self,
        num_frames: int,
        num_bins: int,
        *,
        alpha: float = 0.001,
        uniform_ratio: float = 0.1,
        kernel_size: int = 1,
        lam: float = 0.8,
        device: torch.device | str = "cpu",
    ) -> None:
        self.num_frames, self.num_bins = num_frames, max(int(num_bins), 1)
        self.alpha, self.uniform_ratio = alpha, uniform_ratio
        self.kernel = torch.tensor([lam**i for i in range(kernel_size)], device=device)
        self.kernel /= self.kernel.sum()
        self.failed_count = torch.zeros(self.num_bins, device=device)
        self._current_failed = torch.zeros(self.num_bins, device=device)

    def bin_of(self, frames: torch.Tensor) -> torch.Tensor:
        """(k,) bin index of each frame."""
        return torch.clamp((frames * self.num_bins) // max(self.num_frames, 1), 0, self.num_bins - 1)

    def record_failures(self, frames: torch.Tensor) -> None:
        """Count one failure at each of ``frames`` (frames where episodes terminated)."""
        if len(frames):
            self._current_failed += torch.bincount(self.bin_of(frames), minlength=self.num_bins).float()

    def step(self) -> None:
        """Fold this step's failures into the EMA (called once per env step)."""
        self.failed_count.mul_(1.0 - self.alpha).add_(self._current_failed, alpha=self.alpha)
        self._current_failed.zero_()

    @property
    def probabilities(self) -> torch.Tensor:
        p = self.failed_count + self.uniform_ratio / self.num_bins
        k = len(self.kernel)
        if k > 1:  # bin i also gets the failures of bins i+1 .. i+k-1
            padded = torch.nn.functional.pad(p[None, None], (0, k - 1), mode="replicate")
            p = torch.nn.functional.conv1d(padded, self.kernel.flip(0)[None, None]).flatten()
        return p / p.sum()

    def sample(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """(n,) int64 start frames: a bin from :attr:`probabilities`, then uniform inside it."""
        bins = torch.multinomial(self.probabilities, n, replacement=True, generator=generator)
        u = torch.rand(n, device=bins.device, generator=generator)
        frames = (bins.float() + u) / self.num_bins * (self.num_frames - 1)
        return frames.long().clamp(0, self.num_frames - 1)

    def metrics(self) -> dict[str, float]:
        """Normalized entropy of the distribution (1 = uniform) and its largest bin's probability."""
        p = self.probabilities
        entropy = -(p * torch.log(p.clamp(min=1e-12))).sum() / math.log(max(self.num_bins, 2))
        top, idx = p.max(dim=0)
        return {"sampling_entropy": float(entropy), "sampling_top1_prob": float(top),
                "sampling_top1_bin": float(idx) / self.num_bins}  # fmt: skip


# ============================================================================ the command
@dataclass
class ResetNoise:
    """± uniform RSI noise (all zero: the exact reference state)."""

    pos_xy: float = 0.0
    pos_z: float = 0.0
    roll_pitch: float = 0.0
    yaw: float = 0.0
    lin_vel_xy: float = 0.0
    lin_vel_z: float = 0.0
    ang_vel_roll_pitch: float = 0.0
    ang_vel_yaw: float = 0.0
    joint_pos: float = 0.0


class MotionCommand:
    """Reference frame per env from a clip, advanced one frame per env step.

    The clip's joints are in the env's action order and its bodies in the backend's tracked-body
    order (the task selects them by name), and its frame rate equals the control rate.

    Args:
        env: the env.
        clip: the selected clip.
        anchor_body: name of the anchor body (``torso_link``).
        sampling: ``adaptive``, ``uniform`` or ``start`` (always frame 0).
        noise: RSI noise.
        soft_joint_limits: (J, 2) joint positions are clipped to these after the noise.
        sampler_kwargs: :class:`AdaptiveSampler` settings.

    Attributes:
        command: (N, 2J) reference joint positions and velocities at the current frame.
        time_steps: (N,) int64 current frame of each env.
        body_pos_w, body_quat_w, body_lin_vel_w, body_ang_vel_w: (N, B, ·) reference bodies.
        anchor_pos_w, anchor_quat_w: (N, 3), (N, 4) reference anchor.
        body_pos_relative_w, body_quat_relative_w: (N, B, ·) reference bodies moved onto the
            robot: xy from the robot's anchor, z from the reference anchor, yaw-only rotation
            (BeyondMimic ``update_relative_body_poses``).
    """

    def __init__(
        self,
        env,
        clip: MotionClip,
        anchor_body: str,
        *,
        sampling: str = "adaptive",
        noise: ResetNoise | None = None,
        soft_joint_limits: torch.Tensor | None = None,
        sampler_kwargs: dict | None = None,
    ) -> None:
        self.env, dev = env, env.device
        self.sampling = sampling
        self.noise = noise or ResetNoise()
        self.soft_joint_limits = None if soft_joint_limits is None else soft_joint_limits.to(dev)
        as_t = lambda a: torch.as_tensor(a, dtype=torch.float32, device=dev)  # noqa: E731
        self.joint_pos_ref, self.joint_vel_ref = as_t(clip.joint_pos), as_t(clip.joint_vel)
        self.body_pos_ref, self.body_quat_ref = as_t(clip.body_pos_w), as_t(clip.body_quat_w)
        self.body_lin_vel_ref, self.body_ang_vel_ref = as_t(clip.body_lin_vel_w), as_t(clip.body_ang_vel_w)
        self.num_frames = clip.num_frames
        self.body_names = clip.body_names
        self.anchor_index = clip.body_names.index(anchor_body)
        self.root_index = 0  # the first tracked body is the floating base (pelvis)
        control_rate = 1.0 / env.step_dt
        self.sampler = AdaptiveSampler(
            self.num_frames, int(self.num_frames // control_rate) + 1, device=dev, **(sampler_kwargs or {})
        )
        self.time_steps = torch.zeros(env.num_envs, dtype=torch.long, device=dev)
        self._refresh()

    # ------------------------------------------------------------------ reference at time_steps
    @property
    def command(self) -> torch.Tensor:
        return torch.cat((self.joint_pos, self.joint_vel), dim=1)

    def _refresh(self) -> None:
        t = self.time_steps
        self.joint_pos, self.joint_vel = self.joint_pos_ref[t], self.joint_vel_ref[t]
        self.body_pos_w, self.body_quat_w = self.body_pos_ref[t], self.body_quat_ref[t]
        self.body_lin_vel_w, self.body_ang_vel_w = self.body_lin_vel_ref[t], self.body_ang_vel_ref[t]
        self.anchor_pos_w = self.body_pos_w[:, self.anchor_index]
        self.anchor_quat_w = self.body_quat_w[:, self.anchor_index]
        robot = self.env.robot
        robot_anchor_pos = robot.body_pos_w[:, self.anchor_index]
        robot_anchor_quat = robot.body_quat_w[:, self.anchor_index]
        b = self.body_pos_w.shape[1]
        delta_pos = robot_anchor_pos.clone()
        delta_pos[:, 2] = self.anchor_pos_w[:, 2]
        delta_ori = yaw_quat(quat_mul(robot_anchor_quat, quat_conjugate(self.anchor_quat_w)))
        delta_ori_b = delta_ori[:, None].expand(-1, b, -1)
        self.body_quat_relative_w = quat_mul(delta_ori_b, self.body_quat_w)
        self.body_pos_relative_w = delta_pos[:, None] + quat_rotate(
            delta_ori_b, self.body_pos_w - self.anchor_pos_w[:, None]
        )

    @property
    def clip_ended(self) -> torch.Tensor:
        """(N,) bool rows at the clip's last frame."""
        return self.time_steps >= self.num_frames - 1

    # ------------------------------------------------------------------ env hooks
    def advance(self, dt: float) -> None:
        """Advance every row one frame (held at the last frame; the ``motion_end`` termination
        ends the episode there) and fold the step's failures into the sampler. The env calls it
        right after the physics, so terminations and rewards compare the new state with the
        reference frame of the same time."""
        self.time_steps = torch.clamp(self.time_steps + 1, max=self.num_frames - 1)
        self.sampler.step()
        self._refresh()

    def reset(self, env_ids: torch.Tensor) -> None:
        """Record where ended episodes failed, draw start frames and put the robot there (RSI)."""
        if len(env_ids) == 0:
            return
        tm = getattr(self.env, "termination_manager", None)
        if tm is not None:
            failed = tm.terminated[env_ids]
            self.sampler.record_failures(self.time_steps[env_ids][failed])
        n = len(env_ids)
        gen = self.env.generator
        if self.sampling == "adaptive":
            start = self.sampler.sample(n, gen)
        elif self.sampling == "uniform":
            start = torch.randint(0, self.num_frames, (n,), device=self.env.device, generator=gen)
        else:
            start = torch.zeros(n, dtype=torch.long, device=self.env.device)
        self.time_steps[env_ids] = start
        self.write_reference_state(env_ids)
        self._refresh()

    def metrics(self) -> dict[str, float]:
        """Sampling metrics, logged as ``Metrics/motion/<name>``."""
        return {f"Metrics/motion/{k}": v for k, v in self.sampler.metrics().items()}

    # ------------------------------------------------------------------ RSI
    def write_reference_state(self, env_ids: torch.Tensor) -> None:
        """Set rows ``env_ids`` to the reference state at their frame, plus the RSI noise, through
        the backend's reset (keyframe, then qpos/qvel, then forward kinematics)."""
        env, nz, t = self.env, self.noise, self.time_steps[env_ids]
        n, dev = len(env_ids), env.device

        def u(scale: float, *shape: int) -> torch.Tensor:
            r = torch.rand((n, *shape), device=dev, generator=env.generator)
            return (2.0 * r - 1.0) * scale

        root = self.root_index
        pos = self.body_pos_ref[t, root] + torch.stack((u(nz.pos_xy), u(nz.pos_xy), u(nz.pos_z)), dim=1)
        dq = quat_from_euler_xyz(u(nz.roll_pitch), u(nz.roll_pitch), u(nz.yaw))
        quat = quat_mul(dq, self.body_quat_ref[t, root])
        lin = self.body_lin_vel_ref[t, root] + torch.stack(
            (u(nz.lin_vel_xy), u(nz.lin_vel_xy), u(nz.lin_vel_z)), dim=1
        )
        ang_w = self.body_ang_vel_ref[t, root] + torch.stack(
            (u(nz.ang_vel_roll_pitch), u(nz.ang_vel_roll_pitch), u(nz.ang_vel_yaw)), dim=1
        )
        joint_pos = self.joint_pos_ref[t] + u(nz.joint_pos, self.joint_pos_ref.shape[1])
        if self.soft_joint_limits is not None:
            joint_pos = torch.clamp(joint_pos, self.soft_joint_limits[:, 0], self.soft_joint_limits[:, 1])
        meta = env.robot.meta
        qpos = meta.default_qpos.to(dev).repeat(n, 1)
        qvel = torch.zeros(n, env.backend.nv, device=dev)
        qpos[:, 0:3], qpos[:, 3:7] = pos, quat
        qpos[:, meta.qpos_adr.to(dev)] = joint_pos
        # Free joint: qvel[0:3] world-frame velocity of the body origin, qvel[3:6] body-frame rate.
        qvel[:, 0:3], qvel[:, 3:6] = lin, quat_rotate_inverse(quat, ang_w)
        qvel[:, meta.qvel_adr.to(dev)] = self.joint_vel_ref[t]
        env.backend.reset(env_ids, qpos=qpos, qvel=qvel)
        env.robot.refresh()
