#!/usr/bin/env python3
"""Lift the feet of existing motion clips out of the floor, in place or into another folder.

Per frame, the root is raised by exactly the depth the lowest sole capsule goes below the floor
(:func:`unilab.motion.kinematics.lift_clip_feet`; 0 where it does not), and the clip's bodies and
velocities are recomputed by forward kinematics on the G1. The clip keeps its joints and bodies
(by name) and any extra array (e.g. ``command_vel`` of a recorded clip). ``unilab motion record``
lifts new recordings itself; this script brings clips recorded without it up to date, e.g. the
shipped stepping clips:

    .venv/bin/python scripts/lift_motion_feet.py unilab/src/unilab/tasks/g1_motion_tracking/motions/walk_*.npz

For each clip it prints ``unilab motion inspect``'s deepest sole penetration before and after and
the warnings left; it exits 1 (and writes nothing for that clip) if the lifted clip still goes
into the floor beyond inspect's tolerance.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from unilab.motion import REQUIRED_KEYS, load_motion
from unilab.motion.importers import lift_note
from unilab.motion.inspect import inspect_motion
from unilab.motion.kinematics import lift_clip_feet
from unilab.robots import g1


def lift_file(path: Path, out: Path) -> bool:
    """Lift one clip file into ``out``; True when it passes inspect's floor check."""
    clip = load_motion(path, joint_names=g1.G1_JOINT_NAMES, joint_limits=g1.JOINT_RANGE)
    with np.load(path, allow_pickle=False) as data:
        extra = {k: data[k] for k in data.files if k not in REQUIRED_KEYS}
    before = inspect_motion(clip)
    lifted, lift = lift_clip_feet(clip)
    after = inspect_motion(lifted)
    print(f"{path.name}: deepest sole {before.feet_penetration.max_depth_mm:.1f} mm "
          f"({len(before.feet_penetration.frames)} frames beyond the tolerance) -> "
          f"{after.feet_penetration.max_depth_mm:.1f} mm ({len(after.feet_penetration.frames)} frames); "
          f"{lift_note(lift)}")
    for warning in after.warnings:
        print(f"  warning: {warning}")
    if after.feet_penetration.frames or after.other_penetration.frames or after.floating_frames:
        print(f"error: {path}: still into the floor or floating after the lift; not written", file=sys.stderr)
        return False
    out.parent.mkdir(parents=True, exist_ok=True)
    lifted.save(out, **extra)
    print(f"  wrote {out} ({out.stat().st_size / 1024:.0f} KiB)")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("clips", nargs="+", type=Path, help="motion npz files")
    parser.add_argument("--out", type=Path, default=None, help="folder to write to (default: overwrite in place)")
    args = parser.parse_args(argv)
    ok = True
    for path in args.clips:
        ok &= lift_file(path, (args.out / path.name) if args.out else path)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
