"""A motion library: the clips one tracking policy learns, from one npz, a folder of npz or a
manifest.

``env.motion.file`` names one of

* a clip ``.npz``: the library holds that clip;
* a folder: every ``*.npz`` directly in it, by file name, weight 1 each;
* a manifest, ``.yaml``/``.yml``/``.json``::

      clips:
        - file: squat.npz        # relative to the manifest's folder
          weight: 2.0            # optional, > 0; default 1
          name: deep_squat       # optional; default the file's stem
        - walk_forward.npz       # a bare path: weight 1

A clip's name is its file stem unless the manifest names it; names must be unique. A clip's
weight scales its share of the uniform part of the start-time distribution (see
:class:`unilab.tasks.g1_motion_tracking.mdp.AdaptiveSampler`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from unilab.motion.clip import LIMIT_TOLERANCE_RAD, MotionClip, MotionFormatError, load_motion

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class ClipInfo:
    """One clip of a library, as a consumer (the motion command, ``unilab eval``) sees it.

    Attributes:
        index: position in the library (the ``clip`` argument of the motion command's methods).
        name: unique name (file stem, or the manifest's ``name``).
        num_frames: frames of the clip (T).
        fps: frames per second.
        weight: sampling weight (> 0).
        source: the npz file.
    """

    index: int
    name: str
    num_frames: int
    fps: float
    weight: float
    source: str

    @property
    def duration_s(self) -> float:
        """Time from the first to the last frame, s."""
        return (self.num_frames - 1) / self.fps


@dataclass(frozen=True)
class MotionLibrary:
    """Clips and their descriptions, in library order.

    Attributes:
        clips: the clips.
        infos: one :class:`ClipInfo` per clip.
        source: what ``env.motion.file`` named (npz, folder or manifest).
    """

    clips: tuple[MotionClip, ...]
    infos: tuple[ClipInfo, ...]
    source: str

    def __len__(self) -> int:
        return len(self.clips)

    def select(self, joint_names: Sequence[str], body_names: Sequence[str]) -> "MotionLibrary":
        """Every clip reordered to these joints and bodies (:meth:`MotionClip.select`)."""
        return MotionLibrary(tuple(c.select(joint_names, body_names) for c in self.clips), self.infos, self.source)


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    file: str = Field(..., min_length=1, description="clip npz, relative to the manifest's folder")
    weight: float = Field(1.0, gt=0.0, description="sampling weight")
    name: str | None = Field(None, min_length=1, description="clip name; default the file's stem")


class _Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    clips: list[_Entry | str] = Field(..., min_length=1)


def _read_manifest(path: Path) -> list[tuple[Path, float, str]]:
    """(file, weight, name) per manifest entry.

    Raises:
        MotionFormatError: unreadable, not YAML/JSON, an entry that does not validate (the key
            names the entry, e.g. ``clips[2].weight``), or an entry's file that does not exist
            (key ``clips[i].file``).
    """
    try:
        text = path.read_text()
    except OSError as exc:
        raise MotionFormatError(path, "file", f"cannot read the manifest ({exc.strerror})") from None
    kind = "JSON" if path.suffix.lower() == ".json" else "YAML"
    try:
        if kind == "JSON":
            raw = json.loads(text)
        else:
            import yaml

            raw = yaml.safe_load(text)
    except Exception as exc:  # noqa: BLE001 - json.JSONDecodeError, yaml.YAMLError: one line
        raise MotionFormatError(path, "file", f"expected a {kind} manifest ({str(exc).splitlines()[0]})") from None
    try:
        manifest = _Manifest.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [p for p in err["loc"] if p not in ("_Entry", "str")]
        key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".") or "clips"
        raise MotionFormatError(
            path, key, f"{err['msg'].lower()} (got {err.get('input')!r}); expected "
            "{clips: [{file: CLIP.npz, weight: W > 0, name: NAME}, ...]}",
        ) from None  # fmt: skip
    out = []
    for i, entry in enumerate(manifest.clips):
        entry = _Entry(file=entry) if isinstance(entry, str) else entry
        file = (path.parent / entry.file).resolve() if not Path(entry.file).is_absolute() else Path(entry.file)
        if not file.is_file():
            where = f" ({file}: paths are relative to the manifest's folder)" if str(file) != entry.file else ""
            what = "is a folder" if file.is_dir() else "does not exist"
            raise MotionFormatError(path, f"clips[{i}].file", f"{entry.file!r} {what}{where}; expected an "
                                                              f"existing .npz clip")
        out.append((file, entry.weight, entry.name or file.stem))
    return out


def library_entries(path: str | os.PathLike[str]) -> list[tuple[Path, float, str]]:
    """(file, weight, name) of every clip ``path`` names (npz, folder or manifest), unloaded.

    Raises:
        MotionFormatError: a missing path, an empty folder, a bad manifest or duplicate names.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.glob("*.npz") if p.is_file())
        if not files:
            raise MotionFormatError(path, "file", "expected a folder with at least one .npz clip")
        entries = [(p, 1.0, p.stem) for p in files]
    elif path.is_file() and path.suffix.lower() in MANIFEST_SUFFIXES:
        entries = _read_manifest(path)
    elif path.is_file():
        entries = [(path, 1.0, path.stem)]
    else:
        raise MotionFormatError(
            path, "file", "expected a motion .npz, a folder of .npz or a manifest (.yaml/.yml/.json)"
        )
    seen: dict[str, int] = {}  # only a manifest can name two clips alike (a folder's stems differ)
    for i, (_, _, name) in enumerate(entries):
        if name in seen:
            raise MotionFormatError(path, f"clips[{i}].name", f"clip name {name!r} is also clips[{seen[name]}]'s; "
                                                               f"expected a unique name per clip (give it a `name:`)")
        seen[name] = i
    return entries


def load_motion_library(
    path: str | os.PathLike[str],
    *,
    joint_names: Sequence[str] | None = None,
    joint_limits: Mapping[str, tuple[float, float]] | None = None,
    limit_tolerance: float = LIMIT_TOLERANCE_RAD,
) -> MotionLibrary:
    """Load and validate every clip ``path`` names (see the module docstring).

    Args:
        path: npz, folder or manifest.
        joint_names, joint_limits, limit_tolerance: checks of each clip (:func:`load_motion`).

    Raises:
        MotionFormatError: the first problem, naming the file (clip or manifest) and the key; a
            bad clip of a manifest names the manifest and the entry (key ``clips[i]``) before the
            clip's own message.
    """
    clips, infos = [], []
    manifest = Path(path).is_file() and Path(path).suffix.lower() in MANIFEST_SUFFIXES
    for i, (file, weight, name) in enumerate(library_entries(path)):
        try:
            clip = load_motion(file, joint_names=joint_names, joint_limits=joint_limits,
                               limit_tolerance=limit_tolerance)
        except MotionFormatError as exc:
            if not manifest:
                raise
            raise MotionFormatError(path, f"clips[{i}]", str(exc)) from None
        clips.append(clip)
        infos.append(ClipInfo(i, name, clip.num_frames, clip.fps, weight, str(file)))
    return MotionLibrary(tuple(clips), tuple(infos), str(path))


__all__ = ["ClipInfo", "MANIFEST_SUFFIXES", "MotionLibrary", "library_entries", "load_motion_library"]
