"""A user's own G1 MJCF, as users have one: a meshed G1 laid out like a Menagerie checkout
(``scene.xml`` including ``g1.xml``, meshes in ``assets/``), generated here with box meshes, its
own sensor and geom names and its own gains (:func:`unilab.robots.testing.write_meshed_g1`).

The scene builder reads it as a model spec: meshes resolve relative to the file from any working
directory, the task's sensors, sites and keyframes are added, the drives follow
``robot.actuators``, friction randomization finds the unnamed foot geoms by body. Then
``unilab train``, ``play`` and ``export`` run with it from other working directories, with both
actuator choices.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import mujoco
import numpy as np
import pytest
import torch
from rich.console import Console

from unilab.robots import SoleGeom
from unilab.robots import g1
from unilab.robots.g1 import G1
from unilab.robots.scene import (
    FOOT_SITES,
    SENSOR_NAMES,
    RobotModelError,
    brief_reports,
    build_scene,
    print_report,
    sole_centre,
)
from unilab.robots.testing import write_meshed_g1

UNILAB = str(Path(sys.executable).parent / "unilab")
TINY = [
    "training.num_envs=2", "training.max_iterations=2", "algo.batch_size=16", "algo.num_updates=1",
    "algo.learning_starts=1", "algo.buffer_size_per_env=8", "sim.nthread=1", "training.device=cpu",
    "training.progress=false",
]


@pytest.fixture(scope="module")
def meshed(tmp_path_factory) -> Path:
    """The generated meshed G1's scene.xml (kp 500, dampratio 1, armature 0.01, frictionloss 0.3)."""
    return write_meshed_g1(tmp_path_factory.mktemp("user") / "unitree_g1")


def robot(mjcf, actuators="project", feet="model"):
    """The run's robot settings for ``mjcf``; the file's own feet unless ``feet`` says otherwise."""
    return SimpleNamespace(name="g1", mjcf=str(mjcf), actuators=actuators, feet=feet)


def cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, UNILAB_STRICT_PLUGINS="1")
    return subprocess.run([UNILAB, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


# ---------------------------------------------------------------------------- the scene
def test_scene_text_compiles_anywhere_with_the_files_meshes(meshed, tmp_path, monkeypatch):
    elsewhere = tmp_path / "a"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    relative = os.path.relpath(meshed, elsewhere)
    xml = build_scene(G1, mjcf=relative).to_xml()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "b")
    model = mujoco.MjModel.from_xml_string(xml)
    user = mujoco.MjModel.from_xml_path(str(meshed))
    assert model.nmesh == user.nmesh > 30
    np.testing.assert_allclose(model.mesh_vert, user.mesh_vert)  # the same files, read from the folder


def test_the_robot_file_alone_gets_a_floor(meshed):
    scene = build_scene(G1, mjcf=meshed.parent / "g1.xml", feet="model")
    model = scene.compile()
    assert model.geom("floor").type[0] == mujoco.mjtGeom.mjGEOM_PLANE
    assert any("floor plane 'floor' added" in c for c in scene.report.changes)
    # the added floor comes first among the geoms: the foot priority still lands on the 8 foot spheres
    feet = [g for g in range(model.ngeom) if model.body(int(model.geom_bodyid[g])).name in G1.feet]
    colliding = [g for g in feet if model.geom_contype[g]]
    assert len(colliding) == 8
    assert all(model.geom_priority[g] > model.geom("floor").priority[0] for g in colliding)
    assert not any(model.geom_priority[g] for g in feet if not model.geom_contype[g])  # visuals untouched
    # the user's scene has its own floor: nothing added
    model = build_scene(G1, mjcf=meshed).compile()
    assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "floor") == -1
    assert model.geom("ground_plane").bodyid[0] == 0


def test_what_the_task_needs_is_added_to_the_users_model(meshed):
    scene = build_scene(G1, mjcf=meshed, feet="model")
    model = scene.compile()
    names = [model.sensor(i).name for i in range(model.nsensor)]
    assert names[:2] == ["pelvis-gyro", "pelvis-accel"]  # the file's own, kept
    assert names[2:] == list(SENSOR_NAMES)
    # foot sites: moved from the ankle origin to the bottom centre of the four foot spheres
    for site in ("left_foot", "right_foot"):
        np.testing.assert_allclose(model.site(site).pos, [0.035, 0.0, -0.035], atol=1e-9)
    assert sum("moved" in c for c in scene.report.changes) == 2
    # foot spheres (unnamed) above the floor's contact priority
    feet = [g for g in range(model.ngeom) if model.body(int(model.geom_bodyid[g])).name in G1.feet
            and model.geom_contype[g]]
    assert len(feet) == 8 and all(model.geom(g).name == "" for g in feet)
    assert all(model.geom_priority[g] > model.geom("ground_plane").priority[0] for g in feet)
    assert [model.key(k).name for k in range(model.nkey)] == ["knees_bent", "home", "stand"]
    assert model.opt.timestep == 0.005 and model.opt.iterations == 10
    assert model.camera("tracking").bodyid[0] == model.body("pelvis").id
    d = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, d, 0)
    mujoco.mj_forward(model, d)
    np.testing.assert_allclose(d.sensor("imu_upvector").data, [0, 0, 1], atol=1e-9)
    np.testing.assert_allclose(d.sensor("left_foot_pos").data, d.site("left_foot").xpos)


