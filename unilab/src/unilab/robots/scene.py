"""Build a task scene from a robot description and a model file, on the model spec (``MjSpec``).

The robot's model is loaded as a ``mujoco.MjSpec``: the description's own model, or the user's
``robot.mjcf`` read with ``MjSpec.from_file``, so ``<include>`` works (a Menagerie ``scene.xml``
that includes ``g1.xml``) and meshes, textures and heightfields resolve relative to the user's
file (the compiler's ``meshdir``/``texturedir`` are made absolute, so the scene's MJCF text
compiles from any working directory). What a task needs is then ADDED to that model, never
required from it:

- **drives**, by the explicit choice ``robot.actuators``: ``project`` (default) gives each task
  joint one position actuator with the description's ``kp``, ``kd`` (as ``kv``) and force range,
  and sets the joint's armature, friction loss and damping (an actuator the file has for the
  joint is reused, a motor becomes a position servo, a missing one is added); ``file`` keeps the
  file's actuators and joint dynamics and derives the action scale ``factor * effort / kp`` from
  them (a scale outside :data:`ACTION_SCALE_RATIO_RANGE` of the project's is a warning in the
  report). Either way :class:`SceneReport` lists what the file has against what the project tunes;
  :func:`print_report` shows it.
- **physics options** of the project (:data:`PHYSICS`: dt 0.005 s, implicitfast, Newton, 10
  iterations, 20 line-search iterations, pyramidal cone);
- **sites**: the IMU site of the description (kept when the file has it on the same body) and
  the foot sites ``left_foot``/``right_foot`` at the bottom centre of each foot body's collision
  geoms (kept when the file's site of that name is within :data:`FOOT_SITE_TOLERANCE_M`);
- **sensors** :data:`SENSOR_NAMES` (a file sensor of the same name is replaced);
- a **floor** plane when the world has no plane or heightfield, a light when the model has none,
  a ``tracking`` camera on the base body;
- **foot contact priority** above the floor's, so the foot geoms' friction (which the tasks
  randomize) is the contact's friction;
- **feet**, by the choice ``robot.feet``: ``project`` (default) replaces each foot's collision
  geoms by the description's own tuned sole geoms (:attr:`RobotDescription.soles`,
  :func:`_project_feet`), the sole the recipe was tuned on; a model whose feet already are those
  soles (the built-in G1), or a description without soles, keeps the model's. ``spheres`` puts
  four spheres at the corners of each sole (:func:`_sphere_feet`): fewer contacts, cheaper
  physics. ``model`` keeps the file's feet;
- **keyframes** of the description first (keyframe 0 = the default pose); the file's keyframes
  follow when they still fit the model.

Every failure is a :class:`RobotModelError`, one line naming the file and the element.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from unilab.robots.description import JointDrive, Pose, RobotDescription, SoleGeom

ACTUATOR_CHOICES = ("project", "file")
"""Values of ``robot.actuators``."""

FEET_CHOICES = ("project", "model", "spheres")
"""Values of ``robot.feet``."""

SOLE_MATCH_TOLERANCE_M = 1e-6
"""With ``robot.feet=project``, a model's foot collision geoms within this (m, size and position;
sine of the angle between axes) of the description's soles already are those soles and are kept."""

SOLE_SPHERE_RADIUS_M = 0.01
"""Radius of the sole spheres of ``robot.feet=spheres``, m (the built-in G1's sole capsules')."""

PHYSICS = {
    "timestep": 0.005,
    "integrator": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
    "solver": mujoco.mjtSolver.mjSOL_NEWTON,
    "iterations": 10,
    "ls_iterations": 20,
    "cone": mujoco.mjtCone.mjCONE_PYRAMIDAL,
}
"""MuJoCo options every task scene gets (s, enums, counts): mjlab 1.6.0 velocity task settings
(``tasks/velocity/velocity_env_cfg.py``, ``sim/sim.py``)."""

FOOT_SITES = ("left_foot", "right_foot")
"""Names of the foot sites the scene places at the soles (left, right)."""

FOOT_SITE_TOLERANCE_M = 0.005
"""A file's foot site this close (m) to the computed sole centre is kept where it is."""

SENSOR_NAMES: tuple[str, ...] = (
    "imu_ang_vel",
    "imu_lin_vel",
    "imu_lin_acc",
    "imu_upvector",
    "root_angmom",
    "left_foot_lin_vel",
    "right_foot_lin_vel",
    "left_foot_pos",
    "right_foot_pos",
)
"""Sensors added to every scene, in model order. ``imu_ang_vel`` gyro (rad/s, IMU frame),
``imu_lin_vel`` velocimeter (m/s, IMU frame), ``imu_lin_acc`` accelerometer (m/s^2, IMU frame),
``imu_upvector`` world +z in the IMU frame (unit vector, minus the normalised projected gravity),
``root_angmom`` subtree angular momentum of the base body about the subtree CoM (kg*m^2/s,
world frame), ``*_foot_lin_vel`` foot site velocity (m/s, world frame), ``*_foot_pos`` foot site
position (m, world frame)."""

ACTION_SCALE_RATIO_RANGE = (0.5, 2.0)
"""With ``robot.actuators=file``, file action scales (``factor * effort / kp`` of the file's
drives) within this range of the project's (ratio file / project) pass without a word; a joint
outside it adds a warning to the :class:`SceneReport` (:func:`action_scale_warning`): the rewards
on actions (``action_rate_l2``) and the action box are in action units, so their meaning in
radians changes by that ratio (its square for ``action_rate_l2``)."""

_RGBA_SITE = (1.0, 0.1, 0.1, 1.0)
_REL_TOL = 1e-4


class RobotModelError(ValueError):
    """A robot model that cannot serve the task; the message is one line naming file and element."""


# ============================================================================ drives as found
@dataclass(frozen=True)
class DriveValues:
    """One joint's drive as a compiled model has it.

    Attributes:
        actuator: the actuator driving the joint ("" when none).
        kind: ``"position"`` (a servo: fixed gain, affine bias ``-kp*q - kd*qdot``, gear 1),
            ``"motor"`` (torque: no bias), ``"other"`` or ``"none"``.
        kp: N*m/rad (nan unless position). kd: N*m*s/rad (nan unless position).
        effort: force limit, N*m: the actuator's force range, else the joint's actuator force
            range, else inf.
        armature: kg*m^2, joint plus actuator. frictionloss: N*m. damping: N*m*s/rad, joint plus
            actuator.
    """

    actuator: str
    kind: str
    kp: float
    kd: float
    effort: float
    armature: float
    frictionloss: float
    damping: float

    @classmethod
    def of(cls, drive: JointDrive, actuator: str) -> "DriveValues":
        """What ``robot.actuators=project`` makes of a joint."""
        return cls(actuator, "position", drive.kp, drive.kd, drive.effort_limit, drive.armature,
                   drive.frictionloss, drive.damping)


