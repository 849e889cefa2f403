"""``unilab motion import``: read a clip in any of the layouts users bring, keep only its root and
joint trajectory, and recompute every body by forward kinematics on the simulated G1.

Layouts, detected from the file:

=====================  =====================================================================
``lafan_csv``          LAFAN1-style retargeted CSV (Unitree): no header, 36 columns per frame:
                       root position (3, m), root quaternion **xyzw** (4), 29 joints (rad) in
                       Unitree order; 30 fps unless ``--fps`` says otherwise.
``qpos_npz``           npz whose ``joint_pos`` (T, 7 + J) is the whole qpos: root position,
                       root quaternion **wxyz**, then J joints named by ``joint_names`` (as
                       holosoma writes it). ``joint_vel`` and any body arrays are not used.
``beyondmimic_npz``    npz with ``joint_pos`` (T, J) and ``body_pos_w`` / ``body_quat_w``
                       (T, B, ·; quaternion **wxyz**), as BeyondMimic's and mjlab's
                       ``csv_to_npz.py`` write it, or as this project writes it (with
                       ``joint_names`` and ``body_names``). The root pose is the ``pelvis`` body
                       (by name), or body 0 when the file has no ``body_names`` (BeyondMimic
                       writes the articulation's bodies root first).
=====================  =====================================================================

Joints are matched by name. A file without ``joint_names`` (BeyondMimic's npz, a qpos npz
without names) does not say its joint order: BeyondMimic writes ``robot.data.joint_pos`` in the
articulation's order, which is the simulator's (``whole_body_tracking`` ``scripts/csv_to_npz.py``
@cd65172), and mjlab's documentation notes that PhysX orders the tree breadth-first where
MuJoCo orders it depth-first. Such a file is refused unless ``--joint-order`` names the order:
``unitree`` (the Unitree / LAFAN1 / MuJoCo depth-first order, :data:`G1_JOINT_NAMES`),
``isaaclab`` (breadth-first over the G1 tree, :func:`breadth_first_joint_order`), or the names
themselves (comma-separated, or ``@FILE`` with one name per line).

The root quaternion is read in the layout's order unless ``--quat-order`` says otherwise; one far
from unit norm, or one that looks stored in the other order (upside down as read, upright the other
way), is refused (:func:`unilab.motion.kinematics.root_quat_wxyz`).

Whatever the layout, the stored body poses are not trusted: the clip's bodies, joint velocities
and body velocities are recomputed from the root and joint trajectory by
:func:`unilab.motion.kinematics.fk_motion` on the model the env simulates, and where the file
has named body positions the largest difference to ours is reported.
"""

from __future__ import annotations

import difflib
import os
import zipfile
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import mujoco
import numpy as np

from unilab.motion.clip import MotionClip, MotionFormatError, missing_key_error
from unilab.motion.kinematics import fk_motion, lift_feet as lift_feet_qpos, resample_qpos, root_quat_wxyz
from unilab.motion.lafan import CSV_FPS, read_lafan_csv
from unilab.robots import g1

LAYOUTS: tuple[str, ...] = ("lafan_csv", "qpos_npz", "beyondmimic_npz")
"""Layouts :func:`import_motion` reads (see the module docstring)."""

JOINT_ORDERS: tuple[str, ...] = ("unitree", "isaaclab")
"""Named joint orders ``--joint-order`` accepts besides an explicit list of names."""

_EXPECTED = (
    "expected a LAFAN1-style CSV (36 columns), an npz whose joint_pos holds the root pose "
    "(7 + J columns, with joint_names), or a BeyondMimic-style npz (joint_pos, body_pos_w, body_quat_w)"
)


