"""Registers the built-in ``g1_walk_flat`` task through the ``unilab`` entry-point group."""

from __future__ import annotations

from pathlib import Path

from unilab.hookspecs import hookimpl


@hookimpl
def unilab_register_tasks(register):
    """Register ``g1_walk_flat``: G1 velocity tracking on flat ground."""
    from unilab.tasks.g1_walk_flat.config import G1WalkFlatConfig
    from unilab.tasks.g1_walk_flat.env_cfg import make_env
    from unilab.tasks.spec import TaskSpec

    register(
        "g1_walk_flat",
        TaskSpec(
            config_cls=G1WalkFlatConfig,
            make_env=make_env,
            owner_configs=Path(__file__).parent / "configs",
            description="Unitree G1 29-DoF tracks base velocity commands on flat ground",
        ),
    )