def read_drive(model: mujoco.MjModel, joint: str, actuators: Sequence[int]) -> DriveValues:
    """The drive of ``joint`` in ``model`` through the actuators ``actuators`` (ids; the first
    counts)."""
    j = model.joint(joint).id
    dof = int(model.jnt_dofadr[j])
    armature = float(model.dof_armature[dof])
    damping = float(model.dof_damping[dof])
    frictionloss = float(model.dof_frictionloss[dof])
    joint_effort = float(model.jnt_actfrcrange[j, 1]) if model.jnt_actfrclimited[j] else math.inf
    if not actuators:
        return DriveValues("", "none", math.nan, math.nan, joint_effort, armature, frictionloss, damping)
    a = int(actuators[0])
    name = model.actuator(a).name
    gear = float(model.actuator_gear[a, 0])
    gain, bias = model.actuator_gainprm[a], model.actuator_biasprm[a]
    armature += float(model.actuator_armature[a]) * gear**2
    damping += float(np.asarray(model.actuator_damping[a]).reshape(-1)[0]) * gear**2
    effort = joint_effort
    if model.actuator_forcelimited[a]:
        lo, hi = model.actuator_forcerange[a]
        effort = min(effort, float(min(-lo, hi)) * abs(gear))
    fixed = model.actuator_gaintype[a] == mujoco.mjtGain.mjGAIN_FIXED
    if (
        fixed and model.actuator_biastype[a] == mujoco.mjtBias.mjBIAS_AFFINE and gain[0] > 0
        and abs(bias[1] + gain[0]) <= 1e-9 * gain[0] and bias[0] == 0 and gear == 1.0
        and model.actuator_dyntype[a] == mujoco.mjtDyn.mjDYN_NONE
    ):
        return DriveValues(name, "position", float(gain[0]), float(-bias[2]), effort, armature,
                           frictionloss, damping)
    kind = "motor" if fixed and model.actuator_biastype[a] == mujoco.mjtBias.mjBIAS_NONE else "other"
    return DriveValues(name, kind, math.nan, math.nan, effort, armature, frictionloss, damping)


# ============================================================================ report
_COLUMNS = ("kp", "kd", "effort", "armature", "frictionloss", "damping")
_UNITS = {"kp": "N·m/rad", "kd": "N·m·s/rad", "effort": "N·m", "armature": "kg·m²",
          "frictionloss": "N·m", "damping": "N·m·s/rad"}


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= _REL_TOL * max(abs(a), abs(b), 1e-12)


def _fmt(x: float) -> str:
    if math.isnan(x):
        return "-"
    if math.isinf(x):
        return "none"
    return f"{x:.4g}"


@dataclass
class SceneReport:
    """What the scene builder found in the model file and what it changed.

    Attributes:
        robot: the description's name.
        source: the model file (absolute path), or ``"built-in"`` for a model built in code.
        actuators: ``"project"`` or ``"file"``.
        file_drives: joint -> :class:`DriveValues` as the file has it.
        project_drives: joint -> :class:`DriveValues` the description tunes.
        action_scale: joint -> rad per action unit the run uses.
        project_action_scale: joint -> rad per action unit from the description's drives.
        action_scale_factor: the action scale is this times effort / kp.
        changes: every other addition or change, one line each; with ``robot.actuators=file``
            also a line starting ``warning: action scale:`` when the file's action scales are
            outside :data:`ACTION_SCALE_RATIO_RANGE` of the project's (:func:`action_scale_warning`).
    """

    robot: str
    source: str
    actuators: str
    file_drives: dict[str, DriveValues] = field(default_factory=dict)
    project_drives: dict[str, DriveValues] = field(default_factory=dict)
    action_scale: dict[str, float] = field(default_factory=dict)
    project_action_scale: dict[str, float] = field(default_factory=dict)
    action_scale_factor: float = 0.25
    changes: list[str] = field(default_factory=list)

    def differences(self) -> dict[str, list[str]]:
        """Joint -> the drive columns (``kind``, ``kp``, ``kd``, ``effort``, ``armature``,
        ``frictionloss``, ``damping``) in which the file differs from the project; joints that
        match are left out."""
        out = {}
        for j, f in self.file_drives.items():
            p = self.project_drives[j]
            cols = (["kind"] if f.kind != p.kind else []) + [
                c for c in _COLUMNS if not _same(getattr(f, c), getattr(p, c))
            ]
            if cols:
                out[j] = cols
        return out

    def title(self) -> str:
        """One line: the choice, the robot and its model (a file, or the model built in code), what
        happened to its drives and how many joints differ from the project's."""
        n, total = len(self.differences()), len(self.file_drives)
        built_in = self.source == "built-in"
        origin = "(built-in model)" if built_in else f"from {self.source}"
        model = "its" if built_in else "the file's"
        if self.actuators == "project":
            what = (f"the project's drives replace {'its own' if built_in else model}" if n
                    else f"{model} drives equal the project's")
        else:
            what = f"{model} drives are kept; action scale = {self.action_scale_factor:g} * effort / kp from them"
        return (f"robot.actuators={self.actuators}: robot {self.robot!r} {origin}: {what}"
                f" ({n} of {total} joints differ)")

    def rows(self) -> list[list[str]]:
        """Table rows: joint, then per column where file and project differ ``file → project``
        (``project``: the project's value replaces the file's) or ``file (project x)`` (``file``:
        the file's value is used, the project's shown for comparison), else the one value; then
        the action scale the run uses, with the project's in parentheses where it differs."""
        out = []
        keep = self.actuators == "file"
        for j, cols in self.differences().items():
            f, p = self.file_drives[j], self.project_drives[j]
            row = [j]
            for c in ("kind", *_COLUMNS):
                a, b = getattr(f, c), getattr(p, c)
                text = str if c == "kind" else _fmt
                if c not in cols:
                    row.append(text(a))
                else:
                    row.append(f"{text(a)} (project {text(b)})" if keep else f"{text(a)} → {text(b)}")
            used, proj = self.action_scale[j], self.project_action_scale[j]
            row.append(_fmt(used) if _same(used, proj) else f"{_fmt(used)} (project {_fmt(proj)})")
            out.append(row)
        return out

    def text(self) -> str:
        """The report as plain text (what :func:`print_report` shows, without the table frame)."""
        head = ["joint", "type", *(f"{c} [{_UNITS[c]}]" for c in _COLUMNS), "action scale [rad]"]
        lines = [self.title()]
        rows = self.rows()
        if rows:
            lines.append(" | ".join(head))
            lines += [" | ".join(r) for r in rows]
        lines += self.changes
        return "\n".join(lines)


_PRINTED: set[tuple] = set()

DRIVE_TABLE = True
"""Whether :func:`print_report` shows the per-joint drive table by default. ``unilab train`` does;
play, export and eval (:func:`brief_reports`) show only the title, which counts the joints that
differ, and the changes: the table is the training run's, and printing it again adds nothing."""


@contextlib.contextmanager
def brief_reports():
    """Within this block :func:`print_report` leaves the drive table out (:data:`DRIVE_TABLE`)."""
    global DRIVE_TABLE
    before, DRIVE_TABLE = DRIVE_TABLE, False
    try:
        yield
    finally:
        DRIVE_TABLE = before