@dataclass
class SourceMotion:
    """A clip as read from a file, before resampling and forward kinematics.

    Attributes:
        qpos: (T, 36) float64 root position (m), root quaternion wxyz, 29 joints (rad) in
            :data:`~unilab.robots.g1.G1_JOINT_NAMES` order.
        fps: frame rate of ``qpos``.
        layout: one of :data:`LAYOUTS`.
        joint_order: where the joint order came from (for the report).
        body_pos: name -> (T, 3) stored body positions, m, for the bodies the file names (empty
            when it names none).
        notes: facts about the reading worth telling the user (ignored joints, the root body).
    """

    qpos: np.ndarray
    fps: float
    layout: str
    joint_order: str
    body_pos: dict[str, np.ndarray] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class ImportResult:
    """What :func:`import_motion` produced.

    Attributes:
        clip: the clip at ``out_fps`` with bodies by forward kinematics on the G1.
        layout: the detected layout (:data:`LAYOUTS`).
        source_fps: the source's frame rate.
        source_frames: the source's frame count.
        joint_order: where the joint order came from.
        body_deviation_m: largest distance between a stored body position and ours (m), or None
            when the file names no body positions.
        body_deviation_body: the body where it occurs.
        notes: facts about the reading (ignored joints, root body, replaced bodies).
    """

    clip: MotionClip
    layout: str
    source_fps: float
    source_frames: int
    joint_order: str
    body_deviation_m: float | None = None
    body_deviation_body: str | None = None
    notes: list[str] = field(default_factory=list)


# ============================================================================ joint orders
def breadth_first_joint_order(model: mujoco.MjModel | None = None) -> tuple[str, ...]:
    """The G1's hinge joints in breadth-first order of its kinematic tree (children in model
    order), the order an IsaacLab (PhysX) articulation reports: left_hip_pitch, right_hip_pitch,
    waist_yaw, left_hip_roll, ...

    Args:
        model: the robot model (default: the built-in G1).
    """
    model = model if model is not None else g1.g1_model(with_floor=False)
    children: dict[int, list[int]] = {i: [] for i in range(model.nbody)}
    for b in range(1, model.nbody):
        children[int(model.body_parentid[b])].append(b)
    names, queue = [], deque(children[0])
    while queue:
        body = queue.popleft()
        for j in range(int(model.body_jntadr[body]), int(model.body_jntadr[body] + model.body_jntnum[body])):
            if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE:
                names.append(model.joint(j).name)
        queue.extend(children[body])
    return tuple(names)


