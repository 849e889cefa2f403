"""``unilab motion``: import a clip from the layouts users bring, inspect it on the simulated G1,
record one from a walking policy. Added to the ``unilab`` command by :mod:`unilab.cli`.

    unilab motion import dance.csv --out dance.npz
    unilab motion import clip.npz --out ours.npz --joint-order isaaclab
    unilab motion inspect dance.npz --json
    unilab motion record logs/sac/g1_walk_flat/RUN --commands walk.yaml --out walk.npz

Bad input prints one ``error:`` line and exits with code 2.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import BinaryIO, Callable, List, Optional

import typer

from unilab.cli_help import HelpCommand, HelpGroup

motion_app = typer.Typer(
    cls=HelpGroup,
    no_args_is_help=True,
    help="Motion clips for g1_motion_tracking: import, inspect, record.",
)


def _fail(message: str, code: int = 2) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _out_path(out: str) -> Path:
    """The file ``--out`` names, checked before any work: a name ending in ``.npz`` (any case) that
    is not a folder, below no file. The file is written under exactly that name, missing folders
    created (:func:`_write_npz`).

    Raises:
        typer.Exit: (code 2, after one ``error:`` line) a folder, another suffix, or a parent that
            is a file.
    """
    path = Path(out).expanduser()
    if path.is_dir():
        _fail(f"--out {out}: is a folder; expected the .npz file to write, e.g. {path / 'clip.npz'}")
    if path.suffix.lower() != ".npz":
        got = repr(path.suffix) if path.suffix else "no suffix"
        _fail(f"--out {out}: expected a file name ending in .npz, got {got}")
    existing = next(p for p in path.absolute().parents if p.exists())  # the folder the missing ones go in
    if not existing.is_dir():
        _fail(f"--out {out}: {existing} is a file, not a folder; expected the .npz to go in a folder")
    return path


def _write_npz(path: Path, save: Callable[[BinaryIO], None]) -> None:
    """Write what ``save`` puts in a binary file at ``path``, atomically, creating its folder (as
    ``unilab export --output`` and ``eval --json`` do).

    Raises:
        typer.Exit: (code 2, after one ``error:`` line) the folder or the file cannot be written.
    """
    from unilab.runs import atomic_write, os_error_line

    buffer = io.BytesIO()
    save(buffer)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, buffer.getvalue())
    except OSError as exc:
        _fail(f"--out {path}: not written: {os_error_line(exc)}")


@motion_app.command("import", cls=HelpCommand)
def motion_import(
    source: str = typer.Argument(
        ..., help="LAFAN1-style CSV, npz with the root pose in joint_pos, or BeyondMimic-style npz"
    ),
    out: str = typer.Option(..., "--out", "-o", help="npz to write (ends in .npz; a missing folder is created)"),
    fps: Optional[float] = typer.Option(None, "--fps", help="frame rate of the source (default: the npz's fps; CSV 30)"),
    out_fps: float = typer.Option(50.0, "--out-fps", help="frame rate of the npz (the control rate)"),
    joint_order: Optional[str] = typer.Option(
        None, "--joint-order",
        help="joint order of a file without joint_names: unitree, isaaclab, NAME,NAME,... or @FILE",
    ),
    quat_order: Optional[str] = typer.Option(
        None, "--quat-order",
        help="order of the file's root quaternion: xyzw or wxyz (default: the layout's, CSV xyzw, npz wxyz)",
    ),
    z_offset: float = typer.Option(0.0, "--z-offset", help="added to the root height, m"),
    frames: Optional[str] = typer.Option(None, "--frames", help="START:END output frames to keep"),
    lift_feet: bool = typer.Option(
        False, "--lift-feet", help="raise the root of each frame whose soles go into the floor by that depth"
    ),
    robot_mjcf: Optional[str] = typer.Option(
        None, "--robot-mjcf", help="G1 MJCF for forward kinematics (default: the built-in G1)"
    ),
) -> None:
    """Convert a clip into a motion npz: detect its layout, match joints by name, resample, and
    compute body poses and velocities by forward kinematics on the G1.

    Exit 2 on a bad file or an --out that is a folder or does not end in .npz.
    """
    from unilab.motion import MotionFormatError, validate_motion
    from unilab.motion.importers import import_motion
    from unilab.motion.inspect import inspect_motion
    from unilab.robots import g1

    out_path = _out_path(out)
    try:
        result = import_motion(source, fps=fps, out_fps=out_fps, joint_order=joint_order,
                               robot_mjcf=robot_mjcf, z_offset=z_offset, frames=frames,
                               lift_feet=lift_feet, quat_order=quat_order)
        clip = result.clip
        validate_motion(clip, joint_names=g1.G1_JOINT_NAMES, joint_limits=g1.JOINT_RANGE)
    except MotionFormatError as exc:
        _fail(str(exc))
    typer.echo(f"read {source}: {result.layout}, {result.source_frames} frames at {result.source_fps:g} fps, "
               f"joint order from {result.joint_order}")
    for note in result.notes:
        typer.echo(f"  note: {note}")
    if result.body_deviation_m is not None and result.body_deviation_m < 5e-5:
        typer.echo("  stored body positions match forward kinematics on the G1 (within 0.05 mm); bodies recomputed")
    elif result.body_deviation_m is not None:
        typer.echo(f"  stored body positions differ from forward kinematics on the G1 by up to "
                   f"{result.body_deviation_m * 1e3:.1f} mm ({result.body_deviation_body}); bodies recomputed")
    _write_npz(out_path, clip.save)
    typer.echo(f"wrote {out_path}: {clip.num_frames} frames at {clip.fps:g} fps ({clip.duration_s:.2f} s), "
               f"{len(clip.joint_names)} joints, {len(clip.body_names)} bodies")
    report = inspect_motion(clip, robot_mjcf=robot_mjcf)
    for warning in report.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if report.warnings:
        typer.echo(f"details: unilab motion inspect {out_path}", err=True)


@motion_app.command("inspect", cls=HelpCommand)
def motion_inspect(
    path: str = typer.Argument(
        ..., help="motion npz, any file `unilab motion import` reads, or a shipped clip's name (squat)"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the report as JSON"),
    fps: Optional[float] = typer.Option(None, "--fps", help="frame rate of a source file (as for import)"),
    joint_order: Optional[str] = typer.Option(None, "--joint-order", help="as for import"),
    quat_order: Optional[str] = typer.Option(None, "--quat-order", help="as for import"),
    robot_mjcf: Optional[str] = typer.Option(
        None, "--robot-mjcf", help="G1 MJCF to check on (default: the built-in G1)"
    ),
    video: Optional[str] = typer.Option(
        None, "--video", help="also write an mp4 of the clip played on the G1 (poses only, no physics)"
    ),
    width: int = typer.Option(640, "--width", help="video frame width, pixels (even)"),
    height: int = typer.Option(480, "--height", help="video frame height, pixels (even)"),
) -> None:
    """Check a clip on the simulated G1: floor penetration and floating, self-collision on the
    collision model, joint and root speeds, joint limits; warnings say what to do.

    With `--video`, also render the clip frame by frame on the G1 from the tracking camera (25 fps
    for a 50 fps clip), to look at before training.

    A file that is not a complete clip npz is inspected as `unilab motion import` would write it.
    A shipped clip's name (as `env.motion.file` takes it) inspects that clip, unless a file of
    that name is in the working directory.
    Exit 2 when the file cannot be read as a clip for the G1, or the video cannot be written.
    """
    import json

    from unilab.deploy.video import VideoError
    from unilab.motion.clip import MotionFormatError
    from unilab.motion.inspect import inspect_motion, load_for_inspection, render_clip
    from unilab.motion.library import MANIFEST_SUFFIXES, library_entries
    from unilab.tasks.g1_motion_tracking.config import SHIPPED, shipped_clip_names, shipped_motion

    shipped = shipped_motion(path)
    names = ", ".join(shipped_clip_names())
    if shipped is not None and path == SHIPPED:
        _fail(f"motion file {path!r}: expected one clip; the shipped set holds {names}: inspect one by name")
    if shipped is not None:
        path = str(shipped)
    elif not Path(path).exists():
        _fail(f"motion file {path!r}: no such file; expected a motion file or a shipped clip's name ({names})")
    if Path(path).is_dir() or Path(path).suffix.lower() in MANIFEST_SUFFIXES:  # a set of clips, as training takes
        try:
            clips = [str(file) for file, _, _ in library_entries(path)]
        except MotionFormatError as exc:
            _fail(str(exc))
        kind, n = "folder" if Path(path).is_dir() else "manifest", len(clips)
        _fail(f"motion file {path!r}: a {kind} of {n} clip{'s' * (n != 1)}; expected one clip: inspect each of "
              f"its files, e.g. `unilab motion inspect {clips[0]}`")
    try:
        clip, layout, source_rate = load_for_inspection(path, fps=fps, joint_order=joint_order,
                                                        robot_mjcf=robot_mjcf, quat_order=quat_order)
        report = inspect_motion(clip, robot_mjcf=robot_mjcf, layout=layout, source_rate=source_rate)
    except MotionFormatError as exc:
        _fail(str(exc))
    if as_json:
        typer.echo(json.dumps(report.to_dict(), indent=2))
    else:
        for line in report.lines():
            typer.echo(line)
    if video:
        try:
            result = render_clip(clip, video, robot_mjcf=robot_mjcf, width=width, height=height)
        except VideoError as exc:
            _fail(f"--video {video}: {exc}")
        typer.echo(f"video: {result.path} ({result.frames} frames, {result.width}x{result.height}, "
                   f"{result.fps:g} fps)", err=as_json)


@motion_app.command("record", cls=HelpCommand, context_settings={"allow_extra_args": False})
def motion_record(
    run: str = typer.Argument(..., help="run directory of a walking policy (g1_walk_flat), or 'latest'"),
    commands: str = typer.Option(
        ..., "--commands", help="command script: YAML/JSON segments (duration, vx, vy, yaw_rate) or CSV rows"
    ),
    out: str = typer.Option(..., "--out", "-o", help="npz to write (ends in .npz; a missing folder is created)"),
    checkpoint: Optional[str] = typer.Option(None, "--checkpoint", help="checkpoint in the run (default: model_last.pt)"),
    settle: float = typer.Option(1.0, "--settle", help="s of standing after the reset before recording starts"),
    lift_feet: bool = typer.Option(
        True, "--lift-feet/--no-lift-feet",
        help="raise the root of each frame whose soles sank into the floor by that depth (soft contact)",
    ),
    log_dir: str = typer.Option("logs", "--log-dir", help="where 'latest' looks"),
    overrides: Optional[List[str]] = typer.Argument(None, help="key.sub=value over the run's config and play settings"),
) -> None:
    """Record a clip from a walking policy driven by a scripted velocity command.

    The deterministic policy walks one world with the task's play settings; each segment's
    command is held for its duration; qpos at the control rate becomes a clip (forward
    kinematics on the G1). Frames whose soles sank into the floor (MuJoCo's soft contact at heel
    strike) are lifted by that depth unless --no-lift-feet. Exit 2 on bad input, 1 when the
    policy falls (nothing written).
    """
    from unilab.motion.clip import MotionFormatError
    from unilab.motion.importers import lift_note
    from unilab.motion.inspect import inspect_motion
    from unilab.motion.record import RecordError, read_command_script, record
    from unilab.train import UserError

    out_path = _out_path(out)
    try:
        segments = read_command_script(commands)
        rec = record(run, segments, checkpoint=checkpoint, log_dir=log_dir, overrides=overrides or [],
                     settle_s=settle, lift_feet=lift_feet)
    except (MotionFormatError, UserError) as exc:
        _fail(str(exc))
    except RecordError as exc:
        _fail(str(exc), 1)
    _write_npz(out_path, rec.save)
    clip = rec.clip
    typer.echo(f"recorded {rec.run_dir / rec.checkpoint.name}: {len(segments)} segments")
    if rec.lift is not None:
        typer.echo(f"  note: {lift_note(rec.lift)}")
    typer.echo(f"wrote {out_path}: {clip.num_frames} frames at {clip.fps:g} fps ({clip.duration_s:.2f} s), "
               f"{len(clip.joint_names)} joints, {len(clip.body_names)} bodies")
    for warning in inspect_motion(clip).warnings:
        typer.echo(f"warning: {warning}", err=True)