def print_report(report: SceneReport, *, console=None, once: bool = True, table: bool | None = None) -> bool:
    """Show ``report`` as a rich table on stderr: the drives that differ (``file → project``),
    the action scale, then every other change, one line each.

    Printed in the main process of rank 0 only (a spawned collector or another torch.distributed
    rank building the same env stays quiet) and, with ``once``, once per process for the same
    robot, file, actuator choice and changes (a scene with other feet prints its own).
    ``table=False`` (default: :data:`DRIVE_TABLE`) prints the table's title
    alone (how many joints differ), then the changes.

    Returns:
        Whether anything was printed.
    """
    key = (report.robot, report.source, report.actuators, tuple(report.changes))
    quiet = multiprocessing.parent_process() is not None or os.environ.get("RANK", "0") != "0"
    if quiet or (once and key in _PRINTED):
        return False
    _PRINTED.add(key)
    from rich.console import Console
    from rich.table import Table

    console = console or Console(stderr=True, width=None if os.isatty(2) else 200)
    rows = report.rows() if (DRIVE_TABLE if table is None else table) else []
    if rows:
        table = Table(title=report.title(), title_justify="left")
        for c in ("joint", "type", *(f"{c} [{_UNITS[c]}]" for c in _COLUMNS), "action scale [rad]"):
            table.add_column(c)
        for r in rows:
            table.add_row(*r)
        console.print(table)
    else:
        console.print(report.title(), markup=False, highlight=False)
    for line in report.changes:
        console.print(f"  {line}", markup=False, highlight=False)
    return True


# ============================================================================ the scene
@dataclass
class RobotScene:
    """A task scene: the robot's spec with what the tasks need, and how its actions scale.

    Attributes:
        robot: the description.
        spec: the scene's ``mujoco.MjSpec`` (a task may still add to it, e.g. contact sensors).
        action_scale: joint -> rad per action unit (``factor * effort / kp`` of the drives used).
        report: :class:`SceneReport` of what differs from the file and what was added.
    """

    robot: RobotDescription
    spec: mujoco.MjSpec
    action_scale: dict[str, float]
    report: SceneReport

    def compile(self) -> mujoco.MjModel:
        """Compile ``spec``. Raises :class:`RobotModelError` (one line) when MuJoCo refuses it."""
        return _compile(self.spec, self.report.source)

    def to_xml(self) -> str:
        """MJCF text of the compiled scene; asset paths are absolute, so it compiles anywhere."""
        self.compile()
        return self.spec.to_xml()


def _compile(spec: mujoco.MjSpec, source: str) -> mujoco.MjModel:
    try:
        return spec.compile()
    except Exception as exc:  # noqa: BLE001 - MuJoCo raises ValueError with a multi-line text
        raise RobotModelError(f"{source} does not compile: {' '.join(str(exc).split())}") from None


def _load(robot: RobotDescription, mjcf: str | os.PathLike | None) -> tuple[mujoco.MjSpec, str, bool]:
    """(spec, source label, from a file). ``mjcf`` ``""`` means unset, as None does.

    Raises:
        RobotModelError: no such file, a directory, a file that is not MJCF (XML), unreadable
            XML, or a mesh, heightfield, skin or texture file missing where MuJoCo looks for it.
    """
    if isinstance(mjcf, str) and not mjcf.strip():
        mjcf = None
    if mjcf is None and callable(robot.model):
        return robot.model(), "built-in", False
    path = Path(os.path.abspath(os.path.expanduser(os.fspath(mjcf if mjcf is not None else robot.model))))
    what = "robot.mjcf" if mjcf is not None else f"robot {robot.name!r} model"
    if path.is_dir():
        raise RobotModelError(f"{what}: {str(path)!r} is a directory, expected an MJCF file (e.g. its scene.xml)")
    if not path.is_file():
        raise RobotModelError(f"{what}: no such file {str(path)!r}")
    not_mjcf = f"{what}: {str(path)!r} is not an MJCF (XML) file; expected a MuJoCo model (.xml), e.g. a scene.xml"
    if not _looks_like_xml(path):
        raise RobotModelError(not_mjcf)
    try:
        spec = mujoco.MjSpec.from_file(str(path))
    except Exception as exc:  # noqa: BLE001 - XML errors: one line
        text = " ".join(str(exc).split())
        if "could not find decoder" in text:  # MuJoCo chooses its reader by the file name's extension
            raise RobotModelError(f"{not_mjcf} (MuJoCo reads MJCF from files named *.xml)") from None
        raise RobotModelError(f"{what}: {path} cannot be read: {text}") from None
    # Assets resolve against the user's file, also once the scene is MJCF text compiled elsewhere.
    base = spec.modelfiledir or str(path.parent)
    meshdir, texturedir = spec.meshdir, spec.texturedir
    spec.meshdir = os.path.join(base, meshdir)
    spec.texturedir = os.path.join(base, texturedir)
    _check_asset_files(spec, what, path, meshdir, texturedir)
    return spec, str(path), True


def _looks_like_xml(path: Path) -> bool:
    """Whether the file's first non-blank character (after a UTF-8 byte-order mark) is ``<``."""
    with open(path, "rb") as f:
        head = f.read(4096)
    return head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"<")


def asset_files(spec: mujoco.MjSpec) -> list[tuple[str, str, str, str]]:
    """``(kind, name, file, path)`` of every file-backed asset of ``spec``: ``kind`` mesh,
    hfield, skin or texture (a cube texture's six files each), ``file`` as the spec holds it,
    ``path`` where MuJoCo's compiler opens it: ``file`` when absolute, else joined to
    ``meshdir`` (meshes, heightfields, skins) or ``texturedir`` (textures), each taken relative
    to the model file's folder when relative (``<compiler assetdir>`` sets both). Files given in
    memory (``spec.assets``) are left out.

    MuJoCo's parser gives a file named in an included model the included file's folder when the
    file is not found through ``meshdir``/``texturedir``, so such a file arrives absolute.
    """
    def folder(d: str) -> str:
        return d if os.path.isabs(d) else os.path.join(spec.modelfiledir or "", d)

    in_memory = set(spec.assets or {})
    out = []
    for kind, items, d in (("mesh", spec.meshes, spec.meshdir), ("hfield", spec.hfields, spec.meshdir),
                           ("skin", spec.skins, spec.meshdir)):
        for item in items:
            if item.file and item.file not in in_memory:
                out.append((kind, item.name, item.file, os.path.normpath(os.path.join(folder(d), item.file))))
    for tex in spec.textures:
        for file in [tex.file, *tex.cubefiles]:
            if file and file not in in_memory:
                out.append(("texture", tex.name, file, os.path.normpath(os.path.join(folder(spec.texturedir), file))))
    return out


def _include_dirs(path: Path, limit: int = 100) -> list[str]:
    """Folders of the files ``path`` includes (``<include file>``, recursively, each relative to
    the main file's folder as MuJoCo resolves them), longest first. Read with the standard XML
    parser; a file that does not parse is skipped (MuJoCo's own error follows)."""
    import xml.etree.ElementTree as ET

    base, seen, todo, dirs = path.parent, set(), [path], set()
    while todo and len(seen) < limit:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            root = ET.parse(current).getroot()
        except (ET.ParseError, OSError):
            continue
        for inc in root.iter("include"):
            file = inc.get("file")
            if file:
                included = Path(os.path.normpath(base / os.path.expanduser(file)))
                dirs.add(str(included.parent))
                todo.append(included)
    return sorted(dirs, key=len, reverse=True)


