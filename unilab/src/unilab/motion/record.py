"""``unilab motion record``: roll a walking policy out under a scripted velocity command and save
the motion as a clip, so stepping clips (walk, sidestep, turn, start and stop) are feasible in
our simulator by construction.

The command script is a list of segments, each held for its duration:

* YAML (or JSON): ``segments: [{duration: 1.0, vx: 0.0, vy: 0.0, yaw_rate: 0.0}, ...]`` or the
  bare list; a missing velocity is 0;
* CSV: one segment per row, ``duration,vx,vy,yaw_rate`` (s, m/s, m/s, rad/s; base frame), an
  optional header row.

The run's env is rebuilt with one world and the task's play settings (no observation noise, no
pushes, the start pose not shifted; :data:`unilab.deploy.loading.PLAY_OVERRIDES`), its episode
made long enough for the whole script, and its deterministic policy acts. Before each segment
the task's velocity command is set to the segment's (its resampling timer stopped), so the
policy observes exactly the script. qpos is recorded after the reset and after every env step
(the control rate, 50 fps), then turned into a clip by :func:`unilab.motion.fk_motion` on the
G1, keeping the bodies ``g1_motion_tracking`` tracks. The npz also holds ``command_vel`` (T, 3):
the command in force when each frame was reached (frame 0: the first segment's).
Recording starts after ``settle_s`` seconds of standing (zero command): the reset pose is
dropped from a few centimetres and lands.

By default each frame whose soles sank into the floor is lifted by exactly that depth
(:func:`unilab.motion.kinematics.lift_feet`) before the forward kinematics: MuJoCo's contacts are
soft, so at heel strike the simulated soles go 1-2 cm into the floor, a state the robot placed
on the reference could not be put in.

A fall (a termination) or a time-out ends the recording without writing anything: a clip of a
fall is not a motion to track.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Sequence

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from unilab.motion.clip import MotionClip, MotionFormatError
from unilab.motion.kinematics import fk_motion, lift_feet as lift_feet_qpos
from unilab.robots import g1


class Segment(BaseModel):
    """One command segment: base-frame velocities held for ``duration`` seconds."""

    model_config = ConfigDict(extra="forbid")
    duration: float = Field(..., gt=0.0, description="s")
    vx: float = Field(0.0, description="forward velocity, m/s")
    vy: float = Field(0.0, description="leftward velocity, m/s")
    yaw_rate: float = Field(0.0, description="yaw rate, rad/s (counter-clockwise)")


class _Script(BaseModel):
    model_config = ConfigDict(extra="forbid")
    segments: list[Segment] = Field(..., min_length=1)


def read_command_script(path: str | os.PathLike[str]) -> list[Segment]:
    """The segments of a command script (YAML/JSON or CSV; see the module docstring).

    Raises:
        MotionFormatError: unreadable, unparsable, or a segment that does not validate; the key
            names the segment (``segments[2].duration``).
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise MotionFormatError(path, "--commands", f"cannot read the command script ({exc.strerror})") from None
    expected = "segments of {duration: s > 0, vx: m/s, vy: m/s, yaw_rate: rad/s}"
    if path.suffix.lower() == ".csv":
        rows = [r for r in csv.reader(io.StringIO(text)) if r and any(c.strip() for c in r)]
        if rows and not _numeric(rows[0][0]):
            rows = rows[1:]  # header
        raw = []
        for i, row in enumerate(rows):
            if len(row) != 4 or not all(_numeric(c) for c in row):
                raise MotionFormatError(path, f"row {i + 1}", f"expected 4 numbers duration,vx,vy,yaw_rate, got {row}")
            raw.append(dict(zip(("duration", "vx", "vy", "yaw_rate"), (float(c) for c in row))))
        raw = {"segments": raw}
    else:
        try:
            if path.suffix.lower() == ".json":
                raw = json.loads(text)
            else:
                import yaml

                raw = yaml.safe_load(text)
        except Exception as exc:  # noqa: BLE001 - json / yaml errors: one line
            reason = str(exc).splitlines()[0]
            raise MotionFormatError(path, "--commands", f"expected YAML or JSON {expected} ({reason})") from None
        if isinstance(raw, list):
            raw = {"segments": raw}
    try:
        return _Script.model_validate(raw).segments
    except ValidationError as exc:
        err = exc.errors()[0]
        key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".") or "segments"
        raise MotionFormatError(path, key, f"{err['msg'].lower()} (got {err.get('input')!r}); expected {expected}") from None


