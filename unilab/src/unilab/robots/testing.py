"""A meshed G1 as users have one, generated: for tests, the example plugin and benchmarks.

:func:`write_meshed_g1` writes the layout of a MuJoCo Menagerie ``unitree_g1`` checkout into a
folder: ``g1.xml`` (the robot, ``<compiler meshdir="assets">``, default classes, ``<position>``
actuators with the file's own gains) and ``scene.xml`` (a floor, including ``g1.xml``), with mesh
files in ``assets/``. Nothing of Menagerie is copied: the meshes are boxes written here with numpy
(binary STL and Wavefront OBJ), sized from the built-in G1's collision primitives, and the
bodies, inertias and joint ranges are the built-in G1's (:mod:`unilab.robots.g1.g1_constants`).
What differs from the built-in model on purpose, as a user's file would:

- collision through meshes (a box per link), feet as 4 unnamed spheres each (no contact
  priority), no geom named like ours;
- the file's own drives, Menagerie-style by default: ``kp`` 500 and ``dampratio`` 1 on every
  joint, armature 0.01, friction loss 0.3, torque limits as joint ``actuatorfrcrange``;
- its own sensors (``pelvis-gyro``, ``pelvis-accel`` on ``imu_in_pelvis``), foot sites at the
  ankle origin (not at the sole), a ``stand`` keyframe, and the MuJoCo default timestep 0.002 s.

Run ``python -m unilab.robots.testing OUT_DIR`` to write one (e.g. for ``robot.mjcf=`` on a
machine without a Menagerie checkout).
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

import numpy as np

from unilab.robots.g1 import g1_constants as C

FOOT_SPHERES = ((-0.05, 0.025), (-0.05, -0.025), (0.12, 0.03), (0.12, -0.03))
"""(x, y) of the 4 foot spheres in the ankle-roll frame, m (z = -0.025, radius 0.01: the sole at
-0.035 m, as the built-in G1's)."""

_BOX_FACES = ((0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1),
              (2, 3, 7), (2, 7, 6), (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3))


def _box_vertices(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return np.array([[(lo, hi)[i][0], (lo, hi)[j][1], (lo, hi)[k][2]]
                     for i in (0, 1) for j in (0, 1) for k in (0, 1)], dtype=np.float32)


def write_box_stl(path: Path, lo, hi) -> None:
    """A binary STL of the box ``[lo, hi]`` (m): 12 outward-facing triangles."""
    v = _box_vertices(np.asarray(lo, np.float32), np.asarray(hi, np.float32))
    with open(path, "wb") as f:
        f.write(b"unilab generated box".ljust(80, b"\0"))
        f.write(struct.pack("<I", len(_BOX_FACES)))
        for a, b, c in _BOX_FACES:
            n = np.cross(v[b] - v[a], v[c] - v[a])
            n = n / np.linalg.norm(n)
            f.write(struct.pack("<12fH", *n, *v[a], *v[b], *v[c], 0))


def write_box_obj(path: Path, lo, hi) -> None:
    """A Wavefront OBJ of the box ``[lo, hi]`` (m)."""
    v = _box_vertices(np.asarray(lo, np.float32), np.asarray(hi, np.float32))
    lines = ["# unilab generated box"] + [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in v]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in _BOX_FACES]
    path.write_text("\n".join(lines) + "\n")


def _capsule_box(body: str) -> tuple[np.ndarray, np.ndarray] | None:
    """Bounding box (lo, hi) of the built-in G1's non-foot collision primitives on ``body``."""
    pts = []
    for g in C.G1_COLLISION_GEOMS:
        if g.body != body or g.foot:
            continue
        centres = [g.fromto[:3], g.fromto[3:]] if g.kind == "capsule" else [g.pos]
        for c in centres:
            pts += [np.asarray(c) - g.radius, np.asarray(c) + g.radius]
    if not pts:
        return None
    pts = np.array(pts)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo) * 0.8  # a box inside the capsules' corners
    return mid - half, mid + half


