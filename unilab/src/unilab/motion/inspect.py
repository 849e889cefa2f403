"""``unilab motion inspect``: what in a clip the simulated G1 cannot do, frame by frame.

Each frame of the clip (root pose and joints) is put on the G1 scene the env simulates (robot and
floor plane) and MuJoCo's own collision detection runs on it (``mj_forward``, then
``data.contact``; the distance to the floor by ``mj_geomDistance``). Nothing here re-implements
geometry. Reported:

* **floor penetration**: contacts between a robot geom and the floor deeper than
  ``floor_tolerance_m``, feet (the sole capsules) and other bodies separately: frames and
  deepest point, mm;
* **floating**: frames where no robot geom is within ``float_tolerance_m`` of the floor, and how
  high the lowest geom gets above it (a frame whose lowest geom is in the floor is penetration,
  never floating);
* **self-collision**: robot-robot contacts deeper than ``self_tolerance_m`` on the collision
  model (MuJoCo's contact filtering applies: parent-child pairs and the model's excluded pairs
  never collide), per body pair: frames and deepest penetration;
* **joint speeds** against each joint's motor velocity limit (``g1_constants.MOTORS``);
* **root speeds** (pelvis, world frame) against ``root_lin_speed_max`` / ``root_ang_speed_max``;
* **joint limits**: hard (the joint stops there) and soft (0.9 of the range; the task's
  ``joint_limit`` penalty starts there);
* the frame rate against the control rate and the duration against the episode length.

Every finding past a threshold becomes a warning that says what the policy will experience and
what to do about it (re-import with ``--z-offset``, ``--lift-feet`` or ``--frames``, fix the retargeting).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import mujoco
import numpy as np

from unilab.motion.clip import (
    MotionClip,
    MotionFormatError,
    REQUIRED_KEYS,
    joint_limit_violations,
    load_motion,
)
from unilab.robots import g1
from unilab.robots.g1.g1_constants import JOINT_MOTOR, LINKAGE_MOTOR, MOTORS


@dataclass(frozen=True)
class Thresholds:
    """What counts as a problem (SI units).

    Attributes:
        floor_tolerance_m: a robot geom deeper than this into the floor is penetration
            (MuJoCo's soft contacts let a standing G1 sink about 1 mm).
        float_tolerance_m: a frame whose lowest geom is higher than this above the floor floats.
        self_tolerance_m: a robot-robot contact deeper than this is a self-collision.
        root_lin_speed_max: pelvis speed above this is implausible (m/s; a wrong fps or a cut).
        root_ang_speed_max: pelvis angular speed above this is implausible (rad/s).
        hard_limit_tolerance_rad: a joint this little past its hard limit is warned about with
            the soft-limit joints (MuJoCo's joint limits are soft: a clip recorded in simulation
            passes them by a few mrad under load).
        control_rate_hz: the task's control rate (the clip's fps must equal it).
        episode_length_s: the task's episode length (a longer clip cannot be completed from
            frame 0 in one episode).
    """

    floor_tolerance_m: float = 0.003
    float_tolerance_m: float = 0.010
    self_tolerance_m: float = 0.001
    root_lin_speed_max: float = 4.0
    root_ang_speed_max: float = 8.0
    hard_limit_tolerance_rad: float = 0.02
    control_rate_hz: float = 50.0
    episode_length_s: float = 10.0


def joint_velocity_limit(joint: str) -> float:
    """Motor velocity limit of a G1 joint, rad/s (a linkage joint: one 5020's)."""
    motor = JOINT_MOTOR[joint]
    return MOTORS["5020" if motor == LINKAGE_MOTOR else motor].velocity_limit


def frame_ranges(frames: Sequence[int]) -> list[tuple[int, int]]:
    """Sorted frame indices as inclusive runs: [3, 4, 5, 9] -> [(3, 5), (9, 9)]."""
    runs: list[tuple[int, int]] = []
    for f in sorted(set(int(x) for x in frames)):
        if runs and f == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], f)
        else:
            runs.append((f, f))
    return runs