def resolve_joint_order(spec: str, path: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """Joint names from a ``--joint-order`` value.

    Args:
        spec: ``unitree``, ``isaaclab``, comma-separated joint names, or ``@FILE`` (names one per
            line or comma-separated).
        path: the motion file (for messages).

    Raises:
        MotionFormatError: an unreadable ``@FILE`` or an empty list (key ``--joint-order``).
    """
    value = spec.strip()
    if value.lower() == "unitree":
        return tuple(g1.G1_JOINT_NAMES)
    if value.lower() == "isaaclab":
        return breadth_first_joint_order()
    if value.startswith("@"):
        try:
            value = Path(value[1:]).read_text()
        except OSError as exc:
            raise MotionFormatError(path, "--joint-order", f"cannot read {spec[1:]!r} ({exc.strerror})") from None
    names = tuple(n.strip() for n in value.replace("\n", ",").split(",") if n.strip())
    if len(names) == 1 and not spec.startswith("@") and names[0] not in g1.G1_JOINT_NAMES:  # a misspelt order
        names = ()
    if not names:
        raise MotionFormatError(path, "--joint-order", f"expected {' or '.join(JOINT_ORDERS)} or joint names, got {spec!r}")
    return names


def _joint_columns(
    path: Path, names: Sequence[str], source: str, ncols: int
) -> tuple[list[int], list[str]]:
    """Columns of the G1 joints in a file whose joint columns are named ``names``.

    Returns:
        (column of each of G1_JOINT_NAMES, the file's joint names the G1 does not have).

    Raises:
        MotionFormatError: a count that does not match the columns, a name given twice (named),
            missing G1 joints (named, with the names the G1 does not have, each with the missing
            joint it is close to, e.g. a misspelling).
    """
    names = list(names)
    if len(names) != ncols:
        raise MotionFormatError(
            path, "joint_names", f"{source} names {len(names)} joints, expected one per joint column ({ncols})"
        )
    twice = list(dict.fromkeys(n for n in names if names.count(n) > 1))
    if twice:
        raise MotionFormatError(
            path, "joint_names", f"{source} names {', '.join(map(repr, twice))} more than once; expected each "
            f"joint once (one name per joint column)",
        )  # fmt: skip
    missing = [n for n in g1.G1_JOINT_NAMES if n not in names]
    extra = [n for n in names if n not in g1.G1_JOINT_NAMES]
    if missing:
        unknown = ""
        if extra:
            described = []
            for n in extra:
                close = difflib.get_close_matches(n, missing, n=1, cutoff=0.6)
                described.append(f"{n!r} (close to {close[0]!r})" if close else repr(n))
            unknown = f", and names joints the G1 does not have: {', '.join(described)}"
        raise MotionFormatError(
            path, "joint_names", f"{source} lacks the G1 joints {missing}{unknown}; expected all of "
            f"{len(g1.G1_JOINT_NAMES)} G1 joints by name (extra joints are ignored)",
        )
    return [names.index(n) for n in g1.G1_JOINT_NAMES], extra


def _unknown_order(path: Path, what: str) -> MotionFormatError:
    return MotionFormatError(
        path, "joint_names",
        f"{what} and no joint_names, so its joint order cannot be known; pass --joint-order "
        f"unitree (Unitree/LAFAN1/MuJoCo order), --joint-order isaaclab (breadth-first, as an "
        f"IsaacLab export such as BeyondMimic's writes it) or --joint-order NAME,NAME,...",
    )  # fmt: skip


# ============================================================================ readers
def detect_layout(path: str | os.PathLike[str]) -> str:
    """The layout of a motion file (one of :data:`LAYOUTS`), from its content.

    Raises:
        MotionFormatError: a missing file, or content that is none of the layouts.
    """
    path = Path(path)
    if not path.is_file():
        raise MotionFormatError(path, "file", "expected an existing motion file (.csv or .npz)")
    if zipfile.is_zipfile(path):
        with _open_npz(path) as data:
            return _npz_layout(path, data)[0]
    if path.suffix.lower() == ".npz":  # named an archive, but not one: say so, not what a CSV lacks
        raise MotionFormatError(path, "file", f"is named .npz but is no numpy .npz archive (a zip of .npy arrays); "
                                              f"{_EXPECTED}")
    with path.open("rb") as f:
        head = f.read(4096)
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        raise MotionFormatError(path, "file", f"is neither text nor an npz archive; {_EXPECTED}") from None
    return "lafan_csv"


def _open_npz(path: Path):
    try:
        return np.load(path, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - any unreadable archive is one message
        raise MotionFormatError(path, "file", f"expected a numpy .npz archive ({exc})") from None


def _npz_layout(path: Path, data) -> tuple[str, int]:
    """(layout, number of joint columns) of an open npz.

    Raises:
        MotionFormatError: the npz is none of the layouts. A clip npz of this project's format (it
            names its bodies, ``body_names``, which no other layout does) that lacks a key a clip
            needs is refused naming that key and the keys a clip holds
            (:func:`~unilab.motion.clip.missing_key_error`), not with an account of the layouts and
            their ``joint_pos`` columns.
    """
    try:
        return _npz_layout_of(path, data)
    except MotionFormatError:
        missing = missing_key_error(path, data.files) if "body_names" in data.files else None
        if missing is not None:
            raise missing from None
        raise


def _npz_layout_of(path: Path, data) -> tuple[str, int]:
    keys = sorted(data.files)
    if "joint_pos" not in data.files:
        raise MotionFormatError(path, "joint_pos", f"missing (keys {keys}); {_EXPECTED}")
    shape = data["joint_pos"].shape
    if len(shape) != 2 or shape[0] < 2:
        raise MotionFormatError(path, "joint_pos", f"expected shape (T >= 2 frames, columns), got {shape}")
    ncols = shape[1]
    names = _names(path, data, "joint_names")
    has_bodies = "body_pos_w" in data.files and "body_quat_w" in data.files
    if names is not None:
        if ncols == len(names) + 7:
            return "qpos_npz", len(names)
        if ncols == len(names) and has_bodies:
            return "beyondmimic_npz", ncols
        raise MotionFormatError(
            path, "joint_pos",
            f"has {ncols} columns for {len(names)} joint_names: expected {len(names) + 7} (root position 3, "
            f"quaternion wxyz 4, joints) or {len(names)} with body_pos_w and body_quat_w for the root",
        )  # fmt: skip
    nj = len(g1.G1_JOINT_NAMES)
    if ncols == nj + 7:
        return "qpos_npz", nj
    if ncols == nj and has_bodies:
        return "beyondmimic_npz", nj
    raise MotionFormatError(
        path, "joint_pos",
        f"has {ncols} columns and the file names no joints: expected {nj + 7} (root pose 7 + {nj} G1 "
        f"joints) or {nj} with body_pos_w and body_quat_w; {_EXPECTED}",
    )  # fmt: skip


def _names(path: Path, data, key: str) -> tuple[str, ...] | None:
    if key not in data.files:
        return None
    arr = np.asarray(data[key])
    if arr.ndim != 1 or arr.dtype.kind not in "US":
        raise MotionFormatError(path, key, f"expected a 1-D array of strings, got {arr.dtype} {arr.shape}")
    return tuple(str(n) for n in arr.tolist())


def _float(path: Path, data, key: str) -> np.ndarray:
    arr = np.asarray(data[key])
    if not np.issubdtype(arr.dtype, np.number):
        raise MotionFormatError(path, key, f"expected numbers, got {arr.dtype}")
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        frame = int(np.argwhere(bad)[0][0])
        raise MotionFormatError(path, key, f"expected finite values, found NaN or inf at frame {frame}")
    return arr


def _npz_fps(path: Path, data, fps: float | None, notes: list[str]) -> float:
    stored = None
    if "fps" in data.files:
        arr = np.asarray(data["fps"]).reshape(-1)
        if arr.size != 1 or not np.issubdtype(arr.dtype, np.number):
            raise MotionFormatError(path, "fps", f"expected one number, got {arr!r}")
        stored = float(arr[0])
    if fps is not None:
        if stored is not None and abs(stored - fps) > 1e-6:
            notes.append(f"--fps {fps:g} used instead of the file's fps {stored:g}")
        return fps
    if stored is None:
        raise MotionFormatError(path, "fps", "missing: the file does not say its frame rate; pass --fps")
    return stored


def read_source(
    path: str | os.PathLike[str], *, fps: float | None = None, joint_order: str | None = None,
    quat_order: str | None = None,
) -> SourceMotion:
    """Read a motion file of any :data:`LAYOUTS` into a root-and-joint trajectory.

    Args:
        path: the file.
        fps: its frame rate; default: the npz's ``fps``, or 30 for a CSV.
        joint_order: ``--joint-order`` (:func:`resolve_joint_order`); needed for an npz without
            ``joint_names``, and overrides the CSV's Unitree order.
        quat_order: ``--quat-order``, the order the file's root quaternion is stored in: ``xyzw``
            or ``wxyz``; default the layout's (CSV xyzw, npz wxyz).

    Raises:
        MotionFormatError: naming the file, the key and what was expected; a file whose joint
            order is unknown names ``--joint-order``; a root quaternion far from unit norm or
            that looks stored in the other order names ``--quat-order``
            (:func:`unilab.motion.kinematics.root_quat_wxyz`).
    """
    path = Path(path)
    layout = detect_layout(path)
    if fps is not None and not (np.isfinite(fps) and fps > 0):
        raise MotionFormatError(path, "--fps", f"expected a positive frame rate, got {fps}")
    order = resolve_joint_order(joint_order, path) if joint_order else None
    notes: list[str] = []
    if layout == "lafan_csv":
        rows = read_lafan_csv(path, quat_order or "xyzw")  # quaternion already unit wxyz
        if order:
            names, source = order, "--joint-order"
        else:
            names, source = tuple(g1.G1_JOINT_NAMES), "LAFAN1 convention (Unitree order)"
        cols, extra = _joint_columns(path, names, source, rows.shape[1] - 7)
        qpos = np.concatenate((rows[:, :7], rows[:, 7:][:, cols]), axis=1)
        _note_extra(notes, extra)
        return SourceMotion(qpos, fps or CSV_FPS, layout, source, notes=notes)

    with _open_npz(path) as data:
        layout, nj = _npz_layout(path, data)
        joint_cols = data["joint_pos"].shape[1]
        file_names = _names(path, data, "joint_names")
        if file_names is not None:
            names, source = file_names, "joint_names in the file"
            if order:
                notes.append("--joint-order ignored: the file names its joints")
        elif order:
            names, source = order, "--joint-order"
        else:
            what = "a qpos npz (root pose in joint_pos)" if layout == "qpos_npz" else "a BeyondMimic-style npz"
            raise _unknown_order(path, f"{what} with {joint_cols} joint_pos columns")
        joint_pos = _float(path, data, "joint_pos")
        rate = _npz_fps(path, data, fps, notes)
        body_names = _names(path, data, "body_names")
        body_pos = _float(path, data, "body_pos_w") if "body_pos_w" in data.files else None
        if layout == "qpos_npz":
            root_pos, root_quat, joints = joint_pos[:, :3], joint_pos[:, 3:7], joint_pos[:, 7:]
        else:
            body_quat = _float(path, data, "body_quat_w")
            t = joint_pos.shape[0]
            if body_pos.ndim != 3 or body_pos.shape[0] != t or body_pos.shape[2] != 3:
                raise MotionFormatError(path, "body_pos_w", f"expected shape ({t}, B, 3), got {body_pos.shape}")
            if body_quat.shape != body_pos.shape[:2] + (4,):
                raise MotionFormatError(
                    path, "body_quat_w", f"expected shape {body_pos.shape[:2] + (4,)} (wxyz), got {body_quat.shape}"
                )
            if body_names is not None:
                if len(body_names) != body_pos.shape[1]:
                    raise MotionFormatError(
                        path, "body_names", f"names {len(body_names)} bodies, body_pos_w has {body_pos.shape[1]}"
                    )
                if g1.PELVIS_BODY not in body_names:
                    raise MotionFormatError(
                        path, "body_names", f"expected the root body {g1.PELVIS_BODY!r} among {list(body_names)}"
                    )
                root = body_names.index(g1.PELVIS_BODY)
            else:
                root = 0
                notes.append("root pose from body 0 (the file names no bodies; BeyondMimic writes the root first)")
            root_pos, root_quat, joints = body_pos[:, root], body_quat[:, root], joint_pos
    cols, extra = _joint_columns(path, names, source, joints.shape[1])
    _note_extra(notes, extra)
    root_quat = root_quat_wxyz(root_quat, quat_order or "wxyz", path=path, key="root quaternion",
                               where=lambda i: f"frame {i}", layout_order="wxyz")
    qpos = np.concatenate((root_pos, root_quat, joints[:, cols]), axis=1)
    stored = {}
    if (body_pos is not None and body_names is not None and body_pos.ndim == 3
            and body_pos.shape[0] == qpos.shape[0] and len(body_names) == body_pos.shape[1]):
        stored = {n: body_pos[:, i] for i, n in enumerate(body_names)}
    return SourceMotion(qpos, rate, layout, source, body_pos=stored, notes=notes)


def _note_extra(notes: list[str], extra: list[str]) -> None:
    if extra:
        notes.append(f"ignored {len(extra)} joints the G1 does not have: {extra}")


def parse_frames(spec: str, num_frames: int, path: str | os.PathLike[str] | None = None) -> slice:
    """A ``START:END`` frame range (Python slice rules, END exclusive, either may be empty).

    Raises:
        MotionFormatError: not ``START:END`` or fewer than two frames left (key ``--frames``).
    """
    parts = spec.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        start, stop = (int(p) if p.strip() else None for p in parts)
    except ValueError:
        raise MotionFormatError(path, "--frames", f"expected START:END (e.g. 0:250), got {spec!r}") from None
    sl = slice(start, stop)
    if len(range(num_frames)[sl]) < 2:
        kept = len(range(num_frames)[sl])
        raise MotionFormatError(path, "--frames", f"{spec!r} leaves {kept} of {num_frames} frames, expected >= 2")
    return sl


def import_motion(
    path: str | os.PathLike[str],
    *,
    fps: float | None = None,
    out_fps: float = 50.0,
    joint_order: str | None = None,
    robot_mjcf: str | None = None,
    z_offset: float = 0.0,
    frames: str | None = None,
    lift_feet: bool = False,
    quat_order: str | None = None,
) -> ImportResult:
    """Read a motion file of any layout, resample it and recompute its bodies on the G1.

    Args:
        path: CSV or npz (:data:`LAYOUTS`).
        fps: the source frame rate (default: the npz's ``fps``; 30 for a CSV).
        out_fps: frame rate of the clip (the task needs its control rate, 50).
        joint_order: see :func:`resolve_joint_order`.
        robot_mjcf: G1 MJCF for forward kinematics (default: the built-in G1).
        z_offset: added to the root height, m (lifts a clip whose feet go into the floor).
        frames: ``START:END`` of the output frames to keep (:func:`parse_frames`).
        lift_feet: after the above, raise the root of each frame whose soles go into the floor by
            that depth (:func:`unilab.motion.kinematics.lift_feet`; a note says where and how much).
        quat_order: the order of the file's root quaternion (see :func:`read_source`).

    Returns:
        The :class:`ImportResult`; ``clip`` is checked for shapes and values, not yet against the
        G1's joint limits.

    Raises:
        MotionFormatError: one line naming the file, the key and what was expected.
    """
    if not (np.isfinite(out_fps) and out_fps > 0):
        raise MotionFormatError(path, "--out-fps", f"expected a positive frame rate, got {out_fps}")
    if not np.isfinite(z_offset):
        raise MotionFormatError(path, "--z-offset", f"expected a finite height in m, got {z_offset}")
    src = read_source(path, fps=fps, joint_order=joint_order, quat_order=quat_order)
    qpos = src.qpos.copy()
    qpos[:, 2] += z_offset
    if abs(src.fps - out_fps) > 1e-9:
        qpos = resample_qpos(qpos, src.fps, out_fps)
    if frames:
        qpos = qpos[parse_frames(frames, qpos.shape[0], path)]
    notes = list(src.notes)
    if lift_feet:
        qpos, lift = lift_feet_qpos(qpos, robot_mjcf=robot_mjcf)
        notes.append(lift_note(lift))
    clip = fk_motion(qpos, out_fps, robot_mjcf=robot_mjcf, source=str(path))
    result = ImportResult(clip, src.layout, src.fps, src.qpos.shape[0], src.joint_order, notes=notes)
    if src.body_pos:
        dev, body = _body_deviation(src, robot_mjcf)
        if body is not None:
            result.body_deviation_m, result.body_deviation_body = dev, body
    return result


def lift_note(lift: np.ndarray) -> str:
    """One line on a :func:`unilab.motion.kinematics.lift_feet` lift: frames and how much."""
    from unilab.motion.inspect import format_frames

    frames = np.flatnonzero(lift > 0.0).tolist()
    if not frames:
        return "--lift-feet: no sole goes into the floor; nothing lifted"
    if lift.max() < 0.5e-4:  # rounding of the source's numbers (a CSV's few decimals), not sinking
        return (f"--lift-feet: the soles touch the floor to within 0.05 mm (lifts of at most "
                f"{lift.max() * 1e6:.0f} um in {len(frames)} of {lift.size} frames)")
    return (f"--lift-feet: the root lifted out of the floor in {len(frames)} of {lift.size} frames "
            f"({format_frames(frames)}), by up to {lift.max() * 1e3:.1f} mm (mean {lift[frames].mean() * 1e3:.1f} mm)")


def _body_deviation(src: SourceMotion, robot_mjcf: str | None) -> tuple[float, str | None]:
    """Largest distance between the file's body positions and forward kinematics of its own
    root and joint trajectory on our G1 (same frames), m, and the body where it occurs."""
    model = g1.g1_model(with_floor=False, mjcf=robot_mjcf)
    data = mujoco.MjData(model)
    common = [n for n in src.body_pos if mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, n) > 0]
    if not common:
        return 0.0, None
    bids = [model.body(n).id for n in common]
    jids = [model.joint(n).id for n in g1.G1_JOINT_NAMES]
    free = [j for j in range(model.njnt) if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
    qadr = model.jnt_qposadr[jids]
    stored = np.stack([src.body_pos[n] for n in common], axis=1)
    worst = np.zeros(len(common))
    for i, row in enumerate(src.qpos):
        data.qpos[:] = model.qpos0
        if free:
            a = model.jnt_qposadr[free[0]]
            data.qpos[a:a + 7] = row[:7]
        data.qpos[qadr] = row[7:]
        mujoco.mj_kinematics(model, data)
        worst = np.maximum(worst, np.linalg.norm(data.xpos[bids] - stored[i], axis=1))
    k = int(worst.argmax())
    return float(worst[k]), common[k]


__all__ = [
    "ImportResult",
    "JOINT_ORDERS",
    "LAYOUTS",
    "SourceMotion",
    "breadth_first_joint_order",
    "detect_layout",
    "import_motion",
    "lift_note",
    "parse_frames",
    "read_source",
    "resolve_joint_order",
]
