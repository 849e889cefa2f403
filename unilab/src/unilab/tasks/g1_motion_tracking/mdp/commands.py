"""The motion command: the reference frame of each env, reference-state initialization (RSI) and
adaptive sampling of start times.

Sources: BeyondMimic ``whole_body_tracking/tasks/tracking/mdp/commands.py`` (@cd65172) and mjlab
``tasks/tracking/mdp/commands.py`` (v1.6.0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from unilab.motion.clip import MotionClip
from unilab.motion.library import ClipInfo
from unilab.utils.math import (
    Parts,
    Vec3,
    quat_from_euler_xyz_parts,
    quat_mul_stacked,
    quat_rotate_inverse,
    quat_rotate_parts,
    yaw_quat,
)


# ============================================================================ adaptive sampling
class AdaptiveSampler:
    """Failure-weighted start times over one or several clips: BeyondMimic's "adaptive sampling"
    (``whole_body_tracking`` ``tasks/tracking/mdp/commands.py`` @cd65172, ``_adaptive_sampling``
    and the EMA in ``_update_command``), with the bins of every clip in one
    distribution.

    Clip c is cut into ``num_bins[c]`` bins of about one second (``frames // control_rate + 1``).
    An episode that *terminates* (not times out) counts one failure in the bin of its clip and
    frame; the per-bin counts are an EMA with rate ``alpha``, updated every env step. Start bins
    are drawn from ``p ∝ smooth(counts + uniform_ratio · q)``, where ``q`` spreads one unit over
    all bins in proportion to their clip's weight (``q_b = w_c / Σ_b' w_c(b')``; for one clip
    ``1 / num_bins``, as BeyondMimic), and ``smooth`` gives each bin its own value plus its
    clip's next ``kernel_size - 1`` bins with weights ``lambda^k`` (normalized; past a clip's end
    its last bin repeats, BeyondMimic's replicate padding), so a failure also raises the bins
    before it. Then a uniform frame within the bin: ``(bin + U(0, 1)) / num_bins · (T - 1)``.

    Args:
        num_frames: frames per clip (an int for one clip).
        num_bins: bins per clip (an int for one clip).
        weights: per-clip weights > 0 (default 1 each).
        alpha, uniform_ratio, kernel_size, lam: as above.

    Attributes:
        failed_count: (num_bins_total,) EMA of failures per bin, clips one after the other
            (changed by :meth:`step` alone).
        bin_offset: (C,) int64 first bin of each clip.
        probabilities: (num_bins_total,) the current sampling distribution, computed once per
            :meth:`step` (the failures it folds in are the only thing it depends on that changes).
    """

    def __init__(
        self,
        num_frames: int | Sequence[int],
        num_bins: int | Sequence[int],
        *,
        weights: Sequence[float] | None = None,
        alpha: float = 0.001,
        uniform_ratio: float = 0.1,
        kernel_size: int = 1,
        lam: float = 0.8,
        device: torch.device | str = "cpu",
    ) -> None:
        frames = [int(num_frames)] if isinstance(num_frames, int) else [int(f) for f in num_frames]
        bins = [int(num_bins)] if isinstance(num_bins, int) else [int(b) for b in num_bins]
        if len(frames) != len(bins) or not frames:
            raise ValueError(f"one bin count per clip: {len(frames)} clips, {len(bins)} bin counts")
        w = [1.0] * len(frames) if weights is None else [float(x) for x in weights]
        if len(w) != len(frames) or min(w) <= 0.0:
            raise ValueError(f"expected one weight > 0 per clip, got {w}")
        self.num_clips = len(frames)
        self.alpha, self.uniform_ratio = alpha, uniform_ratio
        self.frames = torch.tensor(frames, dtype=torch.long, device=device)
        self.bins = torch.tensor([max(b, 1) for b in bins], dtype=torch.long, device=device)
        self.bin_offset = torch.cumsum(self.bins, 0) - self.bins
        self.num_bins = int(self.bins.sum())
        clip_of_bin = torch.repeat_interleave(torch.arange(self.num_clips, device=device), self.bins)
        self.clip_of_bin = clip_of_bin
        share = torch.tensor(w, device=device)[clip_of_bin]
        self.uniform = share / share.sum()
        # smoothing matrix: row i = bin i's own count plus its clip's next bins, lambda^k
        kernel = torch.tensor([lam**k for k in range(kernel_size)], device=device)
        kernel /= kernel.sum()
        last = (self.bin_offset + self.bins - 1)[clip_of_bin]
        self.smooth = torch.zeros(self.num_bins, self.num_bins, device=device)
        rows = torch.arange(self.num_bins, device=device)
        for k in range(kernel_size):
            self.smooth.index_put_((rows, torch.minimum(rows + k, last)), kernel[k].expand(self.num_bins), accumulate=True)
        self.failed_count = torch.zeros(self.num_bins, device=device)
        self._current_failed = torch.zeros(self.num_bins, device=device)
        # per bin, for sample(): its first local bin index, its clip's bin count and last frame
        # as float32 (the values sample() computes from them), and its clip and last frame
        clip_bins, clip_frames = self.bins[clip_of_bin], self.frames[clip_of_bin]
        local = torch.arange(self.num_bins, device=device) - self.bin_offset[clip_of_bin]
        self._bin_float = torch.stack((local.float(), clip_bins.float(), (clip_frames - 1).float()), dim=1)
        self._bin_long = torch.stack((clip_of_bin, clip_frames - 1), dim=1)
        self._probabilities: torch.Tensor | None = None  # cleared by step()
        self._metrics: dict[str, float] | None = None  # likewise

    def bin_of(self, frames: torch.Tensor, clips: torch.Tensor | None = None) -> torch.Tensor:
        """(k,) global bin index of each (clip, frame); ``clips`` None: clip 0."""
        clips = torch.zeros_like(frames) if clips is None else clips
        local = (frames * self.bins[clips]) // self.frames[clips].clamp(min=1)
        return self.bin_offset[clips] + torch.minimum(local.clamp(min=0), self.bins[clips] - 1)

    def record_failures(self, frames: torch.Tensor, clips: torch.Tensor | None = None) -> None:
        """Count one failure at each (clip, frame) where an episode terminated."""
        if len(frames):
            self._current_failed += torch.bincount(self.bin_of(frames, clips), minlength=self.num_bins).float()

    def step(self) -> None:
        """Fold this step's failures into the EMA (called once per env step)."""
        self.failed_count.mul_(1.0 - self.alpha).add_(self._current_failed, alpha=self.alpha)
        self._current_failed.zero_()
        self._probabilities = self._metrics = None

    @property
    def probabilities(self) -> torch.Tensor:
        if self._probabilities is None:
            p = self.smooth @ (self.failed_count + self.uniform_ratio * self.uniform)
            self._probabilities = p / p.sum()
        return self._probabilities

    def clip_probabilities(self) -> torch.Tensor:
        """(C,) probability that a start falls in each clip."""
        return torch.zeros(self.num_clips, device=self.failed_count.device).index_add_(
            0, self.clip_of_bin, self.probabilities
        )

    def sample(self, n: int, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(clips (n,), frames (n,)) int64 starts: a bin from :attr:`probabilities`, then a
        uniform frame inside it."""
        bins = torch.multinomial(self.probabilities, n, replacement=True, generator=generator)
        local, num_bins, span = self._bin_float.index_select(0, bins).unbind(1)
        clips, last = self._bin_long.index_select(0, bins).unbind(1)
        u = torch.rand(n, device=bins.device, generator=generator)
        frames = ((local + u) / num_bins * span).long()
        return clips, torch.minimum(frames.clamp(min=0), last)

    def metrics(self) -> dict[str, float]:
        """Normalized entropy of the distribution (1 = uniform), its largest bin's probability and
        position (global bin / number of bins); computed once per :meth:`step`."""
        if self._metrics is None:
            p = self.probabilities
            entropy = -(p * torch.log(p.clamp(min=1e-12))).sum() / math.log(max(self.num_bins, 2))
            top, idx = p.max(dim=0)
            self._metrics = {"sampling_entropy": min(float(entropy), 1.0), "sampling_top1_prob": float(top),
                             "sampling_top1_bin": float(idx) / self.num_bins}  # fmt: skip
        return dict(self._metrics)


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
    """Reference frame per env from a library of clips, advanced one frame per env step.

    Each row plays one clip at a time: ``clip_index`` says which, ``time_steps`` the frame within
    it. The clips' joints are in the env's action order and their bodies in the backend's
    tracked-body order (the task selects them by name), and every clip's frame rate equals the
    control rate. The arrays of all clips are stored one after the other.

    The clip list, for consumers such as an evaluation that plays every clip (:attr:`clips`,
    :meth:`pin`, :meth:`unpin`, :meth:`start_at`)::

        cmd = env.commands["motion"]
        for clip in cmd.clips:                       # ClipInfo: index, name, num_frames, fps, ...
            cmd.pin(torch.arange(env.num_envs), clip.index, frame=0)
            obs = env.reset()                        # every row starts clip.index at frame 0
            ...                                      # rows that end restart the pinned clip
        cmd.unpin(torch.arange(env.num_envs))

    Args:
        env: the env.
        clips: the selected clips (a single :class:`MotionClip` is a library of one).
        anchor_body: name of the anchor body (``torso_link``).
        infos: one :class:`~unilab.motion.library.ClipInfo` per clip (default: named
            ``clip0``, ``clip1``, ..., weight 1).
        sampling: ``adaptive``, ``uniform`` (a clip by weight, then a uniform frame) or ``start``
            (frame 0; row r's k-th episode plays clip ``(r + k · num_envs) mod C``, so a long
            play visits every clip).
        noise: RSI noise (read when the command is built).
        soft_joint_limits: (J, 2) joint positions are clipped to these after the noise.
        sampler_kwargs: :class:`AdaptiveSampler` settings.

    Attributes:
        command: (N, 2J) reference joint positions and velocities at the current frame (one
            tensor per refresh; ``joint_pos`` and ``joint_vel`` are views of its halves).
        clip_index: (N,) int64 clip of each row.
        time_steps: (N,) int64 current frame of each row, within its clip.
        body_pos_w, body_quat_w, body_lin_vel_w, body_ang_vel_w: (N, B, ·) reference bodies
            (gathered on first read after each refresh).
        anchor_pos_w, anchor_quat_w: (N, 3), (N, 4) reference anchor (views of one (N, 7)
            tensor per refresh).
        body_pos_relative_w, body_quat_relative_w: (N, B, ·) reference bodies moved onto the
            robot: xy from the robot's anchor, z from the reference anchor, yaw-only rotation
            (BeyondMimic ``update_relative_body_poses``), from the robot's anchor at the last
            refresh; computed on first read after each refresh.
        resets_backend: True: :meth:`reset` writes the whole state of the reset rows through
            ``backend.reset`` (keyframe, then qpos/qvel, then forward kinematics), so the env
            skips its own keyframe reset of those rows when this is its first command and no
            reset event runs (:class:`~unilab.envs.manager_based_rl_env.ManagerBasedRlEnv`).
    """

    resets_backend = True

    def __init__(
        self,
        env,
        clips: MotionClip | Sequence[MotionClip],
        anchor_body: str,
        *,
        infos: Sequence[ClipInfo] | None = None,
        sampling: str = "adaptive",
        noise: ResetNoise | None = None,
        soft_joint_limits: torch.Tensor | None = None,
        sampler_kwargs: dict | None = None,
    ) -> None:
        self.env, dev = env, env.device
        clips = [clips] if isinstance(clips, MotionClip) else list(clips)
        if not clips:
            raise ValueError("the motion command needs at least one clip")
        body_names = clips[0].body_names
        for clip in clips[1:]:
            if clip.body_names != body_names or clip.joint_names != clips[0].joint_names:
                raise ValueError("every clip must be selected to the same joints and bodies")
        if infos is None:
            infos = [ClipInfo(i, f"clip{i}", c.num_frames, c.fps, 1.0, c.source or "") for i, c in enumerate(clips)]
        if len(infos) != len(clips):
            raise ValueError(f"{len(infos)} clip infos for {len(clips)} clips")
        self._clips = tuple(infos)
        self.sampling = sampling
        self.noise = nz = noise or ResetNoise()
        # (12, 1) the root noise's scale per column, see _rsi_noise
        self._root_noise_scale = torch.tensor(
            [nz.pos_xy, nz.pos_xy, nz.pos_z, nz.roll_pitch, nz.roll_pitch, nz.yaw, nz.lin_vel_xy, nz.lin_vel_xy,
             nz.lin_vel_z, nz.ang_vel_roll_pitch, nz.ang_vel_roll_pitch, nz.ang_vel_yaw],
            dtype=torch.float32, device=dev,
        )[:, None]  # fmt: skip
        self.soft_joint_limits = None if soft_joint_limits is None else soft_joint_limits.to(dev)

        def cat(key: str) -> torch.Tensor:
            # contiguous: a clip's arrays may be stored in another memory order, and a row gather
            # from a strided array costs several times one from a contiguous array
            arr = np.concatenate([getattr(c, key) for c in clips])
            return torch.as_tensor(arr, dtype=torch.float32, device=dev).contiguous()

        self.joint_pos_ref, self.joint_vel_ref = cat("joint_pos"), cat("joint_vel")
        # (F, 2J) the command of every frame, so that a refresh gathers it in one op
        self._command_ref = torch.cat((self.joint_pos_ref, self.joint_vel_ref), dim=1)
        self.body_pos_ref, self.body_quat_ref = cat("body_pos_w"), cat("body_quat_w")
        self.body_lin_vel_ref, self.body_ang_vel_ref = cat("body_lin_vel_w"), cat("body_ang_vel_w")
        # (3, F, B) x, y, z of the body positions relative to the frame's anchor body (the
        # subtraction the relative bodies start from, done once per frame) and (4, F, B) w, x, y,
        # z of the body quaternions: one gather gives contiguous components
        a = body_names.index(anchor_body)
        pos_parts = self.body_pos_ref.permute(2, 0, 1).contiguous()
        self._body_pos_from_anchor_ref = pos_parts - pos_parts[:, :, a : a + 1]
        self._body_quat_ref_parts = self.body_quat_ref.permute(2, 0, 1).contiguous()
        # (F, 7) the anchor body's position and quaternion: one gather per refresh
        self._anchor_ref = torch.cat((self.body_pos_ref[:, a], self.body_quat_ref[:, a]), dim=1)
        # (F, 16 + 2J) what a reset reads of each frame, in one row: the root body's position,
        # 3 zeros, its linear and angular velocity (the columns of the RSI root noise, so that
        # one add perturbs them all), its quaternion, then the joint positions and velocities
        root = 0  # the first tracked body is the floating base (pelvis)
        self._reset_ref = torch.cat(
            (self.body_pos_ref[:, root], torch.zeros_like(self.body_pos_ref[:, root]), self.body_lin_vel_ref[:, root],
             self.body_ang_vel_ref[:, root], self.body_quat_ref[:, root], self.joint_pos_ref, self.joint_vel_ref),
            dim=1,
        )  # fmt: skip
        self.clip_frames = torch.tensor([c.num_frames for c in clips], dtype=torch.long, device=dev)
        self.clip_offset = torch.cumsum(self.clip_frames, 0) - self.clip_frames
        self.body_names = body_names
        self.anchor_index = a
        self.root_index = root
        control_rate = 1.0 / env.step_dt
        self.sampler = AdaptiveSampler(
            [c.num_frames for c in clips], [int(c.num_frames // control_rate) + 1 for c in clips],
            weights=[i.weight for i in infos], device=dev, **(sampler_kwargs or {}),
        )  # fmt: skip
        n = env.num_envs
        self.clip_index = torch.zeros(n, dtype=torch.long, device=dev)
        self.time_steps = torch.zeros(n, dtype=torch.long, device=dev)
        self._pinned_clip = torch.full((n,), -1, dtype=torch.long, device=dev)
        self._pinned_frame = torch.zeros(n, dtype=torch.long, device=dev)
        self._any_pinned = False  # whether any row is pinned (reset skips the pins when none is)
        self._episodes = torch.zeros(n, dtype=torch.long, device=dev)  # per-row resets ("start" mode)
        # qpos is the free joint then the clip's joints in order (and qvel likewise), as on the
        # G1: a reset's qpos and qvel are then concatenated rather than written into the keyframe
        meta, j = env.robot.meta, self.joint_pos_ref.shape[1]
        self._root_then_joints = (
            env.backend.nq == 7 + j and env.backend.nv == 6 + j
            and torch.equal(meta.qpos_adr.cpu(), torch.arange(7, 7 + j))
            and torch.equal(meta.qvel_adr.cpu(), torch.arange(6, 6 + j))
        )  # fmt: skip
        self._refresh()

    # ------------------------------------------------------------------ the clip list
    @property
    def clips(self) -> tuple[ClipInfo, ...]:
        """The library's clips, in order: ``index``, ``name``, ``num_frames``, ``fps``,
        ``weight``, ``source``, ``duration_s``."""
        return self._clips

    @property
    def clip_names(self) -> list[str]:
        """Name of each clip, in :attr:`clips` order."""
        return [c.name for c in self._clips]

    @property
    def clip_num_frames(self) -> list[int]:
        """Frames of each clip, in :attr:`clips` order."""
        return [c.num_frames for c in self._clips]

    @property
    def num_frames(self) -> int:
        """Frames of all clips together (the clip's frames when there is one)."""
        return int(self.clip_frames.sum())

    def _check_start(self, clips: int | torch.Tensor, frame: int | None = None) -> None:
        """Check a start that :meth:`pin` or :meth:`start_at` was given.

        Args:
            clips: a clip index, or (k,) int64 clip indices (index into :attr:`clips`).
            frame: with one clip index, a frame of that clip to check too; None: no frame check.

        Raises:
            ValueError: one line naming the first clip index (or the frame) out of range and the
                range expected.
        """
        n = len(self._clips)
        ids = torch.as_tensor(clips).reshape(-1)
        bad = ids[(ids < 0) | (ids >= n)]
        if len(bad):
            raise ValueError(f"clip index {int(bad[0])} outside the motion library: expected 0 to {n - 1} ({n} clips)")
        if frame is not None:
            clip = self._clips[int(clips)]
            if not 0 <= int(frame) < clip.num_frames:
                raise ValueError(f"frame {frame} outside clip {clip.name!r}: expected 0 to {clip.num_frames - 1} "
                                 f"({clip.num_frames} frames)")

    def pin(self, env_ids: torch.Tensor, clip: int, frame: int = 0) -> None:
        """Make every later reset of rows ``env_ids`` start clip ``clip`` at ``frame`` (with
        the configured RSI noise), whatever ``sampling`` says, until :meth:`unpin`.

        Raises:
            ValueError: a clip index or frame outside the library.
        """
        self._check_start(clip, frame)
        self._pinned_clip[env_ids] = int(clip)
        self._pinned_frame[env_ids] = int(frame)
        self._any_pinned = bool((self._pinned_clip >= 0).any())

    def unpin(self, env_ids: torch.Tensor) -> None:
        """Give rows ``env_ids`` back to the sampling mode."""
        self._pinned_clip[env_ids] = -1
        self._any_pinned = bool((self._pinned_clip >= 0).any())

    # ------------------------------------------------------------------ reference at time_steps
    @property
    def frame_index(self) -> torch.Tensor:
        """(N,) int64 row of each env's current frame in the stored (concatenated) arrays."""
        return self.clip_offset.index_select(0, self.clip_index) + self.time_steps

    def _refresh(self) -> None:
        # index_select: the same rows as ``ref[t]``, with a fraction of advanced indexing's cost
        t = self.frame_index
        self.command = self._command_ref.index_select(0, t)
        j = self.joint_pos_ref.shape[1]
        self.joint_pos, self.joint_vel = self.command[:, :j], self.command[:, j:]
        # The (N, B) reference bodies are gathered on first read: the observations after a reset
        # read only the anchor, and the next advance refreshes again.
        self._frame, self._bodies = t, {}
        anchor = self._anchor_ref.index_select(0, t)
        self.anchor_pos_w, self.anchor_quat_w = anchor[:, :3], anchor[:, 3:]
        # The relative bodies are computed on first read (terminations and rewards read them after
        # the step's advance; the refresh after a reset is overwritten unread by the next advance),
        # from the robot's anchor as it is now: the backend refills its state tensors in place.
        robot = self.env.robot
        self._delta_pos = robot.body_pos_w[:, self.anchor_index].clone()
        self._delta_pos[:, 2] = self.anchor_pos_w[:, 2]
        self._robot_anchor_quat = robot.body_quat_w[:, self.anchor_index].clone()
        self._relative: tuple[torch.Tensor, torch.Tensor] | None = None

    def _body(self, ref: str) -> torch.Tensor:
        """(N, B, ·) rows of the stored (F, B, ·) array named ``ref`` at each env's frame of the
        last refresh, gathered once per refresh."""
        value = self._bodies.get(ref)
        if value is None:
            value = self._bodies[ref] = getattr(self, ref).index_select(0, self._frame)
        return value

    @property
    def body_pos_w(self) -> torch.Tensor:
        """(N, B, 3) float32 reference body positions, world frame, m."""
        return self._body("body_pos_ref")

    @property
    def body_quat_w(self) -> torch.Tensor:
        """(N, B, 4) float32 reference body orientations, wxyz, world frame."""
        return self._body("body_quat_ref")

    @property
    def body_lin_vel_w(self) -> torch.Tensor:
        """(N, B, 3) float32 reference body linear velocities, world frame, m/s."""
        return self._body("body_lin_vel_ref")

    @property
    def body_ang_vel_w(self) -> torch.Tensor:
        """(N, B, 3) float32 reference body angular velocities, world frame, rad/s."""
        return self._body("body_ang_vel_ref")

    def _relative_bodies(self) -> tuple[Vec3, torch.Tensor]:
        """((N, B) each x, y, z of the positions, m, (4, N, B) w, x, y, z of the quaternions,
        stacked) of the reference bodies moved onto the robot's anchor at the last refresh,
        float32; computed once per refresh."""
        if self._relative is None:
            rel = quat_mul_stacked(self._robot_anchor_quat.T, self.anchor_quat_w.T, conjugate_b=True)
            delta_ori = yaw_quat(rel.T).T[:, :, None]  # (4, N, 1), broadcast over the bodies
            quat = quat_mul_stacked(delta_ori, self._body_quat_ref_parts.index_select(1, self._frame))
            delta_ori = delta_ori.unbind(0)
            # (3, N, B) body positions relative to the reference anchor, as components
            ref_pos = self._body_pos_from_anchor_ref.index_select(1, self._frame)
            rotated = quat_rotate_parts(delta_ori, ref_pos.unbind(0))
            pos = tuple(d + r for d, r in zip(self._delta_pos.T[:, :, None], rotated))
            self._relative = (pos, quat)
        return self._relative

    @property
    def body_pos_relative_w(self) -> torch.Tensor:
        """(N, B, 3) float32 reference body positions moved onto the robot, m."""
        return torch.stack(self._relative_bodies()[0], dim=-1)

    @property
    def body_pos_relative_parts(self) -> Vec3:
        """:attr:`body_pos_relative_w` as its x, y, z components, (N, B) float32 each, m."""
        return self._relative_bodies()[0]

    @property
    def body_quat_relative_w(self) -> torch.Tensor:
        """(N, B, 4) float32 reference body orientations (wxyz) moved onto the robot."""
        return self._relative_bodies()[1].movedim(0, -1).contiguous()

    @property
    def body_quat_relative_parts(self) -> Parts:
        """:attr:`body_quat_relative_w` as its w, x, y, z components, (N, B) float32 each."""
        return self._relative_bodies()[1].unbind(0)

    @property
    def body_quat_relative_stacked(self) -> torch.Tensor:
        """:attr:`body_quat_relative_w` stacked: (4, N, B) float32 w, x, y, z along dim 0
        (:func:`unilab.utils.math.quat_mul_stacked`); read-only."""
        return self._relative_bodies()[1]

    @property
    def clip_ended(self) -> torch.Tensor:
        """(N,) bool rows at their clip's last frame."""
        return self.time_steps >= self.clip_frames[self.clip_index] - 1

    def reference_qpos(self, env_ids: torch.Tensor | None = None) -> torch.Tensor:
        """(n, nq) float32 the robot's qpos in the reference state of rows ``env_ids`` (default
        all) at their current frame, without RSI noise: root from the root body, joints by name;
        e.g. to draw the reference beside the robot."""
        env = self.env
        ids = torch.arange(env.num_envs, device=env.device) if env_ids is None else env_ids
        t = self.frame_index[ids]
        meta = env.robot.meta
        qpos = meta.default_qpos.to(env.device, torch.float32).repeat(len(ids), 1)
        qpos[:, 0:3] = self.body_pos_ref[t, self.root_index]
        qpos[:, 3:7] = self.body_quat_ref[t, self.root_index]
        qpos[:, meta.qpos_adr.to(env.device)] = self.joint_pos_ref[t]
        return qpos

    # ------------------------------------------------------------------ env hooks
    def advance(self, dt: float) -> None:
        """Advance every row one frame (held at its clip's last frame; the ``motion_end``
        termination ends the episode there) and fold the step's failures into the sampler. The env
        calls it right after the physics, so terminations and rewards compare the new state with
        the reference frame of the same time."""
        self.time_steps = torch.minimum(self.time_steps + 1, self.clip_frames[self.clip_index] - 1)
        self.sampler.step()
        self._refresh()

    def reset(self, env_ids: torch.Tensor) -> None:
        """Record where ended episodes failed, draw starts (clip, frame) and put the robot there
        (RSI)."""
        if len(env_ids) == 0:
            return
        tm = getattr(self.env, "termination_manager", None)
        if tm is not None:
            failed = tm.terminated[env_ids]
            self.sampler.record_failures(self.time_steps[env_ids][failed], self.clip_index[env_ids][failed])
        n, dev = len(env_ids), self.env.device
        gen = self.env.generator
        if self.sampling == "adaptive":
            clips, start = self.sampler.sample(n, gen)
        elif self.sampling == "uniform":
            weights = torch.tensor([c.weight for c in self._clips], device=dev)
            clips = torch.multinomial(weights, n, replacement=True, generator=gen)
            u = torch.rand(n, device=dev, generator=gen)
            start = torch.minimum((u * self.clip_frames[clips].float()).long(), self.clip_frames[clips] - 1)
        else:
            clips = (env_ids + self._episodes[env_ids] * self.env.num_envs) % len(self._clips)
            start = torch.zeros(n, dtype=torch.long, device=dev)
        if self._any_pinned:
            pinned_clip = self._pinned_clip[env_ids]
            pinned = pinned_clip >= 0
            clips = torch.where(pinned, pinned_clip, clips)
            start = torch.where(pinned, self._pinned_frame[env_ids], start)
        self._episodes[env_ids] += 1
        self.clip_index[env_ids] = clips
        self.time_steps[env_ids] = start
        self._write_state(env_ids, self.clip_offset.index_select(0, clips) + start)
        self._refresh()

    def start_at(self, env_ids: torch.Tensor, frames: torch.Tensor, clip_ids: torch.Tensor | None = None) -> None:
        """Put rows ``env_ids`` at ``frames`` of clips ``clip_ids`` now, in the reference state
        plus the RSI noise, written to the backend (evaluation plays each clip from chosen frames;
        ``unilab eval``'s tracking suite). The env's observations are not recomputed; to start
        episodes there, :meth:`pin` and reset the env instead.

        Args:
            env_ids: (k,) int64 rows.
            frames: (k,) int64 frames, clamped to each row's clip.
            clip_ids: (k,) int64 clip of each row (index into :attr:`clips`); None: clip 0.

        Raises:
            ValueError: a clip index outside the library.
        """
        dev = self.time_steps.device
        env_ids = env_ids.to(dev)
        if clip_ids is None:
            clips = torch.zeros(len(env_ids), dtype=torch.long, device=dev)
        else:
            clips = clip_ids.to(dev, torch.long)
        self._check_start(clips)
        self.clip_index[env_ids] = clips
        self.time_steps[env_ids] = torch.minimum(frames.to(dev, torch.long).clamp(min=0), self.clip_frames[clips] - 1)
        self.write_reference_state(env_ids)
        self._refresh()

    def metrics(self) -> dict[str, float]:
        """Sampling metrics, logged as ``Metrics/motion/<name>``."""
        return {f"Metrics/motion/{k}": v for k, v in self.sampler.metrics().items()}

    # ------------------------------------------------------------------ RSI
    def _rsi_noise(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The RSI noise of ``n`` rows, ± uniform, float32.

        Returns:
            (n, 12) root noise, columns: position x, y, z (m), roll, pitch, yaw (rad), linear
            velocity x, y, z (m/s), angular velocity x, y, z (rad/s); (n, J) joint noise, rad.
            One ``rand`` call draws the same numbers, in the same order, as one ``rand((n,))``
            per root column followed by ``rand((n, J))`` (the root noise is a (12, n) tensor
            transposed, so each column is contiguous, as a separate draw is).
        """
        j, dev = self.joint_pos_ref.shape[1], self.env.device
        u = 2.0 * torch.rand(n * (12 + j), device=dev, generator=self.env.generator) - 1.0
        root = u[: 12 * n].view(12, n) * self._root_noise_scale
        return root.T, u[12 * n :].view(n, j) * self.noise.joint_pos

    def write_reference_state(self, env_ids: torch.Tensor) -> None:
        """Set rows ``env_ids`` to the reference state at their frame, plus the RSI noise, through
        the backend's reset (keyframe, then qpos/qvel, then forward kinematics)."""
        self._write_state(env_ids, self.frame_index.index_select(0, env_ids))

    def _write_state(self, env_ids: torch.Tensor, frames: torch.Tensor) -> None:
        """:meth:`write_reference_state` of rows ``env_ids`` (k,) int64 at rows ``frames`` (k,)
        int64 of the stored (concatenated) arrays."""
        env, n, dev = self.env, len(env_ids), self.env.device
        ref = self._reset_ref.index_select(0, frames)  # (k, 16 + 2J), see __init__
        j = self.joint_pos_ref.shape[1]
        root_noise, joint_noise = self._rsi_noise(n)
        # position, (the noise's roll, pitch, yaw), linear and angular velocity, world frame
        root = ref[:, :12] + root_noise
        dq = torch.stack(quat_from_euler_xyz_parts(root_noise[:, 3], root_noise[:, 4], root_noise[:, 5]))
        quat = quat_mul_stacked(dq, ref[:, 12:16].T).T  # (k, 4)
        joint_pos = ref[:, 16 : 16 + j] + joint_noise
        if self.soft_joint_limits is not None:
            joint_pos = torch.clamp(joint_pos, self.soft_joint_limits[:, 0], self.soft_joint_limits[:, 1])
        # Free joint: qvel[0:3] world-frame velocity of the body origin, qvel[3:6] body-frame rate.
        ang_b = quat_rotate_inverse(quat, root[:, 9:12])
        if self._root_then_joints:
            qpos = torch.cat((root[:, 0:3], quat, joint_pos), dim=1)
            qvel = torch.cat((root[:, 6:9], ang_b, ref[:, 16 + j :]), dim=1)
        else:
            meta = env.robot.meta
            qpos = meta.default_qpos.to(dev).repeat(n, 1)
            qvel = torch.zeros(n, env.backend.nv, device=dev)
            qpos[:, 0:3], qpos[:, 3:7] = root[:, 0:3], quat
            qpos[:, meta.qpos_adr.to(dev)] = joint_pos
            qvel[:, 0:3], qvel[:, 3:6] = root[:, 6:9], ang_b
            qvel[:, meta.qvel_adr.to(dev)] = ref[:, 16 + j :]
        env.backend.reset(env_ids, qpos=qpos, qvel=qvel)
        env.robot.refresh()
