"""Example robot plugin: a G1 variant registered as ``g1_home`` (see README.md)."""

from unilab_robot_g1_home.robot import G1_HOME

__all__ = ["G1_HOME"]
