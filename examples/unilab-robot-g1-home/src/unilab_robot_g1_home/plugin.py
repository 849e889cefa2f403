"""Registers ``g1_home`` through the ``unilab_robots`` entry-point group."""

from unilab.hookspecs import hookimpl


@hookimpl
def unilab_register_robots(register):
    from unilab_robot_g1_home.robot import G1_HOME

    register("g1_home", G1_HOME)
