"""unilab's robot conformance check against g1_home, looked up as users select it (robot.name)."""

import math

from unilab.robots.conformance import check_robot
from unilab_robot_g1_home import G1_HOME


def test_conformance_through_the_registry():
    result = check_robot("g1_home")
    assert result.ok and "task:g1_walk_flat" in result.passed


def test_drives_are_the_g1_recipe_at_12_hz():
    omega = 2 * math.pi * 12.0
    for joint, drive in G1_HOME.drives.items():
        assert math.isclose(drive.kp, drive.armature * omega**2)
        assert math.isclose(drive.kd, 4.0 * drive.armature * omega)


def test_the_default_pose_is_home():
    assert next(iter(G1_HOME.keyframes)) == "home"
    assert G1_HOME.default_pose.joint_pos["left_elbow_joint"] == 1.28