def _f(values) -> str:
    return " ".join(f"{float(x):.6g}" for x in values)


def write_meshed_g1(
    folder: str | Path,
    *,
    kp: float = 500.0,
    dampratio: float = 1.0,
    armature: float = 0.01,
    frictionloss: float = 0.3,
) -> Path:
    """Write a meshed G1 (``scene.xml`` including ``g1.xml``, meshes in ``assets/``) to ``folder``.

    Args:
        folder: created if missing.
        kp, dampratio: the file's position actuators (N*m/rad; critical damping ratio).
        armature: the file's joint armature, kg*m^2. frictionloss: the file's joint friction, N*m.

    Returns:
        The path of ``scene.xml``.
    """
    folder = Path(folder)
    assets = folder / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    meshes: list[str] = []
    visual: dict[str, str] = {}
    collision: dict[str, str] = {}
    for i, b in enumerate(C.G1_BODIES):
        box = _capsule_box(b.name)
        com = np.asarray(b.com)
        vis_lo, vis_hi = (box if box is not None else (com - 0.02, com + 0.02))
        ext = "obj" if i % 2 else "STL"  # both formats, as checkouts mix them
        writer = write_box_obj if ext == "obj" else write_box_stl
        writer(assets / f"{b.name}.{ext}", vis_lo, vis_hi)
        meshes.append(f'    <mesh name="{b.name}_vis" file="{b.name}.{ext}"/>')
        visual[b.name] = f"{b.name}_vis"
        if box is not None:
            write_box_stl(assets / f"{b.name}_col.STL", *box)
            meshes.append(f'    <mesh name="{b.name}_col" file="{b.name}_col.STL"/>')
            collision[b.name] = f"{b.name}_col"

    joint_of = {j.body: j for j in C.G1_JOINTS}
    children: dict[str, list] = {}
    for b in C.G1_BODIES:
        children.setdefault(b.parent, []).append(b)
    imu = next(s for s in C.G1_SITES if s.name == C.IMU_SITE)

    def body_xml(b, depth: int) -> list[str]:
        pad = "  " * depth
        quat = f' quat="{_f(b.quat)}"' if b.quat is not None else ""
        cls = ' childclass="g1"' if b.parent == "world" else ""
        out = [f'{pad}<body name="{b.name}" pos="{_f(b.pos)}"{quat}{cls}>',
               f'{pad}  <inertial pos="{_f(b.com)}" quat="{_f(b.inertia_quat)}" mass="{b.mass:g}" '
               f'diaginertia="{_f(b.inertia)}"/>']
        if b.parent == "world":
            out.append(f'{pad}  <freejoint name="{C.FLOATING_BASE_JOINT}"/>')
            out.append(f'{pad}  <site name="{imu.name}" pos="{_f(imu.pos)}"/>')
        if b.name in joint_of:
            j = joint_of[b.name]
            effort = C.EFFORT_LIMIT[j.name]
            out.append(f'{pad}  <joint name="{j.name}" axis="{_f(j.axis)}" range="{_f(j.range)}" '
                       f'actuatorfrcrange="{-effort:g} {effort:g}"/>')
        out.append(f'{pad}  <geom class="visual" mesh="{visual[b.name]}"/>')
        if b.name in collision:
            out.append(f'{pad}  <geom class="collision" mesh="{collision[b.name]}"/>')
        if b.name in C.FOOT_BODIES:
            out += [f'{pad}  <geom class="foot" pos="{x:g} {y:g} -0.025"/>' for x, y in FOOT_SPHERES]
            side = "left" if b.name.startswith("left") else "right"
            out.append(f'{pad}  <site name="{side}_foot"/>')
        for child in children.get(b.name, []):
            out += body_xml(child, depth + 1)
        out.append(f"{pad}</body>")
        return out

    stand = dict(C.HOME_JOINT_POS)
    qpos = [0.0, 0.0, 0.79, 1.0, 0.0, 0.0, 0.0] + [stand[j] for j in C.G1_JOINT_NAMES]
    robot = "\n".join([
        '<mujoco model="g1_meshed_fixture">',
        '  <compiler angle="radian" meshdir="assets" autolimits="true"/>',
        "  <default>",
        '    <default class="g1">',
        '      <site size="0.01" rgba="1 0 0 1" group="5"/>',
        f'      <joint armature="{armature:g}" frictionloss="{frictionloss:g}"/>',
        f'      <position kp="{kp:g}" dampratio="{dampratio:g}" inheritrange="1"/>',
        '      <default class="visual">',
        '        <geom type="mesh" group="2" contype="0" conaffinity="0" density="0" rgba="0.7 0.7 0.7 1"/>',
        "      </default>",
        '      <default class="collision">',
        '        <geom type="mesh" group="3"/>',
        '        <default class="foot">',
        '          <geom type="sphere" size="0.01" friction="0.8"/>',
        "        </default>",
        "      </default>",
        "    </default>",
        "  </default>",
        "  <asset>",
        *meshes,
        "  </asset>",
        "  <worldbody>",
        *body_xml(C.G1_BODIES[0], 2),
        "  </worldbody>",
        "  <contact>",
        *(f'    <exclude body1="{a}" body2="{b}"/>' for a, b in C.G1_CONTACT_EXCLUDES),
        "  </contact>",
        "  <actuator>",
        *(f'    <position class="g1" name="{j}_motor" joint="{j}"/>' for j in C.G1_JOINT_NAMES),
        "  </actuator>",
        "  <sensor>",
        f'    <gyro name="pelvis-gyro" site="{imu.name}"/>',
        f'    <accelerometer name="pelvis-accel" site="{imu.name}"/>',
        "  </sensor>",
        "  <keyframe>",
        f'    <key name="stand" qpos="{_f(qpos)}" ctrl="{_f(qpos[7:])}"/>',
        "  </keyframe>",
        "</mujoco>",
    ])
    (folder / "g1.xml").write_text(robot + "\n")
    scene = "\n".join([
        '<mujoco model="g1_meshed_fixture scene">',
        '  <include file="g1.xml"/>',
        "  <asset>",
        '    <texture type="2d" name="ground" builtin="checker" rgb1="0.2 0.3 0.4" rgb2="0.1 0.2 0.3" '
        'width="300" height="300"/>',
        '    <material name="ground" texture="ground" texuniform="true" texrepeat="5 5"/>',
        "  </asset>",
        "  <worldbody>",
        '    <light pos="0 0 3.5" dir="0 0 -1" directional="true"/>',
        '    <geom name="ground_plane" size="0 0 0.05" type="plane" material="ground"/>',
        "  </worldbody>",
        "</mujoco>",
    ])
    (folder / "scene.xml").write_text(scene + "\n")
    return folder / "scene.xml"


def main(argv: list[str] | None = None) -> int:
    """``python -m unilab.robots.testing FOLDER [--kp KP] [--overwrite]``: write the meshed G1 and
    print its ``scene.xml``. A folder that already holds a ``scene.xml`` or ``g1.xml`` (a robot
    model, perhaps the user's own) is refused with one ``error:`` line and exit 2, unless
    ``--overwrite``."""
    p = argparse.ArgumentParser(description="Write a generated meshed G1 (scene.xml, g1.xml, assets/).")
    p.add_argument("folder")
    p.add_argument("--kp", type=float, default=500.0)
    p.add_argument("--overwrite", action="store_true", help="replace the scene.xml and g1.xml already in FOLDER")
    args = p.parse_args(argv)
    taken = [name for name in ("scene.xml", "g1.xml") if (Path(args.folder) / name).exists()]
    if taken and not args.overwrite:
        print(f"error: {args.folder} already holds {' and '.join(taken)}; expected a new or empty folder "
              f"(or pass --overwrite to replace them)", file=sys.stderr)
        return 2
    print(write_meshed_g1(args.folder, kp=args.kp))
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["FOOT_SPHERES", "write_box_obj", "write_box_stl", "write_meshed_g1"]