def _check_asset_files(spec: mujoco.MjSpec, what: str, path: Path, meshdir: str, texturedir: str) -> None:
    """One line naming the first asset file MuJoCo would not find and where it should be, before
    compiling (whose message names, for a file of an included model, the included file's folder
    instead, MuJoCo's fallback). ``meshdir``/``texturedir``: as the file sets them."""
    include_dirs = None
    for kind, name, file, resolved in asset_files(spec):
        if os.path.isfile(resolved):
            continue
        setting, value = ("texturedir", texturedir) if kind == "texture" else ("meshdir", meshdir)
        expected, also, written_absolute = resolved, "", os.path.isabs(file)
        if written_absolute:
            include_dirs = _include_dirs(path) if include_dirs is None else include_dirs
            for d in include_dirs:  # the parser's fallback: the included file's folder + the file
                if resolved.startswith(d + os.sep):
                    folder = spec.texturedir if kind == "texture" else spec.meshdir
                    expected = os.path.normpath(os.path.join(folder, os.path.relpath(resolved, d)))
                    also = f"; nor is it beside the included file: {resolved!r}" if expected != resolved else ""
                    written_absolute = False
                    break
        where = ("an absolute path in the model" if written_absolute
                 else f"no {setting} set: the model's folder" if not value
                 else f"{setting} {value!r} of the model" if os.path.isabs(value)
                 else f"{setting} {value!r} of the model, relative to its folder")
        raise RobotModelError(
            f"{what}: {path}: {kind} {name or Path(file).stem!r}: no such file {expected!r} ({where}){also}"
        )


def _joint_actuators(model: mujoco.MjModel) -> dict[int, list[int]]:
    """Joint id -> ids of the actuators that transmit to it directly (``trntype`` joint)."""
    out: dict[int, list[int]] = {}
    for a in range(model.nu):
        if int(model.actuator_trntype[a]) in (int(mujoco.mjtTrn.mjTRN_JOINT), int(mujoco.mjtTrn.mjTRN_JOINTINPARENT)):
            out.setdefault(int(model.actuator_trnid[a, 0]), []).append(a)
    return out


def _check_names(model: mujoco.MjModel, robot: RobotDescription, source: str) -> None:
    """Joints and bodies the task needs, by name; one line naming the first missing one."""
    joints = {model.joint(i).name for i in range(model.njnt)}
    missing = [j for j in robot.joint_names if j not in joints]
    if missing:
        more = f" (and {len(missing) - 1} more: {', '.join(missing[1:])})" if len(missing) > 1 else ""
        raise RobotModelError(
            f"{source} has no joint {missing[0]!r}{more}, which robot {robot.name!r} needs; "
            f"joints are matched by name"
        )
    for j in robot.joint_names:
        jid = model.joint(j).id
        if int(model.jnt_type[jid]) not in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)):
            raise RobotModelError(f"{source}: joint {j!r} is not a hinge or slide joint")
        if not model.jnt_limited[jid]:
            raise RobotModelError(
                f"{source}: joint {j!r} has no range; the task bounds actions and penalties by it"
            )
    bodies = {model.body(i).name for i in range(model.nbody)}
    for role, name in (("base", robot.base_body), ("torso", robot.torso_body),
                       ("left foot", robot.feet[0]), ("right foot", robot.feet[1]),
                       ("IMU", robot.imu.body)):
        if name not in bodies:
            raise RobotModelError(f"{source} has no body {name!r} (the {role} of robot {robot.name!r})")
    base = model.body(robot.base_body).id
    free = [j for j in range(model.njnt)
            if model.jnt_bodyid[j] == base and model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
    if not free:
        raise RobotModelError(f"{source}: base body {robot.base_body!r} has no free joint")


def _collision_geoms(model: mujoco.MjModel, body: int) -> list[int]:
    return [g for g in range(model.ngeom) if model.geom_bodyid[g] == body
            and (model.geom_contype[g] or model.geom_conaffinity[g])]


def sole_centre(model: mujoco.MjModel, body: str) -> np.ndarray:
    """Bottom centre of ``body``'s collision geoms, m, body frame: the middle of their bounding
    boxes in x and y, their lowest point in z (MuJoCo's per-geom ``geom_aabb``, transformed).

    Raises:
        RobotModelError: the body has no collision geom.
    """
    lo, hi = _collision_box(model, body)
    return np.array([0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), lo[2]])