def test_project_drives_replace_the_files_and_a_table_shows_it(meshed):
    scene = build_scene(G1, mjcf=meshed, actuators="project")
    model = scene.compile()
    for j, drive in G1.drives.items():
        a = model.actuator(f"{j}_motor")  # the file's actuator, reused
        assert a.gainprm[0] == pytest.approx(drive.kp) and -a.biasprm[2] == pytest.approx(drive.kd)
        assert a.forcerange[1] == pytest.approx(drive.effort_limit) and a.ctrllimited[0] == 0
        dof = model.jnt_dofadr[model.joint(j).id]
        assert model.dof_armature[dof] == pytest.approx(drive.armature)
        assert model.dof_frictionloss[dof] == 0.0
    assert scene.action_scale == pytest.approx(G1.action_scale())
    text_model = mujoco.MjModel.from_xml_string(scene.to_xml())  # what the env and backend compile
    for field in ("actuator_gainprm", "actuator_biasprm", "actuator_ctrllimited", "actuator_forcerange",
                  "dof_armature", "dof_frictionloss", "key_qpos", "key_ctrl", "site_pos"):
        np.testing.assert_allclose(getattr(text_model, field), getattr(model, field), rtol=1e-5, atol=1e-7)
    diff = scene.report.differences()
    assert set(diff) == set(G1.joint_names)
    assert {"kp", "kd", "armature", "frictionloss"} <= set(diff["left_knee_joint"])
    console = Console(record=True, width=250)
    assert print_report(scene.report, console=console, once=False)
    text = console.export_text()
    assert "robot.actuators=project" in text and "29 of 29 joints differ" in text
    assert re.search(r"left_knee_joint .*500 → 99\.1 .*0\.3 → 0 ", text), text


def test_a_report_shown_once_per_process_still_shows_a_scene_with_other_feet(meshed, monkeypatch):
    from unilab.robots import scene as scene_module

    monkeypatch.setattr(scene_module, "_PRINTED", set())
    shown = []
    for feet in ("project", "project", "model"):
        console = Console(record=True, width=250)
        shown.append(print_report(build_scene(G1, mjcf=meshed, feet=feet).report, console=console))
    assert shown == [True, False, True]


def test_a_brief_report_is_the_title_and_the_changes_without_the_table(meshed):
    scene = build_scene(G1, mjcf=meshed)
    assert scene.report.changes
    outputs = []
    for brief in (True, False):
        console = Console(record=True, width=250)
        if brief:
            with brief_reports():
                assert print_report(scene.report, console=console, once=False)
        else:  # the default again after the block
            assert print_report(scene.report, console=console, once=False)
        outputs.append(console.export_text())
    brief_text, full = outputs
    assert brief_text.splitlines() == [scene.report.title(), *(f"  {c}" for c in scene.report.changes)]
    assert "left_knee_joint" in full and scene.report.title() in full


def test_file_drives_are_kept_and_scale_the_actions(meshed):
    scene = build_scene(G1, mjcf=meshed, actuators="file")
    model = scene.compile()
    knee = model.actuator("left_knee_joint_motor")
    assert knee.gainprm[0] == 500.0
    assert -knee.biasprm[2] > 0  # the file's dampratio, resolved by MuJoCo
    dof = model.jnt_dofadr[model.joint("left_knee_joint").id]
    assert model.dof_frictionloss[dof] == pytest.approx(0.3)
    # effort from the joint's actuatorfrcrange (139 N*m): 0.25 * 139 / 500
    assert scene.action_scale["left_knee_joint"] == pytest.approx(0.25 * 139.0 / 500.0)
    assert "the file's drives are kept" in scene.report.title()
    console = Console(record=True, width=250)
    assert print_report(scene.report, console=console, once=False)
    text = console.export_text()  # the file's values, used; the project's only for comparison
    assert re.search(r"left_knee_joint .*500 \(project 99\.1\) .*0\.3 \(project 0\) .*0\.0695 \(project 0\.3507\)",
                     text), text
    assert "→" not in text


def test_file_action_scales_far_from_the_projects_are_a_warning_in_the_report(meshed):
    """kp 500 on every joint gives 0.029-0.2 x the project's rad per action unit: the action box
    reaches ±646 units (±21.7 with the project's scale) and action_rate_l2 weighs the same joint
    motion 25.5-1231 x as much; the report says so, and play, export and eval print it too."""
    report = build_scene(G1, mjcf=meshed, actuators="file").report
    (line,) = [c for c in report.changes if c.startswith("warning: action scale:")]
    assert "0.0285-0.198 x the project's rad per action unit on 29 of 29 joints (outside 0.5-2 x" in line
    assert "the action box reaches ±646 action units (±21.7 with the project's scale)" in line
    assert "action_rate_l2" in line and "25.5-1231 x as much" in line and "robot.actuators=project" in line
    assert not any("action scale" in c for c in build_scene(G1, mjcf=meshed, actuators="project").report.changes)