def format_frames(frames: Sequence[int], limit: int = 6) -> str:
    """'frames 3-5, 9' (at most ``limit`` runs, then '...')."""
    runs = frame_ranges(frames)
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:limit])
    return ("frame " if len(frames) == 1 else "frames ") + text + (", ..." if len(runs) > limit else "")


@dataclass
class ContactFinding:
    """Contacts of one kind (a body pair, or a group of geoms against the floor).

    Attributes:
        what: ``"left_elbow_link / left_hip_yaw_link"`` or ``"feet"`` / ``"other bodies"``.
        frames: frames where it exceeds the tolerance.
        max_depth_mm: deepest penetration over the clip (mm; over every frame, not only
            ``frames``).
        worst_frame: frame of the deepest penetration.
    """

    what: str
    frames: list[int]
    max_depth_mm: float
    worst_frame: int

    def to_dict(self) -> dict[str, Any]:
        return {"what": self.what, "num_frames": len(self.frames),
                "frame_ranges": [list(r) for r in frame_ranges(self.frames)],
                "max_depth_mm": round(self.max_depth_mm, 3), "worst_frame": self.worst_frame}  # fmt: skip


@dataclass
class InspectReport:
    """Everything :func:`inspect_motion` found. Lengths mm, speeds m/s and rad/s.

    Attributes:
        source: the file (or None).
        fps, num_frames, duration_s: the clip.
        joint_names, body_names: the clip's.
        pelvis_z_m: (min, max) pelvis height.
        hard_limits, soft_limits: (joint, clip min, clip max, lower, upper) rad per joint outside
            its hard limits / outside only its soft limits.
        feet_penetration, other_penetration: floor contacts of the sole capsules / other geoms.
        floating_frames: frames whose lowest geom is higher than the float tolerance above the floor.
        max_float_mm: the highest the lowest geom gets above the floor, over every frame (not only
            ``floating_frames``), >= 0: 0 when it never rises above the floor (as penetration's
            ``max_depth_mm`` is 0 when nothing goes into it).
        min_clearance_mm: the lowest the lowest geom gets (negative: into the floor).
        self_collisions: one finding per colliding body pair, most frames first.
        joint_speed: joint -> (max |qvel| rad/s, motor limit rad/s, frames above the limit).
        root_lin_speed_max, root_ang_speed_max: pelvis speeds, maxima over the clip.
        root_fast_frames: frames above the root speed thresholds.
        warnings: one actionable sentence per problem.
        thresholds: the thresholds used.
    """

    source: str | None
    fps: float
    num_frames: int
    duration_s: float
    joint_names: tuple[str, ...]
    body_names: tuple[str, ...]
    pelvis_z_m: tuple[float, float]
    hard_limits: list[tuple[str, float, float, float, float]]
    soft_limits: list[tuple[str, float, float, float, float]]
    feet_penetration: ContactFinding
    other_penetration: ContactFinding
    floating_frames: list[int]
    max_float_mm: float
    min_clearance_mm: float
    self_collisions: list[ContactFinding]
    joint_speed: dict[str, tuple[float, float, list[int]]]
    root_lin_speed_max: float
    root_ang_speed_max: float
    root_fast_frames: list[int]
    thresholds: Thresholds
    warnings: list[str] = field(default_factory=list)
    layout: str | None = None
    source_rate: tuple[int, float] | None = None

    @property
    def self_collision_frames(self) -> list[int]:
        """Frames with any self-collision."""
        return sorted({f for c in self.self_collisions for f in c.frames})

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (``unilab motion inspect --json``)."""
        limits = lambda rows: [  # noqa: E731
            {"joint": j, "min_rad": round(a, 4), "max_rad": round(b, 4), "lower_rad": lo, "upper_rad": hi}
            for j, a, b, lo, hi in rows
        ]
        return {
            "file": self.source,
            "layout": self.layout,
            "source_frames": self.source_rate[0] if self.source_rate else None,
            "source_fps": self.source_rate[1] if self.source_rate else None,
            "fps": self.fps,
            "frames": self.num_frames,
            "duration_s": round(self.duration_s, 4),
            "joints": list(self.joint_names),
            "bodies": list(self.body_names),
            "pelvis_z_m": [round(v, 4) for v in self.pelvis_z_m],
            "joint_limits": {"hard": limits(self.hard_limits), "soft": limits(self.soft_limits)},
            "floor": {
                "feet_penetration": self.feet_penetration.to_dict(),
                "other_penetration": self.other_penetration.to_dict(),
                "floating": {"num_frames": len(self.floating_frames),
                             "frame_ranges": [list(r) for r in frame_ranges(self.floating_frames)],
                             "max_height_mm": round(self.max_float_mm, 3)},
                "min_clearance_mm": round(self.min_clearance_mm, 3),
            },
            "self_collision": {
                "num_frames": len(self.self_collision_frames),
                "pairs": [c.to_dict() for c in self.self_collisions],
            },
            "joint_speed": {
                j: {"max_rad_s": round(v, 4), "limit_rad_s": lim, "frames_above": len(fr)}
                for j, (v, lim, fr) in self.joint_speed.items()
            },
            "root_speed": {"max_lin_m_s": round(self.root_lin_speed_max, 4),
                           "max_ang_rad_s": round(self.root_ang_speed_max, 4),
                           "frames_above": len(self.root_fast_frames)},
            "thresholds": asdict(self.thresholds),
            "warnings": list(self.warnings),
        }  # fmt: skip

    def lines(self) -> list[str]:
        """Human-readable report."""
        out = [f"file:     {self.source}"]
        if self.layout:
            held = (f", {self.source_rate[0]} frames at {self.source_rate[1]:g} fps in the file"
                    if self.source_rate else "")
            out.append(f"layout:   {self.layout}{held} (inspected as `unilab motion import` would write it, "
                       f"at {self.fps:g} fps)")
        out += [
            f"fps:      {self.fps:g}",
            f"frames:   {self.num_frames}",
            f"duration: {self.duration_s:.2f} s",
            f"joints:   {len(self.joint_names)}: {', '.join(self.joint_names)}",
            f"bodies:   {len(self.body_names)}: {', '.join(self.body_names)}",
            f"pelvis z: {self.pelvis_z_m[0]:.3f} .. {self.pelvis_z_m[1]:.3f} m",
            f"joint range violations: {len(self.hard_limits)} outside the hard limits, "
            f"{len(self.soft_limits)} more outside the soft limits ({g1.SOFT_JOINT_POS_LIMIT_FACTOR:g} of the range)",
        ]
        for label, rows in (("hard", self.hard_limits), ("soft", self.soft_limits)):
            for name, qmin, qmax, lo, hi in rows:
                out.append(f"  {label}: {name}: clip [{qmin:.3f}, {qmax:.3f}] rad, limits [{lo:.3f}, {hi:.3f}]")
        t = self.thresholds
        for label, c in (("feet into the floor", self.feet_penetration),
                         ("other bodies into the floor", self.other_penetration)):  # fmt: skip
            where = f": {format_frames(c.frames)}" if c.frames else ""
            out.append(f"{label}: deepest {c.max_depth_mm:.1f} mm; {len(c.frames)} frames beyond "
                       f"{t.floor_tolerance_m * 1e3:g} mm{where}")
        # As the penetration lines: the extreme over the clip, then the frames past the tolerance.
        where = f": {format_frames(self.floating_frames)}" if self.floating_frames else ""
        out.append(f"floating (lowest geom above the floor): highest {self.max_float_mm:.1f} mm; "
                   f"{len(self.floating_frames)} frames beyond {t.float_tolerance_m * 1e3:g} mm{where}")
        out.append(f"self-collision: {len(self.self_collisions)} body pairs in {len(self.self_collision_frames)} "
                   f"frames deeper than {t.self_tolerance_m * 1e3:g} mm")
        for c in self.self_collisions:
            out.append(f"  {c.what}: {format_frames(c.frames)} ({len(c.frames)} frames), deepest "
                       f"{c.max_depth_mm:.1f} mm at frame {c.worst_frame}")
        fastest = max(self.joint_speed.items(), key=lambda kv: kv[1][0] / kv[1][1])
        over = [j for j, (_, _, fr) in self.joint_speed.items() if fr]
        out.append(f"joint speed: max {fastest[1][0]:.2f} rad/s ({fastest[0]}, "
                   f"{100 * fastest[1][0] / fastest[1][1]:.0f} % of its {fastest[1][1]:g} rad/s motor limit); "
                   f"{len(over)} joints above their limit")
        out.append(f"root speed: max {self.root_lin_speed_max:.2f} m/s, {self.root_ang_speed_max:.2f} rad/s")
        out.append(f"warnings: {len(self.warnings) or 'none'}")
        out += [f"  - {w}" for w in self.warnings]
        return out


def clip_qpos(clip: MotionClip, model: mujoco.MjModel) -> np.ndarray:
    """(T, nq) qpos of ``model`` for every frame of a clip: the free joint from the clip's
    ``pelvis`` body pose, hinge joints by name (the model's other joints at ``qpos0``).

    Raises:
        MotionFormatError: the clip has no ``pelvis`` body or lacks a joint of the model.
    """
    if g1.PELVIS_BODY not in clip.body_names:
        raise MotionFormatError(clip.source, "body_names", f"expected the root body {g1.PELVIS_BODY!r} (the free joint's)")
    p = clip.body_names.index(g1.PELVIS_BODY)
    qpos = np.tile(model.qpos0, (clip.num_frames, 1))
    for j in range(model.njnt):
        adr = model.jnt_qposadr[j]
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            qpos[:, adr:adr + 3] = clip.body_pos_w[:, p]
            qpos[:, adr + 3:adr + 7] = clip.body_quat_w[:, p]
        elif model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE:
            name = model.joint(j).name
            if name not in clip.joint_names:
                raise MotionFormatError(clip.source, "joint_names", f"expected the model's joint {name!r}")
            qpos[:, adr] = clip.joint_pos[:, clip.joint_names.index(name)]
    return qpos


def render_clip(clip: MotionClip, path: str | os.PathLike[str], *, robot_mjcf: str | os.PathLike[str] | None = None,
                width: int = 640, height: int = 480, fps: float | None = None):
    """Write an mp4 of the clip played kinematically on the G1 (the pose of every frame, no
    physics), from the tracking camera, so a clip can be looked at before training on it.

    Args:
        clip: the clip; its ``pelvis`` body gives the root pose.
        path: the mp4 to write (its folder is created; an existing file is replaced).
        robot_mjcf: a user G1 MJCF (default: the built-in G1), with the task's floor added.
        width, height: frame size, pixels (even, >= 16).
        fps: frames per second: the clip's rate divided by a whole number (default: the highest
            such rate up to 30, e.g. 25 for a 50 fps clip).

    Returns:
        :class:`unilab.deploy.video.VideoResult`.

    Raises:
        MotionFormatError: the clip has no pelvis body or lacks a joint of the model.
        unilab.deploy.video.VideoError: bad video settings, no encoder, or no OpenGL to render.
    """
    from unilab.deploy.video import frame_stride, render_video

    spec = g1.g1_scene_spec(with_floor=True, mjcf=robot_mjcf)
    xml = spec.to_xml()
    stride = frame_stride(clip.fps, fps)
    qpos = clip_qpos(clip, spec.compile())[::stride]
    return render_video(xml, qpos, path, fps=clip.fps / stride, width=width, height=height)


def _finding(what: str, depth: np.ndarray, tol: float) -> ContactFinding:
    """From (T,) per-frame deepest penetration (m, 0 where none)."""
    frames = np.flatnonzero(depth > tol).tolist()
    worst = int(depth.argmax())
    return ContactFinding(what, frames, float(depth[worst]) * 1e3, worst)


def inspect_motion(
    clip: MotionClip,
    *,
    robot_mjcf: str | None = None,
    thresholds: Thresholds = Thresholds(),
    layout: str | None = None,
    source_rate: tuple[int, float] | None = None,
) -> InspectReport:
    """Check a clip on the simulated G1 (see the module docstring).

    Args:
        clip: the clip; its ``pelvis`` body gives the root pose.
        robot_mjcf: a user G1 MJCF (default: the built-in G1), with the task's floor added.
        thresholds: what counts as a problem.
        layout: the source layout when the clip came through the importer (for the report).
        source_rate: (frames, fps) of that source file, before the importer resampled it.

    Raises:
        MotionFormatError: the clip has no pelvis body or lacks a joint of the model.
    """
    t = thresholds
    model = g1.g1_model(with_floor=True, mjcf=robot_mjcf)
    data = mujoco.MjData(model)
    qpos = clip_qpos(clip, model)
    floor = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
    robot_geoms = [g for g in range(model.ngeom) if model.geom_bodyid[g] != 0 and
                   (model.geom_contype[g] or model.geom_conaffinity[g])]  # fmt: skip
    feet = {mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, n) for n in g1.FOOT_GEOM_NAMES} - {-1}
    n = clip.num_frames
    feet_depth, other_depth, clearance = np.zeros(n), np.zeros(n), np.full(n, np.inf)
    pairs: dict[tuple[str, str], np.ndarray] = {}
    fromto = np.zeros(6)
    for i in range(n):
        data.qpos[:] = qpos[i]
        data.qvel[:] = 0.0
        mujoco.mj_forward(model, data)
        con = data.contact
        for (g_a, g_b), dist in zip(con.geom[: data.ncon].tolist(), con.dist[: data.ncon].tolist()):
            depth = max(-dist, 0.0)
            if floor in (g_a, g_b):
                robot = g_b if g_a == floor else g_a
                arr = feet_depth if robot in feet else other_depth
                arr[i] = max(arr[i], depth)
                continue
            b_a, b_b = sorted((model.body(model.geom_bodyid[g_a]).name, model.body(model.geom_bodyid[g_b]).name))
            row = pairs.setdefault((b_a, b_b), np.zeros(n))
            row[i] = max(row[i], depth)
        if floor >= 0:
            for g in robot_geoms:
                d = mujoco.mj_geomDistance(model, data, g, floor, t.float_tolerance_m + 1.0, fromto)
                clearance[i] = min(clearance[i], d)
    if floor < 0:
        clearance[:] = 0.0
    self_hits = [_finding(f"{a} / {b}", depth, t.self_tolerance_m) for (a, b), depth in pairs.items()]
    self_hits = sorted((c for c in self_hits if c.frames), key=lambda c: (-len(c.frames), -c.max_depth_mm))

    # speeds: joint velocities of the clip; root velocity of the pelvis body (world frame)
    joint_speed = {}
    for j, name in enumerate(clip.joint_names):
        if name not in JOINT_MOTOR:
            continue
        v = np.abs(clip.joint_vel[:, j])
        lim = joint_velocity_limit(name)
        joint_speed[name] = (float(v.max()), lim, np.flatnonzero(v > lim).tolist())
    p = clip.body_names.index(g1.PELVIS_BODY)
    lin = np.linalg.norm(clip.body_lin_vel_w[:, p], axis=1)
    ang = np.linalg.norm(clip.body_ang_vel_w[:, p], axis=1)
    fast = np.flatnonzero((lin > t.root_lin_speed_max) | (ang > t.root_ang_speed_max)).tolist()

    hard = joint_limit_violations(clip, g1.JOINT_RANGE)
    soft_factor = g1.SOFT_JOINT_POS_LIMIT_FACTOR
    soft_range = {j: (0.5 * (lo + hi) - 0.5 * (hi - lo) * soft_factor, 0.5 * (lo + hi) + 0.5 * (hi - lo) * soft_factor)
                  for j, (lo, hi) in g1.JOINT_RANGE.items()}  # fmt: skip
    hard_names = {h[0] for h in hard}
    soft = [v for v in joint_limit_violations(clip, soft_range) if v[0] not in hard_names]
    soft = [(j, a, b, *g1.JOINT_RANGE[j]) for j, a, b, _, _ in soft]
    z = clip.body_pos_w[:, p, 2]
    report = InspectReport(
        source=clip.source, fps=clip.fps, num_frames=n, duration_s=clip.duration_s,
        joint_names=clip.joint_names, body_names=clip.body_names,
        pelvis_z_m=(float(z.min()), float(z.max())), hard_limits=hard, soft_limits=soft,
        feet_penetration=_finding("feet", feet_depth, t.floor_tolerance_m),
        other_penetration=_finding("other bodies", other_depth, t.floor_tolerance_m),
        floating_frames=np.flatnonzero(clearance > t.float_tolerance_m).tolist(),
        max_float_mm=max(0.0, float(clearance.max())) * 1e3, min_clearance_mm=float(clearance.min()) * 1e3,
        self_collisions=self_hits, joint_speed=joint_speed,
        root_lin_speed_max=float(lin.max()), root_ang_speed_max=float(ang.max()), root_fast_frames=fast,
        thresholds=t, layout=layout, source_rate=source_rate,
    )  # fmt: skip
    report.warnings = _warnings(report)
    return report


def _warnings(r: InspectReport) -> list[str]:
    """One actionable sentence per problem in ``r``."""
    t, out = r.thresholds, []
    if abs(r.fps - t.control_rate_hz) > 1e-3:
        out.append(f"the clip is at {r.fps:g} fps, the task runs at {t.control_rate_hz:g} Hz and refuses it: "
                   f"re-import it with --out-fps {t.control_rate_hz:g}")
    if r.duration_s > t.episode_length_s + 1e-9:
        end = int(round(t.episode_length_s * r.fps))
        out.append(f"the clip lasts {r.duration_s:.2f} s, longer than the {t.episode_length_s:g} s episode: from "
                   f"frame 0 an episode times out before the end; split it (import --frames 0:{end + 1} and "
                   f"--frames {end}:) or raise env.episode_length_s")
    feet, other = r.feet_penetration, r.other_penetration
    pen_frames = sorted(set(feet.frames) | set(other.frames))
    if pen_frames:
        deepest = max(feet.max_depth_mm, other.max_depth_mm)
        who = "the feet" if feet.frames and not other.frames else ("other bodies" if not feet.frames else "the robot")
        fix = (f"re-import with --z-offset {deepest / 1e3:.3f} to lift it"
               if not r.floating_frames or r.max_float_mm < 1.0 else
               "its height is inconsistent (it also floats elsewhere): fix the retargeting's ground height")
        if feet.frames:
            fix += " (or with --lift-feet, which lifts each frame by its own sole depth)"
        verb = "goes" if who == "the robot" else "go"
        out.append(f"{who} {verb} up to {deepest:.1f} mm into the floor in {len(pen_frames)} frames "
                   f"({format_frames(pen_frames)}): the reference state cannot be reached there and the "
                   f"reset pushes the robot up; {fix}")
    if r.floating_frames:
        fix = (f"if it has no jumps, re-import with --z-offset {-r.min_clearance_mm / 1e3:.3f} to lower it"
               if r.min_clearance_mm > 0 else "if it has no jumps, fix the retargeting's ground height")
        out.append(f"nothing touches the floor in {len(r.floating_frames)} frames "
                   f"({format_frames(r.floating_frames)}), up to {r.max_float_mm:.1f} mm above it; {fix}")
    if r.self_collisions:
        worst = max(r.self_collisions, key=lambda c: c.max_depth_mm)
        out.append(f"the body interpenetrates itself on the collision model in {len(r.self_collision_frames)} "
                   f"frames ({len(r.self_collisions)} body pairs; deepest {worst.max_depth_mm:.1f} mm, "
                   f"{worst.what}, frame {worst.worst_frame}): the simulated robot cannot follow those poses and "
                   f"the task penalizes self-contact; fix the retargeting or cut them with --frames")
    tol = t.hard_limit_tolerance_rad
    far = [h for h in r.hard_limits if h[1] < h[3] - tol or h[2] > h[4] + tol]
    near = [h for h in r.hard_limits if h not in far]
    if far:
        names = ", ".join(f"{h[0]} by {max(h[3] - h[1], h[2] - h[4]):.3f} rad" for h in far)
        out.append(f"{len(far)} joints leave their hard limits ({names}): the simulated joints stop "
                   f"there; fix the retargeting (joints more than 0.1 rad outside make the task refuse the clip)")
    if r.soft_limits or near:
        names = ", ".join(s[0] for s in near + r.soft_limits)
        out.append(f"{len(near) + len(r.soft_limits)} joints leave their soft limits ({names}): the task's "
                   f"joint_limit penalty applies while the policy follows them")
    over = {j: v for j, v in r.joint_speed.items() if v[2]}
    if over:
        j, (v, lim, frames) = max(over.items(), key=lambda kv: kv[1][0] / kv[1][1])
        out.append(f"{len(over)} joints move faster than their motors allow (worst {j}: {v:.1f} rad/s > "
                   f"{lim:g} rad/s, {format_frames(frames)}): slow the clip down (import --out-fps keeps "
                   f"the timing; retime or smooth the source) or expect the policy to lag there")
    if r.root_fast_frames:
        out.append(f"the root moves faster than {t.root_lin_speed_max:g} m/s or {t.root_ang_speed_max:g} rad/s in "
                   f"{len(r.root_fast_frames)} frames ({format_frames(r.root_fast_frames)}; max "
                   f"{r.root_lin_speed_max:.1f} m/s, {r.root_ang_speed_max:.1f} rad/s): check the source fps "
                   f"(import --fps) or cut a jump between takes with --frames")
    return out


def load_for_inspection(
    path: str | os.PathLike[str], *, fps: float | None = None, joint_order: str | None = None,
    robot_mjcf: str | None = None, quat_order: str | None = None,
) -> tuple[MotionClip, str | None, tuple[int, float] | None]:
    """The clip to inspect: a complete clip npz as stored (checked by :func:`load_motion`),
    anything else as ``unilab motion import`` would convert it (at 50 fps).

    Returns:
        (clip, the source layout and the source file's (frames, fps) when it went through the
        importer, else None and None).

    Raises:
        MotionFormatError: an unreadable or invalid file. A clip npz of this project's format
            (one that names its bodies, ``body_names``, which no other layout the importer reads
            does) that lacks a required key the importer cannot do without is refused naming that
            key and the keys a clip holds (the importer's check,
            :func:`~unilab.motion.clip.missing_key_error`), not with an account of its layouts.
    """
    from unilab.motion.importers import import_motion

    path = Path(path)
    keys: list[str] | None = None  # the npz's keys, when it is one numpy can open
    if path.is_file() and path.suffix.lower() == ".npz":
        try:
            with np.load(path, allow_pickle=False) as data:
                keys = list(data.files)
        except Exception:  # noqa: BLE001 - the importer reports an unreadable file
            keys = None
    complete = keys is not None and all(k in keys for k in REQUIRED_KEYS)
    if complete and fps is None and joint_order is None and quat_order is None:
        return load_motion(path, joint_names=g1.G1_JOINT_NAMES), None, None
    result = import_motion(path, fps=fps, joint_order=joint_order, robot_mjcf=robot_mjcf, quat_order=quat_order)
    return result.clip, result.layout, (result.source_frames, result.source_fps)


__all__ = [
    "ContactFinding",
    "InspectReport",
    "Thresholds",
    "clip_qpos",
    "format_frames",
    "frame_ranges",
    "inspect_motion",
    "joint_velocity_limit",
    "load_for_inspection",
]
