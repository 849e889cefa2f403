"""Robot descriptions: the conformance check passes the built-in G1 and names every failure of a
broken one; the robot registry refuses an inconsistent description."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from unilab import hookspecs, plugins
from unilab.robots import Pose, get_robot
from unilab.robots.conformance import RobotConformanceError, check_robot
from unilab.robots.g1 import G1
from unisim.plugins import PluginRegistry

CHECKS = ["description", "mirror", "scene", "default_pose", "physics", "task:g1_walk_flat"]


def test_the_builtin_g1_passes_every_check():
    assert get_robot("g1") is G1
    result = check_robot("g1")
    assert result.ok and result.passed == CHECKS


def test_a_broken_description_fails_naming_each_check():
    pose = dict(G1.default_pose.joint_pos, left_knee_joint=0.9)  # the right knee stays at 0.669
    mirror = G1.joint_mirror() | {"left_hip_roll_joint": ("right_hip_roll_joint", 1.0)}
    broken = dataclasses.replace(G1, name="broken", keyframes={"crouch": Pose((0.0, 0.0, 0.76), pose)},
                                 mirror=mirror)
    with pytest.raises(RobotConformanceError) as err:
        check_robot(broken, tasks=())
    text = str(err.value)
    assert "FAIL mirror: joint 'left_hip_roll_joint' mirrors to ('right_hip_roll_joint', 1.0)" in text
    assert "FAIL default_pose: the default pose is not its own mirror image at 'left_knee_joint'" in text
    result = check_robot(broken, tasks=(), raise_on_failure=False)
    assert list(result.failed) == ["mirror", "default_pose"] and "scene" in result.passed


def test_a_robot_floating_above_the_floor_fails_the_default_pose():
    up = Pose((0.0, 0.0, 1.5), dict(G1.default_pose.joint_pos))
    high = dataclasses.replace(G1, name="high", keyframes={"up": up})
    result = check_robot(high, tasks=(), raise_on_failure=False)
    assert "lowest foot point is +0.74" in result.failed["default_pose"]


def test_an_unregistered_description_steps_in_the_task():
    variant = dataclasses.replace(G1, name="variant")
    result = check_robot(variant, steps=2)
    assert result.ok and "task:g1_walk_flat" in result.passed


def test_the_registry_refuses_an_inconsistent_description(monkeypatch):
    monkeypatch.delenv("UNILAB_STRICT_PLUGINS", raising=False)  # lenient: failures are recorded, not raised
    registry = PluginRegistry("unilab_robots", hookspecs, "unilab_register_robots", "robot",
                              plugins._validate_robot)
    drives = dict(G1.drives)
    del drives["left_knee_joint"]

    @hookspecs.hookimpl
    def register_no_knee(register):
        register("no_knee", dataclasses.replace(G1, name="no_knee", drives=drives))

    @hookspecs.hookimpl
    def register_renamed(register):
        register("g1_copy", dataclasses.replace(G1, name="other_name"))

    for hook in (register_no_knee, register_renamed):
        registry.add_plugin(SimpleNamespace(unilab_register_robots=hook), distribution="test-robots", version="0")
    first, second = registry.failures
    assert "robot 'no_knee' from test-robots: drives lacks joints ['left_knee_joint']" in first.error
    assert "registered under another name than its description's 'other_name'" in second.error
    assert "no_knee" not in registry.names() and "g1_copy" not in registry.names()


def test_a_users_file_is_checked_with_the_feet_training_builds(tmp_path):
    """check_robot builds a user's file as training does, with the project's soles by default: a
    file whose feet have no collision geoms passes with them and fails with its own feet."""
    from unilab.robots.testing import write_meshed_g1

    path = write_meshed_g1(tmp_path / "g1")
    robot_file = path.parent / "g1.xml"
    lines = robot_file.read_text().splitlines(True)
    robot_file.write_text("".join(ln for ln in lines if '<geom class="foot"' not in ln))  # feet: visuals only
    assert check_robot("g1", mjcf=str(path), steps=2, raise_on_failure=False).ok
    own = check_robot("g1", mjcf=str(path), feet="model", tasks=(), raise_on_failure=False)
    assert not own.ok and "has no collision geom" in own.failed["scene"]
