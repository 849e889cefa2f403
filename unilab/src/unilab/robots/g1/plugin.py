"""Registers the built-in robot ``g1`` through the ``unilab_robots`` entry-point group."""

from __future__ import annotations

from unilab.hookspecs import hookimpl


@hookimpl
def unilab_register_robots(register):
    """Register ``g1``: the Unitree G1 29-DoF described in this repository."""
    from unilab.robots.g1.robot import G1

    register("g1", G1)