def test_the_action_scale_warning_needs_a_joint_outside_the_documented_range():
    from unilab.robots.scene import ACTION_SCALE_RATIO_RANGE, action_scale_warning

    assert ACTION_SCALE_RATIO_RANGE == (0.5, 2.0)
    model = G1.model().compile()
    project = G1.action_scale()
    inside = {j: s * (0.5 if i % 2 else 2.0) for i, (j, s) in enumerate(project.items())}
    assert action_scale_warning(model, G1, inside, project) is None
    one_off = dict(project, left_knee_joint=project["left_knee_joint"] * 0.4)
    line = action_scale_warning(model, G1, one_off, project)
    assert line.startswith("warning: action scale: the file's drives give 0.4-0.4 x the project's rad per action "
                           "unit on 1 of 29 joints (outside 0.5-2 x; 'left_knee_joint'")
    assert "weigh the same joint motion 6.25 x as much" in line
    stiffer = dict(project, left_knee_joint=project["left_knee_joint"] * 3.0)  # a larger scale: penalties weigh less
    assert "weigh the same joint motion 0.111 x as much" in action_scale_warning(model, G1, stiffer, project)


def _edited(meshed: Path, tmp_path: Path, old: str, new: str, count: int = 1) -> Path:
    """A copy of the meshed G1 whose g1.xml has ``old`` replaced by ``new`` (``count`` times, -1: all)."""
    folder = tmp_path / "edited"
    shutil.copytree(meshed.parent, folder)
    text = (folder / "g1.xml").read_text()
    assert old in text
    (folder / "g1.xml").write_text(text.replace(old, new, count))
    return folder / "scene.xml"


def test_a_motor_actuator_becomes_a_servo_or_is_refused_with_file(meshed, tmp_path):
    path = _edited(meshed, tmp_path, '<position class="g1" name="left_knee_joint_motor" joint="left_knee_joint"/>',
                   '<motor name="knee_torque" joint="left_knee_joint" ctrlrange="-139 139"/>')
    scene = build_scene(G1, mjcf=path, actuators="project")
    assert scene.compile().actuator("knee_torque").gainprm[0] == pytest.approx(G1.drives["left_knee_joint"].kp)
    assert scene.report.differences()["left_knee_joint"][0] == "kind"
    with pytest.raises(RobotModelError) as err:
        build_scene(G1, mjcf=path, actuators="file")
    message = str(err.value)
    assert "\n" not in message and "robot.actuators=file" in message
    assert "'knee_torque'" in message and "'left_knee_joint'" in message and str(path) in message


def test_friction_randomization_reaches_the_unnamed_foot_geoms(meshed):
    from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
    from unisim.backends.mujoco import MujocoBackend

    n = 4
    env = make_env(G1WalkFlatConfig(), backend_cls=MujocoBackend, num_envs=n, nthread=1, robot=robot(meshed), seed=2)
    try:
        friction = env.backend.model_field("geom_friction")
        feet = env.meta.collision_geom_ids(G1.feet)
        assert len(feet) == 8 and all(env.meta.geom_names[g] == "" for g in feet)
        mu = friction[:, feet, 0]
        assert torch.equal(mu, mu[:, :1].expand_as(mu)) and len(torch.unique(mu[:, 0])) == n
        assert ((mu >= 0.3) & (mu <= 1.2)).all()
        others = [g for g in range(friction.shape[1]) if g not in feet]
        file_mu = torch.tensor(env.backend.model.geom_friction[others, 0])
        assert torch.equal(friction[:, others, 0], file_mu.expand(n, -1).to(friction.dtype))
    finally:
        env.close()


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("case", ["missing_joint", "no_file", "not_xml", "directory", "missing_mesh"])
def test_bad_robot_file_is_one_error_line(meshed, tmp_path, case, unilab_in_process):
    if case == "missing_joint":
        path = _edited(meshed, tmp_path, "left_knee_joint", "knee_l", -1)  # the joint and its actuator
        expected = [f"{path} has no joint 'left_knee_joint'", "which robot 'g1' needs"]
    elif case == "no_file":
        path = tmp_path / "nope" / "g1.xml"
        expected = [f"robot.mjcf: no such file '{path}'"]
    elif case == "not_xml":
        path = tmp_path / "notes.txt"
        path.write_text("joints: 29\n")
        expected = [f"robot.mjcf: '{path}' is not an MJCF (XML) file", "expected a MuJoCo model (.xml)"]
    elif case == "directory":
        path = meshed.parent
        expected = [f"robot.mjcf: '{path}' is a directory, expected an MJCF file"]
    else:  # a mesh moved out of the folder meshdir names: MuJoCo alone names the wrong folder
        folder = tmp_path / "moved"
        shutil.copytree(meshed.parent, folder)
        (folder / "assets" / "left_knee_link.STL").rename(tmp_path / "left_knee_link.STL")
        path = folder / "scene.xml"
        expected = [f"robot.mjcf: {path}: mesh 'left_knee_link_vis': no such file "
                    f"'{folder / 'assets' / 'left_knee_link.STL'}' (meshdir 'assets' of the model"]
    work = tmp_path / "work"
    work.mkdir()
    result = unilab_in_process("train", "--algo", "sac", "--task", "g1_walk_flat", *TINY, f"robot.mjcf={path}",
                               f"training.log_dir={work / 'logs'}", cwd=work)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.strip() and not ln.startswith("WARNING")]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert all(e in lines[0] for e in expected), lines[0]
    assert "Traceback" not in result.stderr


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_missing_asset_is_named_where_mujoco_looks_for_it(meshed, tmp_path, monkeypatch):
    """Meshes, heightfields and textures, at meshdir/texturedir (assetdir sets both) beside the
    model file, also from another working directory; an included file's folder is named too."""
    rel = ", relative to its folder)"
    cases = {
        "mesh.xml": ('<mujoco><compiler meshdir="parts"/><asset><mesh file="leg.stl"/></asset></mujoco>',
                     "mesh 'leg': no such file '{d}/parts/leg.stl' (meshdir 'parts' of the model" + rel),
        "hfield.xml": ('<mujoco><compiler assetdir="a"/><asset><hfield name="ground" file="g.png" '
                       'size="1 1 1 1"/></asset></mujoco>',
                       "hfield 'ground': no such file '{d}/a/g.png' (meshdir 'a' of the model" + rel),
        "cube.xml": ('<mujoco><compiler texturedir="tex"/><asset><texture name="sky" type="cube" '
                     'fileright="r.png" fileleft="l.png" fileup="u.png" filedown="d.png" filefront="f.png" '
                     'fileback="b.png"/></asset></mujoco>',
                     "texture 'sky': no such file '{d}/tex/r.png' (texturedir 'tex' of the model" + rel),
        "absolute.xml": ('<mujoco><asset><mesh name="m" file="{d}/elsewhere/m.stl"/></asset></mujoco>',
                         "mesh 'm': no such file '{d}/elsewhere/m.stl' (an absolute path in the model)"),
    }
    d = tmp_path / "model"
    monkeypatch.chdir(tmp_path)  # relative to the model file, not to the working directory
    for name, (xml, expected) in cases.items():
        path = _write(d / name, xml.format(d=d))
        with pytest.raises(RobotModelError) as info:
            build_scene(G1, mjcf=path)
        assert str(info.value) == f"robot.mjcf: {path}: " + expected.format(d=d), name
    # Menagerie's layout, the robot included from a sub-folder, its meshes in that folder's assets/:
    # MuJoCo reads meshdir relative to the main file, so neither place has them.
    nested = tmp_path / "nested"
    shutil.copytree(meshed.parent, nested / "robot")
    scene = _write(nested / "scene.xml", (meshed.parent / "scene.xml").read_text().replace(
        'file="g1.xml"', 'file="robot/g1.xml"'))
    with pytest.raises(RobotModelError, match=re.escape(
        f"no such file '{nested / 'assets' / 'pelvis.STL'}' (meshdir 'assets' of the model, relative to "
        f"its folder); nor is it beside the included file: '{nested / 'robot' / 'pelvis.STL'}'"
    )):
        build_scene(G1, mjcf=scene)