def _numeric(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


@dataclass
class Recording:
    """What :func:`record` produced.

    Attributes:
        clip: the clip (50 fps at the default control rate; the tracked bodies).
        command_vel: (T, 3) float32 the command in force at each frame (vx, vy, yaw_rate).
        segments: the script.
        run_dir: the run whose policy walked.
        checkpoint: its checkpoint file.
        lift: (T,) m the root was lifted at each frame (:func:`~unilab.motion.kinematics.lift_feet`),
            or None when lifting was off.
    """

    clip: MotionClip
    command_vel: np.ndarray
    segments: list[Segment]
    run_dir: Path
    checkpoint: Path
    lift: np.ndarray | None = None

    def save(self, path: str | os.PathLike[str] | BinaryIO) -> None:
        """The clip npz (float32) plus ``command_vel``."""
        self.clip.save(path, command_vel=self.command_vel.astype(np.float32))


class RecordError(RuntimeError):
    """The policy fell or timed out during the recording (nothing is written)."""


def _velocity_command(env, task: str):
    """The env's velocity command: the command with a (N, 3) ``command`` and ``ranges``."""
    for name, cmd in getattr(env, "commands", {}).items():
        value = getattr(cmd, "command", None)
        if hasattr(cmd, "ranges") and hasattr(cmd, "time_left") and isinstance(value, torch.Tensor) and value.shape[-1] == 3:
            return name, cmd
    from unilab.train import UserError

    raise UserError(f"the run's task {task!r} has no velocity command; record needs a walking task such as g1_walk_flat")


def record(
    run: str,
    segments: Sequence[Segment],
    *,
    checkpoint: str | None = None,
    log_dir: str | Path = "logs",
    overrides: Sequence[str] = (),
    body_names: Sequence[str] | None = None,
    settle_s: float = 1.0,
    lift_feet: bool = True,
) -> Recording:
    """Roll the run's deterministic policy out under ``segments`` and make a clip of it.

    Args:
        run: run directory or ``latest``.
        segments: the command script (:func:`read_command_script`).
        checkpoint: checkpoint in the run (default ``model_last.pt``).
        log_dir: where ``latest`` looks.
        overrides: ``key=value`` over the run's config and the play settings.
        body_names: bodies to keep (default: those ``g1_motion_tracking`` tracks).
        settle_s: seconds the policy stands (zero command) after the reset before recording
            starts: the reset pose is dropped from a few cm and lands.
        lift_feet: lift each frame whose soles sank into the floor by that depth (see the
            module docstring).

    Raises:
        UserError: no such run or checkpoint, a task without a velocity command, bad overrides.
        RecordError: the policy fell or timed out (the message gives when, and in which segment).
    """
    from dataclasses import replace as dc_replace

    from unilab.deploy.loading import load_run, make_env, make_policy
    from unilab.envs.mdp.commands import VelocityCommandRanges
    from unilab.tasks.g1_motion_tracking.env_cfg import TRACKED_BODIES

    loaded = load_run(run, checkpoint, log_dir=log_dir, overrides=list(overrides))
    if not (math.isfinite(settle_s) and settle_s >= 0.0):
        raise MotionFormatError(None, "--settle", f"expected seconds >= 0, got {settle_s}")
    total_s = settle_s + sum(s.duration for s in segments)
    if hasattr(loaded.cfg.env, "episode_length_s"):  # the whole script in one episode
        loaded.cfg.env = loaded.cfg.env.model_copy(update={"episode_length_s": total_s + 1.0})
    env = make_env(loaded, 1)
    try:
        _, cmd = _velocity_command(env, loaded.task)
        policy, group = make_policy(loaded, env)
        rate = 1.0 / float(env.step_dt)
        meta = env.robot.meta
        adr = [int(meta.qpos_adr[list(meta.joint_names).index(j)]) for j in g1.G1_JOINT_NAMES]

        def set_command(seg: Segment) -> None:
            target = (seg.vx, seg.vx)
            cmd.ranges = dc_replace(
                cmd.ranges if isinstance(cmd.ranges, VelocityCommandRanges) else VelocityCommandRanges(),
                lin_vel_x=target, lin_vel_y=(seg.vy, seg.vy), ang_vel_z=(seg.yaw_rate, seg.yaw_rate),
                resampling_time_s=(1e9, 1e9), standing_fraction=0.0, lin_vel_deadband=0.0,
            )  # fmt: skip
            cmd.command[:] = torch.tensor([seg.vx, seg.vy, seg.yaw_rate], dtype=cmd.command.dtype)
            cmd.is_standing[:] = seg.vx == 0.0 and seg.vy == 0.0 and seg.yaw_rate == 0.0
            cmd.time_left[:] = 1e9

        def frame() -> np.ndarray:
            q = env.backend.qpos[0].to("cpu", torch.float64).numpy()
            return np.concatenate((q[0:7], q[adr]))

        stand = Segment(duration=max(settle_s, 1.0 / rate))
        set_command(stand if settle_s > 0 else segments[0])
        obs = env.reset()  # draws from the fixed ranges
        qpos, commands = [], []
        t = 0
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        plan = ([(0, stand, int(round(settle_s * rate)))] if settle_s > 0 else []) + [
            (k + 1, seg, int(round(seg.duration * rate))) for k, seg in enumerate(segments)
        ]
        try:
            with torch.no_grad():
                for k, seg, steps in plan:
                    set_command(seg)
                    if k == 1:  # recording starts with the first segment
                        qpos, commands = [frame()], [cmd.command[0].cpu().numpy().copy()]
                    for _ in range(steps):
                        actions = policy(obs[group].to("cpu", torch.float32)).to(env.device)
                        obs, _, terminated, truncated, _ = env.step(actions)
                        t += 1
                        if bool(terminated[0]) or bool(truncated[0]):
                            what = "fell" if bool(terminated[0]) else "timed out"
                            where = "while settling" if k == 0 else (
                                f"in segment {k} of {len(segments)} (vx {seg.vx:g}, vy {seg.vy:g}, "
                                f"yaw_rate {seg.yaw_rate:g})"
                            )  # fmt: skip
                            raise RecordError(f"the policy {what} at {t / rate:.2f} s {where}; no clip written")
                        if k > 0:
                            qpos.append(frame())
                            commands.append(cmd.command[0].cpu().numpy().copy())
        finally:
            torch.set_num_threads(threads)
    finally:
        env.close()
    qpos, lift = np.stack(qpos), None
    if lift_feet:
        qpos, lift = lift_feet_qpos(qpos, robot_mjcf=loaded.cfg.robot.mjcf)
    clip = fk_motion(qpos, rate, robot_mjcf=loaded.cfg.robot.mjcf, source=f"record {loaded.run_dir}")
    bodies = tuple(body_names) if body_names is not None else TRACKED_BODIES
    clip = clip.select(clip.joint_names, bodies)
    return Recording(clip, np.stack(commands).astype(np.float32), list(segments), loaded.run_dir, loaded.checkpoint,
                     lift)


__all__ = ["RecordError", "Recording", "Segment", "read_command_script", "record"]