def _collision_box(model: mujoco.MjModel, body: str) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi), (3,) each, m: the box in ``body``'s frame around its collision geoms' bounding
    boxes (MuJoCo's ``geom_aabb``, each transformed by its geom's pose).

    Raises:
        RobotModelError: the body has no collision geom.
    """
    b = model.body(body).id
    geoms = _collision_geoms(model, b)
    if not geoms:
        raise RobotModelError(f"foot body {body!r} has no collision geom (contype/conaffinity 0)")
    corners = []
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=float)
    for g in geoms:
        centre, half = model.geom_aabb[g, :3], model.geom_aabb[g, 3:]
        local = centre + signs * half  # (8, 3) geom frame
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, model.geom_quat[g])
        corners.append(local @ rot.reshape(3, 3).T + model.geom_pos[g])
    pts = np.concatenate(corners)
    return pts.min(axis=0), pts.max(axis=0)


def _copy_contact(source: mujoco.MjsGeom, geom: mujoco.MjsGeom) -> None:
    """Give ``geom`` the contact settings and looks of ``source``: contype, conaffinity, condim,
    priority, friction (sliding, torsional, rolling), solref, solimp, margin, gap, group, rgba."""
    geom.contype, geom.conaffinity = source.contype, source.conaffinity
    geom.condim, geom.priority = source.condim, source.priority
    geom.friction, geom.solref, geom.solimp = list(source.friction), list(source.solref), list(source.solimp)
    geom.margin, geom.gap = source.margin, source.gap
    geom.group, geom.rgba = source.group, list(source.rgba)


def _sphere_feet(spec: mujoco.MjSpec, model: mujoco.MjModel, robot: RobotDescription,
                 report: SceneReport) -> None:
    """Replace each foot body's collision geoms by four spheres of radius
    :data:`SOLE_SPHERE_RADIUS_M` inside the corners of their sole: the x-y extent of their
    bounding box (:func:`_collision_box`), centres one radius in from its edges and one radius
    above its bottom, so the support polygon and the sole height stay those of the model. The
    spheres take the contact settings (condim, priority, friction, solref, solimp, margin, gap)
    of the foot's first collision geom; the replaced geoms keep their looks and stop colliding.

    Why: a sphere touches a plane at one point, a capsule at up to two and a box or mesh at up to
    four, and MuJoCo's solver cost grows with the contacts (the built-in G1 stands on 14 sole
    capsules, 28 contacts; with spheres on 8).
    """
    r = SOLE_SPHERE_RADIUS_M
    feet = []  # every foot's geoms taken before any is added: spec.geoms follows the body tree
    for body in robot.feet:
        lo, hi = _collision_box(model, body)
        if min(hi[0] - lo[0], hi[1] - lo[1]) < 2.0 * r:
            raise RobotModelError(
                f"robot.feet=spheres: the sole of foot body {body!r} is {_vec(hi - lo)} m, narrower than two "
                f"spheres of radius {r} m; use robot.feet=model"
            )
        feet.append((body, lo, hi, [spec.geoms[g] for g in _collision_geoms(model, model.body(body).id)]))
    replaced = 0
    for body, lo, hi, geoms in feet:
        first = geoms[0]
        parent = spec.body(body)
        for i, (x, y) in enumerate((x, y) for x in (lo[0] + r, hi[0] - r) for y in (lo[1] + r, hi[1] - r)):
            g = parent.add_geom()
            g.name = f"{body}_sole_sphere{i}"
            g.type = mujoco.mjtGeom.mjGEOM_SPHERE
            g.size = [r, 0.0, 0.0]
            g.pos = [x, y, lo[2] + r]
            _copy_contact(first, g)
        for geom in geoms:
            geom.contype = 0
            geom.conaffinity = 0
        replaced += len(geoms)
    report.changes.append(
        f"robot.feet=spheres: {replaced} foot collision geoms replaced by 4 spheres per foot (radius {r} m) at "
        "the corners of their soles"
    )


def _add_sole(parent: mujoco.MjsBody, sole: SoleGeom) -> mujoco.MjsGeom:
    """Add ``sole`` (shape, size and pose; no contact settings) as a geom of ``parent``."""
    g = parent.add_geom()
    kind = {"capsule": mujoco.mjtGeom.mjGEOM_CAPSULE, "sphere": mujoco.mjtGeom.mjGEOM_SPHERE,
            "box": mujoco.mjtGeom.mjGEOM_BOX}
    g.type = kind[sole.type]
    g.size = [*sole.size, 0.0, 0.0][:3]
    if sole.type == "capsule":
        g.fromto = list(sole.fromto)
    else:
        g.pos = list(sole.pos)
    return g


def _same_shape(a: mujoco.MjModel, ga: int, b: mujoco.MjModel, gb: int, tol: float) -> bool:
    """Whether geom ``ga`` of ``a`` and ``gb`` of ``b`` are one shape in their bodies' frames:
    type, the sizes it uses and position within ``tol`` m; orientation up to the shape's symmetry
    (a capsule's axis up to sign, a box's axes up to sign, a sphere any)."""
    t = int(a.geom_type[ga])
    if t != int(b.geom_type[gb]):
        return False
    used = {int(mujoco.mjtGeom.mjGEOM_SPHERE): 1, int(mujoco.mjtGeom.mjGEOM_CAPSULE): 2}.get(t, 3)
    if not (np.allclose(a.geom_size[ga, :used], b.geom_size[gb, :used], rtol=0, atol=tol)
            and np.allclose(a.geom_pos[ga], b.geom_pos[gb], rtol=0, atol=tol)):
        return False
    ra, rb = np.zeros(9), np.zeros(9)
    mujoco.mju_quat2Mat(ra, a.geom_quat[ga])
    mujoco.mju_quat2Mat(rb, b.geom_quat[gb])
    ra, rb = ra.reshape(3, 3), rb.reshape(3, 3)
    if t == int(mujoco.mjtGeom.mjGEOM_SPHERE):
        return True
    if t == int(mujoco.mjtGeom.mjGEOM_CAPSULE):
        return bool(np.linalg.norm(np.cross(ra[:, 2], rb[:, 2])) <= tol)
    return bool(np.allclose(np.abs(ra.T @ rb), np.eye(3), rtol=0, atol=tol))


def _soles_in_place(model: mujoco.MjModel, robot: RobotDescription) -> bool:
    """Whether each foot body's collision geoms in ``model`` already are ``robot.soles``: as many,
    one for one the same shape (:func:`_same_shape`, :data:`SOLE_MATCH_TOLERANCE_M`), and with
    ``robot.sole_friction`` (when set) as their sliding friction."""
    probe = mujoco.MjSpec()
    for body, soles in robot.soles.items():
        parent = probe.worldbody.add_body(name=body)
        for sole in soles:
            _add_sole(parent, sole)
    ref = probe.compile()
    for body in robot.feet:
        have = _collision_geoms(model, model.body(body).id)
        want = _collision_geoms(ref, ref.body(body).id)
        if len(have) != len(want):
            return False
        if robot.sole_friction is not None and not np.allclose(model.geom_friction[have, 0], robot.sole_friction,
                                                               rtol=0, atol=1e-12):
            return False
        for w in want:
            match = next((h for h in have if _same_shape(model, h, ref, w, SOLE_MATCH_TOLERANCE_M)), None)
            if match is None:
                return False
            have.remove(match)
    return True


def _project_feet(spec: mujoco.MjSpec, model: mujoco.MjModel, robot: RobotDescription,
                  report: SceneReport) -> bool:
    """Replace each foot body's collision geoms by the description's soles
    (:attr:`RobotDescription.soles`, body frame), named ``{body}_sole{i}``. They take the contact
    settings (contype, conaffinity, condim, priority, solref, solimp, margin, gap, group, rgba and
    torsional and rolling friction) of the foot's first collision geom (MuJoCo's defaults when the
    foot has none) and, as sliding friction, ``robot.sole_friction`` (None: that geom's); the
    replaced geoms keep their looks and stop colliding. Feet that already are the soles
    (:func:`_soles_in_place`, e.g. the built-in G1) are kept as they are, and so are the model's
    feet when the description gives no soles at all (a line in the report says which).

    Why: the task's rewards and gains were tuned on the description's sole; a model with other
    feet (Menagerie's G1 stands on four small spheres per foot) walks differently under the same
    policy, and ``robot.feet=project`` gives a user's file that sole, as ``robot.actuators=project``
    gives it the tuned drives.

    Returns:
        Whether ``spec`` changed (so the caller compiles it again).

    Raises:
        RobotModelError: the description has sole geoms for one foot body but not the other, an unsound one
            (:meth:`SoleGeom.problems`) or a sole friction that is not a positive number; one line.
    """
    missing = [body for body in robot.feet if not robot.soles.get(body)]
    if len(missing) == len(robot.feet):
        report.changes.append(f"robot.feet=project: robot {robot.name!r} describes no sole geoms; the model's "
                              "foot collision geoms kept")
        return False
    if missing:
        raise RobotModelError(f"robot.feet=project: robot {robot.name!r} describes no sole geoms for foot body "
                              f"{missing[0]!r}; describe both feet's, or use robot.feet=model or spheres")
    bad = [f"sole geom {i} of {body!r}: {p}" for body in robot.feet
           for i, g in enumerate(robot.soles[body]) for p in g.problems()]
    if robot.sole_friction is not None and not (math.isfinite(robot.sole_friction) and robot.sole_friction > 0):
        bad.append(f"sole_friction must be a positive number or None, got {robot.sole_friction!r}")
    if bad:
        raise RobotModelError(f"robot.feet=project: robot {robot.name!r}: {bad[0]}")
    per_foot = "/".join(dict.fromkeys(str(len(robot.soles[body])) for body in robot.feet))  # "7", or "7/6"
    if _soles_in_place(model, robot):
        report.changes.append(f"robot.feet=project: the foot collision geoms already are the soles of robot "
                              f"{robot.name!r} ({per_foot} per foot); kept")
        return False
    feet = [(body, [spec.geoms[g] for g in _collision_geoms(model, model.body(body).id)]) for body in robot.feet]
    replaced = 0
    for body, geoms in feet:  # every foot's geoms taken before any is added: spec.geoms follows the body tree
        first = geoms[0] if geoms else None
        parent = spec.body(body)
        for i, sole in enumerate(robot.soles[body]):
            g = _add_sole(parent, sole)
            g.name = f"{body}_sole{i}"
            if first is not None:
                _copy_contact(first, g)
            if robot.sole_friction is not None:
                g.friction = [robot.sole_friction, *list(g.friction)[1:]]
        for geom in geoms:
            geom.contype = 0
            geom.conaffinity = 0
        replaced += len(geoms)
    kinds = ", ".join(sorted({f"{g.type}{'es' if g.type == 'box' else 's'}"
                              for body in robot.feet for g in robot.soles[body]}))
    friction = (f"sliding friction {robot.sole_friction:g}" if robot.sole_friction is not None
                else "the replaced geoms' friction")
    what = (f"{replaced} foot collision geoms replaced by the soles of robot {robot.name!r}" if replaced
            else f"the soles of robot {robot.name!r} added to feet without collision geoms")
    report.changes.append(f"robot.feet=project: {what} ({per_foot} {kinds} per foot, {friction}; "
                          "robot.feet=model keeps the file's)")
    return True


def _look_quat(forward: Sequence[float]) -> list[float]:
    """Camera quaternion (w, x, y, z) looking along ``forward`` with world +z up."""
    f = np.asarray(forward, dtype=np.float64)
    f /= np.linalg.norm(f)
    x = np.cross(f, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    y = np.cross(x, f)
    mat = np.column_stack([x, y, -f])  # a camera looks along its -z axis
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, mat.flatten())
    return quat.tolist()


# ---------------------------------------------------------------------------- drives
def _apply_project_drives(
    spec: mujoco.MjSpec, model: mujoco.MjModel, robot: RobotDescription, source: str,
    by_joint: dict[int, list[int]],
) -> dict[str, str]:
    """Give every task joint the description's drive. Returns joint -> actuator name."""
    names = {model.actuator(a).name for a in range(model.nu)}
    out = {}
    for j in robot.joint_names:
        acts = by_joint.get(model.joint(j).id, [])
        if len(acts) > 1:
            listed = ", ".join(repr(model.actuator(a).name or f"#{a}") for a in acts)
            raise RobotModelError(f"{source}: joint {j!r} has {len(acts)} actuators ({listed}); the task "
                                  f"drives each joint with one")
        drive = robot.drives[j]
        if acts:
            act = spec.actuators[acts[0]]
        else:
            act = spec.add_actuator()
            act.name = j if j not in names else f"{j}_servo"
            act.target = j
            act.trntype = mujoco.mjtTrn.mjTRN_JOINT
        act.set_to_position(kp=drive.kp, kv=drive.kd)
        act.gear = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        act.inheritrange = 0.0
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
        act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        act.forcerange = [-drive.effort_limit, drive.effort_limit]
        act.armature = 0.0
        act.damping = [0.0] * len(act.damping)
        joint = spec.joint(j)
        joint.armature = drive.armature
        joint.frictionloss = drive.frictionloss
        joint.damping = [drive.damping] + [0.0] * (len(joint.damping) - 1)
        if model.jnt_actfrclimited[model.joint(j).id]:  # the servo's force range is the limit
            joint.actfrclimited = mujoco.mjtLimited.mjLIMITED_FALSE
        out[j] = act.name
    return out


def _file_action_scale(robot: RobotDescription, drives: Mapping[str, DriveValues], source: str) -> dict[str, float]:
    """Action scale from the file's drives (``robot.actuators=file``)."""
    hint = "or choose robot.actuators=project (the project's drives)"
    out = {}
    for j in robot.joint_names:
        d = drives[j]
        if d.kind == "none":
            raise RobotModelError(f"robot.actuators=file: joint {j!r} in {source} has no actuator; add one {hint}")
        if d.kind != "position":
            raise RobotModelError(
                f"robot.actuators=file: actuator {d.actuator!r} of joint {j!r} in {source} is a {d.kind} "
                f"actuator, not a position servo (fixed gain kp, bias -kp*q - kd*qdot, gear 1); the task's "
                f"actions are joint targets; make it a <position> actuator {hint}"
            )
        if not math.isfinite(d.effort):
            raise RobotModelError(
                f"robot.actuators=file: actuator {d.actuator!r} of joint {j!r} in {source} has no force "
                f"limit (forcerange, or the joint's actuatorfrcrange), so the action scale "
                f"{robot.action_scale_factor:g} * effort / kp cannot be derived; give it one {hint}"
            )
        out[j] = robot.action_scale_factor * d.effort / d.kp
    return out


def action_scale_warning(model: mujoco.MjModel, robot: RobotDescription, scale: Mapping[str, float],
                         project: Mapping[str, float]) -> str | None:
    """The warning line for action scales ``scale`` far from the project's ``project`` (both
    joint -> rad per action unit), or None when every joint's ratio ``scale / project`` lies in
    :data:`ACTION_SCALE_RATIO_RANGE`.

    The line names how many joints are outside, the range of the ratios, the action box it gives
    (the largest bound in action units, ``max(|lower - default|, |upper - default|) / scale`` with
    ``model``'s joint ranges and ``robot``'s default pose, against the project's scale's) and what
    it affects: ``action_rate_l2`` and other terms on actions in action units weigh the same joint
    motion ``(1 / ratio)^2`` as much (more for a smaller scale, less for a larger one).
    """
    lo_ok, hi_ok = ACTION_SCALE_RATIO_RANGE
    ratios = {j: scale[j] / project[j] for j in robot.joint_names}
    outside = [j for j, r in ratios.items() if not lo_ok <= r <= hi_ok]
    if not outside:
        return None
    default = robot.default_pose.joint_pos

    def box(s: Mapping[str, float]) -> float:
        bound = 0.0
        for j in robot.joint_names:
            lower, upper = (float(x) for x in model.jnt_range[model.joint(j).id])
            q0 = default.get(j, 0.0)
            bound = max(bound, max(abs(lower - q0), abs(upper - q0)) / s[j])
        return bound

    def num(x: float) -> str:
        return f"{x:.0f}" if x >= 100 else f"{x:.3g}"

    lo, hi = min(ratios[j] for j in outside), max(ratios[j] for j in outside)
    # a joint motion of d rad is d / scale action units: a penalty on them scales with 1 / ratio^2
    least, most = 1.0 / hi**2, 1.0 / lo**2
    weigh = f"{num(most)} x as much" if lo == hi else f"{num(least)}-{num(most)} x as much"
    worst = max(outside, key=lambda j: max(ratios[j], 1.0 / ratios[j]))
    return (
        f"warning: action scale: the file's drives give {lo:.3g}-{hi:.3g} x the project's rad per action "
        f"unit on {len(outside)} of {len(ratios)} joints (outside {lo_ok:g}-{hi_ok:g} x; {worst!r}: "
        f"{scale[worst]:.3g} rad against {project[worst]:.3g}); the action box reaches "
        f"±{num(box(scale))} action units (±{num(box(project))} with the project's scale), and penalties on "
        f"actions in action units (action_rate_l2) weigh the same joint motion {weigh}: the task's rewards "
        f"were tuned for the project's scale; "
        f"robot.actuators=project trains with the project's drives"
    )


# ---------------------------------------------------------------------------- additions
def _option_text(value, like) -> str:
    """An option value as text, typed like ``like`` (a float, an int or a MuJoCo enum)."""
    if isinstance(like, float):
        return f"{float(value):g}"
    if isinstance(like, int):
        return str(int(value))
    return type(like)(int(value)).name


def _set_physics(spec: mujoco.MjSpec, model: mujoco.MjModel, report: SceneReport, from_file: bool) -> None:
    for name, value in PHYSICS.items():
        before = getattr(model.opt, name)
        if from_file and _option_text(before, value) != _option_text(value, value):
            report.changes.append(f"option {name}: {_option_text(before, value)} -> {_option_text(value, value)}")
        setattr(spec.option, name, value)


def _add_floor(spec: mujoco.MjSpec) -> None:
    tex = spec.add_texture()
    tex.name = "unilab_floor_grid"
    tex.type = mujoco.mjtTexture.mjTEXTURE_2D
    tex.builtin = mujoco.mjtBuiltin.mjBUILTIN_CHECKER
    tex.rgb1 = [0.32, 0.36, 0.40]
    tex.rgb2 = [0.24, 0.27, 0.30]
    tex.mark = mujoco.mjtMark.mjMARK_EDGE
    tex.markrgb = [0.5, 0.5, 0.5]
    tex.width = tex.height = 256
    mat = spec.add_material()
    mat.name = "unilab_floor_grid"
    mat.texrepeat = [1.0, 1.0]
    mat.texuniform = True
    textures = list(mat.textures)
    textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "unilab_floor_grid"
    mat.textures = textures
    floor = spec.worldbody.add_geom()
    floor.name = "floor" if spec.geom("floor") is None else "unilab_floor"
    floor.type = mujoco.mjtGeom.mjGEOM_PLANE
    floor.size = [0.0, 0.0, 0.05]  # infinite plane
    floor.condim = 3
    floor.contype = 1
    floor.conaffinity = 1
    floor.material = "unilab_floor_grid"


def _world_floors(model: mujoco.MjModel) -> list[int]:
    return [g for g in range(model.ngeom) if model.geom_bodyid[g] == 0
            and int(model.geom_type[g]) in (int(mujoco.mjtGeom.mjGEOM_PLANE), int(mujoco.mjtGeom.mjGEOM_HFIELD))]


def _add_view(spec: mujoco.MjSpec, model: mujoco.MjModel, robot: RobotDescription) -> None:
    if model.nlight == 0:
        spec.visual.headlight.ambient = [0.3, 0.3, 0.3]
        spec.visual.headlight.diffuse = [0.5, 0.5, 0.5]
        light = spec.worldbody.add_light()
        light.name = "sun"
        light.pos = [0.0, 0.0, 4.0]
        light.dir = [0.0, 0.0, -1.0]
        light.type = mujoco.mjtLightType.mjLIGHT_DIRECTIONAL
        light.diffuse = [0.6, 0.6, 0.6]
        light.castshadow = True
    if spec.camera("tracking") is None:
        cam = spec.body(robot.base_body).add_camera()
        cam.name = "tracking"
        cam.mode = mujoco.mjtCamLight.mjCAMLIGHT_TRACKCOM
        offset = np.array([1.6, -2.4, 0.4])
        cam.pos = offset.tolist()
        cam.quat = _look_quat(-offset - [0.0, 0.0, 0.3])


def _add_site(spec: mujoco.MjSpec, body: str, name: str, pos) -> None:
    site = spec.body(body).add_site()
    site.name = name
    site.pos = [float(x) for x in pos]
    site.size = [0.01, 0.01, 0.01]
    site.rgba = list(_RGBA_SITE)
    site.group = 4


def _add_sites(spec: mujoco.MjSpec, model: mujoco.MjModel, robot: RobotDescription, source: str,
               report: SceneReport) -> None:
    sites = {model.site(i).name: i for i in range(model.nsite)}
    imu = robot.imu
    if imu.name in sites:
        on = model.body(int(model.site_bodyid[sites[imu.name]])).name
        if on != imu.body:
            raise RobotModelError(f"{source}: site {imu.name!r} is on body {on!r}; robot {robot.name!r} "
                                  f"has its IMU on {imu.body!r}")
    else:
        _add_site(spec, imu.body, imu.name, imu.pos)
        if report.source != "built-in":
            report.changes.append(f"site {imu.name!r} (IMU) added on {imu.body!r} at {_vec(imu.pos)} m")
    for name, body in zip(FOOT_SITES, robot.feet):
        sole = sole_centre(model, body)
        if name in sites:
            s = sites[name]
            on = model.body(int(model.site_bodyid[s])).name
            if on != body:
                raise RobotModelError(f"{source}: site {name!r} is on body {on!r}; the task's foot site "
                                      f"belongs on foot body {body!r}")
            if np.linalg.norm(model.site_pos[s] - sole) > FOOT_SITE_TOLERANCE_M:
                spec.site(name).pos = sole.tolist()
                report.changes.append(f"site {name!r} moved from {_vec(model.site_pos[s])} to the sole "
                                      f"centre {_vec(sole)} m (foot height and clearance read it)")
        else:
            _add_site(spec, body, name, sole)
            report.changes.append(f"site {name!r} added on {body!r} at the sole centre {_vec(sole)} m")


def _vec(v) -> str:
    return "(" + ", ".join(f"{float(x):.4g}" for x in v) + ")"


def _add_sensors(spec: mujoco.MjSpec, robot: RobotDescription, report: SceneReport) -> None:
    replaced = []
    for name in SENSOR_NAMES:
        old = spec.sensor(name)
        if old is not None:
            spec.delete(old)
            replaced.append(name)
    if replaced:
        report.changes.append(f"sensors {replaced} of the file replaced by the task's")
    site, body = mujoco.mjtObj.mjOBJ_SITE, mujoco.mjtObj.mjOBJ_BODY
    S = mujoco.mjtSensor

    def add(name, kind, objtype, objname, reftype=None, refname=""):
        s = spec.add_sensor()
        s.name, s.type, s.objtype, s.objname = name, kind, objtype, objname
        if reftype is not None:
            s.reftype, s.refname = reftype, refname

    imu = robot.imu.name
    add("imu_ang_vel", S.mjSENS_GYRO, site, imu)
    add("imu_lin_vel", S.mjSENS_VELOCIMETER, site, imu)
    add("imu_lin_acc", S.mjSENS_ACCELEROMETER, site, imu)
    add("imu_upvector", S.mjSENS_FRAMEZAXIS, body, "world", site, imu)  # world +z in the IMU frame
    add("root_angmom", S.mjSENS_SUBTREEANGMOM, body, robot.base_body)
    for foot in FOOT_SITES:
        add(f"{foot}_lin_vel", S.mjSENS_FRAMELINVEL, site, foot)
    for foot in FOOT_SITES:
        add(f"{foot}_pos", S.mjSENS_FRAMEPOS, site, foot)


def _raise_foot_priority(spec: mujoco.MjSpec, model: mujoco.MjModel, robot: RobotDescription,
                         report: SceneReport) -> None:
    floors = _world_floors(model)
    floor_priority = max((int(model.geom_priority[g]) for g in floors), default=0)
    low = [g for body in robot.feet for g in _collision_geoms(model, model.body(body).id)
           if model.geom_priority[g] <= floor_priority]
    if not low:
        return
    for g in low:
        spec.geoms[g].priority = floor_priority + 1
    report.changes.append(
        f"{len(low)} foot collision geoms: contact priority {floor_priority + 1} (above the floor's), so "
        f"their friction, which the task may randomize, is the contact's"
    )


def _key_vectors(model: mujoco.MjModel, robot: RobotDescription, pose: Pose,
                 actuator_of: Mapping[str, int]) -> tuple[list[float], list[float]]:
    """qpos and ctrl of ``pose``: the base's free joint, joints by name, their servos' targets."""
    qpos = model.qpos0.copy()
    base = model.body(robot.base_body).id
    for j in range(model.njnt):
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE and model.jnt_bodyid[j] == base:
            adr = model.jnt_qposadr[j]
            qpos[adr: adr + 7] = [*pose.base_pos, 1.0, 0.0, 0.0, 0.0]
    for name, value in pose.joint_pos.items():
        qpos[model.jnt_qposadr[model.joint(name).id]] = value
    ctrl = np.zeros(model.nu)
    for name in robot.joint_names:
        ctrl[actuator_of[name]] = pose.joint_pos.get(name, 0.0)
    return qpos.tolist(), ctrl.tolist()


def _set_keyframes(spec: mujoco.MjSpec, model: mujoco.MjModel, robot: RobotDescription,
                   report: SceneReport, from_file: bool) -> None:
    kept, dropped = [], []
    fields = ("qpos", "qvel", "act", "ctrl", "mpos", "mquat")
    for key in list(spec.keys):
        if key.name not in robot.keyframes:
            values = {f: np.array(getattr(key, f)) for f in fields}
            fits = all(len(values[f]) in (0, n) for f, n in (
                ("qpos", model.nq), ("qvel", model.nv), ("act", model.na), ("ctrl", model.nu)))
            (kept if fits else dropped).append(values | {"name": key.name, "time": key.time})
        spec.delete(key)
    actuator_of = {}
    by_joint = _joint_actuators(model)
    for j in robot.joint_names:
        actuator_of[j] = by_joint[model.joint(j).id][0]
    for name, pose in robot.keyframes.items():
        qpos, ctrl = _key_vectors(model, robot, pose, actuator_of)
        spec.add_key(name=name, qpos=qpos, ctrl=ctrl)
    for fields_ in kept:
        key = spec.add_key()
        for f, value in fields_.items():
            setattr(key, f, value.tolist() if isinstance(value, np.ndarray) else value)
    if from_file:
        report.changes.append(
            f"keyframes {list(robot.keyframes)} of robot {robot.name!r} first (keyframe 0 = the default pose)"
            + (f"; the file's {[k['name'] for k in kept]} after them" if kept else "")
            + (f"; the file's {[k['name'] for k in dropped]} dropped (sizes no longer fit)" if dropped else "")
        )


# ---------------------------------------------------------------------------- entry point
def build_scene(
    robot: RobotDescription,
    *,
    mjcf: str | os.PathLike | None = None,
    actuators: str = "project",
    with_floor: bool = True,
    feet: str = "project",
) -> RobotScene:
    """The task scene of ``robot``: its model (or ``mjcf``) plus what the tasks need.

    Args:
        robot: the description (joints, drives, bodies, keyframes, model).
        mjcf: a user MJCF of this robot (a robot file or a scene that includes one); None or
            ``""``: the description's own model.
        actuators: ``"project"`` or ``"file"`` (see the module docstring).
        with_floor: add a floor plane when the world has none.
        feet: ``"project"`` (the description's soles, :func:`_project_feet`), ``"model"`` (the
            model's foot collision geoms) or ``"spheres"`` (four sole spheres per foot,
            :func:`_sphere_feet`).

    Returns:
        :class:`RobotScene`; nothing is printed (:func:`print_report` shows its report).

    Raises:
        RobotModelError: one line naming the file and what is wrong (no such file, a directory,
            a file that is not MJCF (XML), unreadable XML, a mesh, heightfield, skin or texture
            file missing where MuJoCo looks for it, a missing joint or body, a joint without
            range, two actuators on one joint, with ``file`` an actuator that is not a
            position servo or has no force limit, or with ``feet="project"`` a description
            whose soles cover one foot only or are unsound).
    """
    if actuators not in ACTUATOR_CHOICES:
        raise RobotModelError(f"robot.actuators: expected one of {', '.join(ACTUATOR_CHOICES)}, got {actuators!r}")
    if feet not in FEET_CHOICES:
        raise RobotModelError(f"robot.feet: expected one of {', '.join(FEET_CHOICES)}, got {feet!r}")
    spec, source, from_file = _load(robot, mjcf)
    report = SceneReport(robot.name, source, actuators, action_scale_factor=robot.action_scale_factor)
    model = _compile(spec, source)
    _check_names(model, robot, source)

    by_joint = _joint_actuators(model)
    report.file_drives = {j: read_drive(model, j, by_joint.get(model.joint(j).id, [])) for j in robot.joint_names}
    report.project_action_scale = robot.action_scale()
    if actuators == "project":
        names = _apply_project_drives(spec, model, robot, source, by_joint)
        report.action_scale = dict(report.project_action_scale)
    else:
        report.action_scale = _file_action_scale(robot, report.file_drives, source)
        names = {j: d.actuator for j, d in report.file_drives.items()}
        warning = action_scale_warning(model, robot, report.action_scale, report.project_action_scale)
        if warning:
            report.changes.append(warning)
    report.project_drives = {j: DriveValues.of(robot.drives[j], names[j]) for j in robot.joint_names}

    _set_physics(spec, model, report, from_file)
    floors = _world_floors(model)
    if with_floor and not floors:
        _add_floor(spec)
        if from_file:
            report.changes.append("floor plane 'floor' added (the world had no plane or heightfield)")
        model = _compile(spec, source)  # the floor is geom 0 now: model and spec.geoms ids agree again
    _add_view(spec, model, robot)
    if feet == "spheres":
        _sphere_feet(spec, model, robot, report)
        model = _compile(spec, source)
    elif feet == "project" and _project_feet(spec, model, robot, report):
        model = _compile(spec, source)
    elif feet == "model" and from_file:
        report.changes.append("robot.feet=model: the file's foot collision geoms kept (robot.feet=project gives "
                              f"them the soles of robot {robot.name!r} the recipe was tuned on)")
    _add_sites(spec, model, robot, source, report)
    _raise_foot_priority(spec, model, robot, report)
    _add_sensors(spec, robot, report)
    _set_keyframes(spec, _compile(spec, source), robot, report, from_file)
    _compile(spec, source)
    return RobotScene(robot, spec, dict(report.action_scale), report)


__all__ = [
    "ACTION_SCALE_RATIO_RANGE",
    "ACTUATOR_CHOICES",
    "DriveValues",
    "FEET_CHOICES",
    "FOOT_SITES",
    "FOOT_SITE_TOLERANCE_M",
    "PHYSICS",
    "RobotModelError",
    "RobotScene",
    "SENSOR_NAMES",
    "SOLE_MATCH_TOLERANCE_M",
    "SceneReport",
    "action_scale_warning",
    "asset_files",
    "brief_reports",
    "build_scene",
    "print_report",
    "read_drive",
    "sole_centre",
]