def test_an_empty_robot_mjcf_is_the_robots_own_model(tmp_path, unilab_in_process):
    result = unilab_in_process("config", "--algo", "sac", "--task", "g1_walk_flat", "robot.mjcf=", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^robot:\n(  .*\n)*  mjcf: null$", result.stdout, re.M), result.stdout
    assert build_scene(G1, mjcf="").report.source == "built-in"


def test_an_unknown_robot_name_is_one_error_line(tmp_path, unilab_in_process):
    result = unilab_in_process("train", "--algo", "sac", "--task", "g1_walk_flat", *TINY, "robot.name=h1",
                               f"training.log_dir={tmp_path / 'logs'}", cwd=tmp_path)
    assert result.returncode == 2
    lines = [ln for ln in result.stderr.splitlines() if ln.strip() and not ln.startswith("WARNING")]
    assert len(lines) == 1 and "robot.name: unknown robot 'h1'; valid choices: g1" in lines[0], result.stderr


# ---------------------------------------------------------------------------- train, play, export
@pytest.mark.parametrize("actuators, knee_kp, knee_scale", [
    ("project", G1.drives["left_knee_joint"].kp, G1.action_scale()["left_knee_joint"]),
    ("file", 500.0, 0.25 * 139.0 / 500.0),
])
def test_train_play_export_from_other_directories(meshed, tmp_path, actuators, knee_kp, knee_scale):
    train_dir, other = tmp_path / "train_here", tmp_path / "play_here"
    train_dir.mkdir()
    other.mkdir()
    relative = os.path.relpath(meshed, train_dir)
    result = cli("train", "--algo", "sac", "--task", "g1_walk_flat", "--preset", "laptop", *TINY,
                 f"robot.mjcf={relative}",
                 f"robot.actuators={actuators}", "training.no_play=true", "training.log_dir=logs", cwd=train_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    title = f"robot.actuators={actuators}: robot 'g1' from {meshed}"
    assert title in result.stderr and "left_knee_joint" in result.stderr  # never silent: train shows the table
    (run_dir,) = (train_dir / "logs" / "sac" / "g1_walk_flat").iterdir()
    config = json.loads((run_dir / "run_config.json").read_text())["config"]["robot"]
    assert config == {"name": "g1", "mjcf": str(meshed), "actuators": actuators, "feet": "project"}
    assert "robot.feet=project: 8 foot collision geoms replaced by the soles of robot 'g1'" in result.stderr

    played = cli("play", str(run_dir), "--num-envs", "1", "--steps", "6", "--no-video", cwd=other)
    assert played.returncode == 0, played.stdout + played.stderr
    exported = cli("export", str(run_dir), cwd=other)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    from unilab.deploy.export import read_metadata

    meta = read_metadata(run_dir / "policy.onnx")
    knee = meta["action"]["joint_names"].index("left_knee_joint")
    assert meta["pd_gains"]["kp"][knee] == pytest.approx(knee_kp, rel=1e-5)
    assert meta["action"]["scale"][knee] == pytest.approx(knee_scale, rel=1e-5)
    assert meta["robot"] == config  # the exported policy names the model file it was trained on

    record = other / "stand.json"
    evaluated = cli("eval", str(run_dir), "--case", "stand", "--num-envs", "1", "--json", str(record), cwd=other)
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    assert json.loads(record.read_text())["robot"] == config  # so does the evaluation's record

    # play, export and eval: the report's title (how many joints differ) and changes, once; no table
    changes = build_scene(G1, mjcf=meshed, actuators=actuators).report.changes
    for command in (played, exported, evaluated):
        assert command.stderr.count(title) == 1 and "29 of 29 joints differ" in command.stderr, command.stderr
        assert "left_knee_joint" not in command.stderr and "kp [N·m/rad]" not in command.stderr, command.stderr
        assert all(change[:60] in command.stderr for change in changes), command.stderr


def test_a_moved_model_file_is_named_at_its_new_path(meshed, tmp_path, unilab_in_process):
    """After training on a file that then moved, play, eval and export say what to do; eval and
    export take robot.mjcf=FILE (and nothing else) and record the file they used."""
    from unilab.deploy.export import read_metadata

    cli = unilab_in_process  # what these commands print and write; the runtime of the run plays no part
    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(meshed.parent, old)
    result = cli("train", "--algo", "sac", "--task", "g1_walk_flat", *TINY, f"robot.mjcf={old / 'scene.xml'}",
                 "runtime.mode=sync", "training.eval_interval=0", "training.no_play=true", "training.log_dir=logs",
                 cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    (run_dir,) = (tmp_path / "logs" / "sac" / "g1_walk_flat").iterdir()
    old.rename(new)
    for args in (["play", "--no-video", "--steps", "2"], ["eval", "--case", "stand"], ["export"]):
        failed = cli(args[0], str(run_dir), *args[1:], cwd=tmp_path)
        assert failed.returncode == 2, failed.stderr
        lines = [ln for ln in failed.stderr.splitlines() if ln.strip()]
        assert lines == [f"error: robot.mjcf: no such file '{old / 'scene.xml'}': the run {run_dir} was trained on "
                         "that model file; put it back at that path, or name where it is now with robot.mjcf=FILE "
                         "after the run (unilab play, eval and export take it)"], failed.stderr
    refused = cli("export", str(run_dir), "env.push.enabled=false", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.strip() == (
        "error: unilab export takes robot.mjcf=FILE only (the run's model file at a new path), got "
        "'env.push.enabled=false'; other settings are the run's (unilab play takes overrides)")

    moved = {"name": "g1", "mjcf": str(new / "scene.xml"), "actuators": "project", "feet": "project"}
    exported = cli("export", str(run_dir), "robot.mjcf=new/scene.xml", cwd=tmp_path)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert read_metadata(run_dir / "policy.onnx")["robot"] == moved
    record = tmp_path / "stand.json"
    evaluated = cli("eval", str(run_dir), "--case", "stand", "--num-envs", "1", "--json", str(record),
                    f"robot.mjcf={new / 'scene.xml'}", cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    assert json.loads(record.read_text())["robot"] == moved


# ---------------------------------------------------------------------------- robot.feet
def _foot_geoms(model: mujoco.MjModel, body: str) -> list[int]:
    return [g for g in range(model.ngeom) if model.geom_bodyid[g] == model.body(body).id and model.geom_contype[g]]


@pytest.mark.parametrize("source", ["built-in", "meshed robot file"])
def test_sphere_feet_keep_the_sole_and_its_contact_settings(meshed, source):
    mjcf = None if source == "built-in" else meshed.parent / "g1.xml"
    plain = build_scene(G1, mjcf=mjcf, feet="model").compile()
    scene = build_scene(G1, mjcf=mjcf, feet="spheres")
    model = scene.compile()
    assert any("robot.feet=spheres" in c for c in scene.report.changes)
    if source == "built-in":  # no file to speak of
        assert scene.report.title() == ("robot.actuators=project: robot 'g1' (built-in model): its drives equal "
                                         "the project's (0 of 29 joints differ)")
    else:
        assert scene.report.title().startswith(f"robot.actuators=project: robot 'g1' from {meshed.parent / 'g1.xml'}: "
                                               "the project's drives replace the file's")
    for body in G1.feet:
        before, after = _foot_geoms(plain, body), _foot_geoms(model, body)
        assert len(after) == 4 and len(before) >= 4
        assert all(model.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE for g in after)
        np.testing.assert_allclose(model.geom_size[after, 0], 0.01)
        # the same sole: its bottom centre (the foot site) and its x-y extent, up to the radius
        np.testing.assert_allclose(sole_centre(model, body), sole_centre(plain, body), atol=1e-9)
        lo = (model.geom_pos[after] - 0.01).min(axis=0)
        hi = (model.geom_pos[after] + 0.01).max(axis=0)
        np.testing.assert_allclose(lo, _box(plain, before)[0], atol=1e-9)
        np.testing.assert_allclose(hi[:2], _box(plain, before)[1][:2], atol=1e-9)
        # the contact settings of the geoms they replace (and above the floor's priority)
        for field in ("geom_condim", "geom_priority", "geom_friction", "geom_solref", "geom_solimp"):
            np.testing.assert_array_equal(getattr(model, field)[after], getattr(plain, field)[before[:1]].repeat(4, 0))
    assert np.array_equal(model.site("left_foot").pos, plain.site("left_foot").pos)


def _box(model, geoms):
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=float)
    pts = []
    for g in geoms:
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, model.geom_quat[g])
        pts.append((model.geom_aabb[g, :3] + signs * model.geom_aabb[g, 3:]) @ rot.reshape(3, 3).T + model.geom_pos[g])
    pts = np.concatenate(pts)
    return pts.min(axis=0), pts.max(axis=0)


def _stand(spec: mujoco.MjSpec) -> tuple[mujoco.MjModel, mujoco.MjData]:
    """The scene settled on both feet: keyframe 0, its controls held with gains x10, 300 steps."""
    for act in spec.actuators:
        act.gainprm[0] *= 10.0
        act.biasprm[1] *= 10.0
    model = spec.compile()
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    data.ctrl[:] = model.key_ctrl[0]
    mujoco.mj_step(model, data, 300)
    assert data.qpos[2] > 0.7  # still standing
    return model, data


def test_sphere_feet_stand_on_fewer_contacts():
    """Settled on both feet at the default pose (gains x10 hold it), the built-in G1 touches the
    floor at 2 points per sole capsule; with sphere feet at one per sphere."""
    counts = {feet: _stand(build_scene(G1, feet=feet).spec)[1].ncon for feet in ("model", "spheres")}
    assert counts == {"model": 28, "spheres": 8}


# ---------------------------------------------------------------------------- robot.feet=project
def _capsule_ends(model: mujoco.MjModel, g: int) -> set[tuple[float, ...]]:
    """The two end points of capsule ``g``'s axis in its body's frame, m, rounded to 1e-9."""
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, model.geom_quat[g])
    half = rot.reshape(3, 3)[:, 2] * model.geom_size[g, 1]
    return {tuple(np.round(model.geom_pos[g] + s * half, 9)) for s in (-1.0, 1.0)}


def test_project_feet_give_a_meshed_file_the_descriptions_soles(meshed):
    """The user's four foot spheres stop colliding; each foot collides through the seven sole
    capsules of the G1's collision set instead, with the sole friction, the file's other contact
    settings, and the foot site at their sole centre, where the built-in model has it."""
    from unilab.envs.robot import RobotMeta
    from unilab.robots.g1 import g1_constants as C

    plain = build_scene(G1, mjcf=meshed, feet="model").compile()
    scene = build_scene(G1, mjcf=meshed, feet="project")
    model = scene.compile()
    built_in = build_scene(G1).compile()
    assert ("robot.feet=project: 8 foot collision geoms replaced by the soles of robot 'g1' "
            "(7 capsules per foot, sliding friction 0.6; robot.feet=model keeps the file's)") in scene.report.changes
    assert ("robot.feet=model: the file's foot collision geoms kept (robot.feet=project gives them the soles of "
            "robot 'g1' the recipe was tuned on)") in build_scene(G1, mjcf=meshed, feet="model").report.changes
    assert not any(c.startswith("robot.feet") for c in build_scene(G1, feet="model").report.changes)
    for body in G1.feet:
        b = model.body(body).id
        spheres = [g for g in range(model.ngeom) if model.geom_bodyid[g] == b
                   and model.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE]
        assert len(spheres) == 4 and not model.geom_contype[spheres].any() and not model.geom_conaffinity[spheres].any()
        # kept where they were, as visuals
        np.testing.assert_array_equal(model.geom_pos[spheres], plain.geom_pos[_foot_geoms(plain, body)])
        soles = _foot_geoms(model, body)
        assert [model.geom(g).name for g in soles] == [f"{body}_sole{i}" for i in range(7)]
        assert all(model.geom_type[g] == mujoco.mjtGeom.mjGEOM_CAPSULE for g in soles)
        want = [s for s in C.G1_COLLISION_GEOMS if s.foot and s.body == body]
        for g, capsule in zip(soles, want):  # the constants' capsules, in the ankle-roll frame
            ends = {tuple(np.round(capsule.fromto[:3], 9)), tuple(np.round(capsule.fromto[3:], 9))}
            assert _capsule_ends(model, g) == ends
            assert model.geom_size[g, 0] == capsule.radius
        # friction: the description's sliding value (the file's spheres have 0.8), the rest the file's
        first = _foot_geoms(plain, body)[0]
        np.testing.assert_array_equal(model.geom_friction[soles], [[0.6, *plain.geom_friction[first, 1:]]] * 7)
        for field in ("geom_condim", "geom_solref", "geom_solimp", "geom_group", "geom_margin", "geom_gap"):
            np.testing.assert_array_equal(getattr(model, field)[soles], getattr(plain, field)[[first] * 7])
        assert all(model.geom_priority[soles] > model.geom("ground_plane").priority[0])
        # the foot site at the bottom centre of the new sole, which is the built-in model's sole
        site = FOOT_SITES[G1.feet.index(body)]
        np.testing.assert_allclose(model.site(site).pos, sole_centre(model, body), atol=1e-12)
        np.testing.assert_allclose(sole_centre(model, body), sole_centre(built_in, body), atol=1e-9)
        assert np.linalg.norm(model.site(site).pos - built_in.site(site).pos) < 1e-3
    # friction randomization and the task's tables find the soles by body
    meta = RobotMeta.from_mjcf(scene.to_xml(), G1.joint_names)
    assert {meta.geom_names[g] for g in meta.collision_geom_ids(G1.feet)} == {
        f"{body}_sole{i}" for body in G1.feet for i in range(7)}


def test_project_feet_stand_on_the_sole_capsules_and_the_contact_sensors_see_them(meshed):
    from unilab.envs.contact import add_contact_sensors
    from unilab.tasks.g1_walk_flat.env_cfg import FEET_GROUND, contact_sensors

    counts = {}
    for source, mjcf in (("meshed", meshed), ("built-in", None)):
        for feet in ("model", "project"):
            spec = build_scene(G1, mjcf=mjcf, feet=feet).spec
            add_contact_sensors(spec, contact_sensors(G1))
            model, data = _stand(spec)
            counts[source, feet] = data.ncon
            if feet == "project":  # each foot's sensor finds its 14 contacts and carries the weight
                found = [data.sensor(f"{FEET_GROUND}/{body}").data for body in G1.feet]
                assert [f[0] for f in found] == [14, 14]
                weight = mujoco.mj_getTotalmass(model) * -model.opt.gravity[2]
                assert -sum(f[3] for f in found) == pytest.approx(weight, rel=0.05)
    assert counts == {("meshed", "model"): 8, ("meshed", "project"): 28,
                      ("built-in", "model"): 28, ("built-in", "project"): 28}


def test_project_feet_on_the_built_in_model_keep_its_own_soles(monkeypatch):
    """The built-in G1's feet already are its soles: the scene is the one of robot.feet=model.
    Replacing them anyway (the same capsules) gives the same standing contacts and state."""
    from unilab.robots import scene as scene_module

    model_scene = build_scene(G1, feet="model")
    project = build_scene(G1, feet="project")
    assert project.report.changes == [
        "robot.feet=project: the foot collision geoms already are the soles of robot 'g1' (7 per foot); kept"]
    assert project.to_xml() == model_scene.to_xml()
    reference, settled = _stand(model_scene.spec)
    assert settled.ncon == 28

    monkeypatch.setattr(scene_module, "_soles_in_place", lambda model, robot: False)
    replaced = build_scene(G1, feet="project")
    assert any("14 foot collision geoms replaced by the soles of robot 'g1'" in c for c in replaced.report.changes)
    model, data = _stand(replaced.spec)
    assert model.ngeom == reference.ngeom + 14
    assert not any(model.geom(n).contype[0] for n in g1.FOOT_GEOM_NAMES)
    assert data.ncon == 28
    np.testing.assert_allclose(data.contact.pos[:28], settled.contact.pos[:28], rtol=0, atol=1e-9)
    np.testing.assert_allclose(data.qpos, settled.qpos, rtol=0, atol=1e-9)


def test_project_feet_match_soles_by_shape_not_by_how_they_are_written():
    """Capsules written end to start and in another order are the model's own (kept); one moved
    by 1 mm, one turned about its centre, or another sliding friction, is not (all replaced)."""
    def rewritten(shift=0.0, turn=False):
        out = {}
        for body, soles in G1.soles.items():
            flipped = [SoleGeom("capsule", s.size, fromto=(*s.fromto[3:], *s.fromto[:3])) for s in reversed(soles)]
            a, b = np.array(flipped[0].fromto[:3]), np.array(flipped[0].fromto[3:])
            if turn:  # the same centre and length, the axis along y instead of x
                c, h = 0.5 * (a + b), 0.5 * np.linalg.norm(b - a)
                a, b = c - [0.0, h, 0.0], c + [0.0, h, 0.0]
            flipped[0] = SoleGeom("capsule", flipped[0].size, fromto=(*(a + [shift, 0, 0]), *(b + [shift, 0, 0])))
            out[body] = tuple(flipped)
        return out

    kept = build_scene(dataclasses.replace(G1, soles=rewritten()), feet="project")
    assert any(c.endswith("already are the soles of robot 'g1' (7 per foot); kept") for c in kept.report.changes)
    for robot in (dataclasses.replace(G1, soles=rewritten(shift=0.001)),
                  dataclasses.replace(G1, soles=rewritten(turn=True)),
                  dataclasses.replace(G1, sole_friction=0.7)):
        scene = build_scene(robot, feet="project")
        assert any("14 foot collision geoms replaced" in c for c in scene.report.changes)
        model = scene.compile()
        assert all(model.geom_friction[_foot_geoms(model, b), 0].tolist() == [robot.sole_friction] * 7 for b in G1.feet)


def test_project_feet_give_feet_without_collision_geoms_a_sole(tmp_path):
    path = write_meshed_g1(tmp_path / "g1")
    robot_file = path.parent / "g1.xml"
    lines = robot_file.read_text().splitlines(True)
    robot_file.write_text("".join(ln for ln in lines if '<geom class="foot"' not in ln))  # feet: visuals only
    with pytest.raises(RobotModelError, match="foot body 'left_ankle_roll_link' has no collision geom"):
        build_scene(G1, mjcf=path, feet="model")
    scene = build_scene(G1, mjcf=path, feet="project")
    assert ("robot.feet=project: the soles of robot 'g1' added to feet without collision geoms (7 capsules per "
            "foot, sliding friction 0.6; robot.feet=model keeps the file's)") in scene.report.changes
    model = scene.compile()
    for body in G1.feet:
        soles = _foot_geoms(model, body)
        assert len(soles) == 7 and all(model.geom_condim[soles] == 3) and all(model.geom_friction[soles, 0] == 0.6)


def test_project_feet_without_soles_keeps_the_models_feet(meshed):
    """A description that gives no soles (a plugin robot may not) keeps the file's feet under the
    default ``robot.feet=project`` and says so in the report."""
    robot = dataclasses.replace(G1, soles={})
    scene = build_scene(robot, mjcf=meshed)
    assert ("robot.feet=project: robot 'g1' describes no sole geoms; the model's foot collision geoms kept"
            in scene.report.changes)
    model = scene.compile()
    for body in G1.feet:
        feet = _foot_geoms(model, body)
        assert len(feet) == 4 and all(model.geom_type[feet] == mujoco.mjtGeom.mjGEOM_SPHERE)


@pytest.mark.parametrize("soles, expected", [
    ({"left_ankle_roll_link": G1.soles["left_ankle_roll_link"]},
     "robot.feet=project: robot 'g1' describes no sole geoms for foot body 'right_ankle_roll_link'; describe "
     "both feet's, or use robot.feet=model or spheres"),
    ({**G1.soles, "left_ankle_roll_link": (SoleGeom("box", (0.1, 0.04), pos=(0.0, 0.0, -0.03)),)},
     "robot.feet=project: robot 'g1': sole geom 0 of 'left_ankle_roll_link': box size must be 3 positive numbers "
     "(m), got (0.1, 0.04)"),
])
def test_project_feet_without_sound_soles_is_one_line(soles, expected):
    robot = dataclasses.replace(G1, soles=soles)
    with pytest.raises(RobotModelError) as err:
        build_scene(robot, feet="project")
    assert str(err.value) == expected
    build_scene(robot, feet="model")  # the other choices do not need them
    if soles:
        assert robot.problems()  # the description says so too
    assert not G1.problems()


def test_project_feet_refuse_a_sole_friction_that_is_not_positive():
    robot = dataclasses.replace(G1, sole_friction=-0.5)
    with pytest.raises(RobotModelError) as err:
        build_scene(robot, feet="project")
    assert str(err.value) == "robot.feet=project: robot 'g1': sole_friction must be a positive number or None, got -0.5"
    assert robot.problems() == ["sole_friction must be a positive number or None, got -0.5"]


def test_robot_feet_is_one_error_line_when_bad(tmp_path, unilab_in_process):
    result = unilab_in_process("config", "--algo", "sac", "--task", "g1_walk_flat", "robot.feet=boxes", cwd=tmp_path)
    assert result.returncode == 2
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert line.startswith("error: ") and "robot.feet" in line and "boxes" in line
    assert "'project', 'model' or 'spheres'" in line


def test_a_run_with_sphere_feet_records_them_and_its_env_stands_on_them(tmp_path):
    result = cli("train", "--algo", "sac", "--task", "g1_walk_flat", "--preset", "laptop", *TINY,
                 "robot.feet=spheres", "training.no_play=true", "training.log_dir=logs", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "robot.feet=spheres: 14 foot collision geoms replaced" in result.stderr  # never silent
    (run_dir,) = (tmp_path / "logs" / "sac" / "g1_walk_flat").iterdir()
    config = json.loads((run_dir / "run_config.json").read_text())["config"]["robot"]
    assert config["feet"] == "spheres"

    from unilab.tasks.g1_walk_flat import G1WalkFlatConfig, make_env
    from unisim.backends.mujoco import MujocoBackend

    env = make_env(G1WalkFlatConfig(), backend_cls=MujocoBackend, num_envs=1, nthread=1,
                   robot=SimpleNamespace(name="g1", mjcf=None, actuators="project", feet="spheres"))
    try:
        model = env.backend.model  # the compiled model the env steps
        for body in G1.feet:
            geoms = _foot_geoms(model, body)
            assert len(geoms) == 4 and all(model.geom_type[g] == mujoco.mjtGeom.mjGEOM_SPHERE for g in geoms)
    finally:
        env.close()


def test_the_generator_refuses_a_folder_that_holds_a_model(tmp_path, capsys):
    from unilab.robots.testing import main

    own = tmp_path / "mine"
    own.mkdir()
    (own / "scene.xml").write_text("<mujoco/>")
    assert main([str(own)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {own} already holds scene.xml; expected a new or empty folder "
                   f"(or pass --overwrite to replace them)"]
    assert (own / "scene.xml").read_text() == "<mujoco/>"  # left as it was
    assert main([str(own), "--overwrite"]) == 0 and "<include" in (own / "scene.xml").read_text()
    assert main([str(tmp_path / "new")]) == 0 and (tmp_path / "new" / "g1.xml").is_file()

