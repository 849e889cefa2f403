"""Registers the built-in ``sac`` algorithm through the ``unilab_rl`` entry-point group."""

from __future__ import annotations

from unilab_rl.hookspecs import hookimpl


@hookimpl
def unilab_rl_register_algorithms(register):
    """Register ``sac``: soft actor-critic with twin critics and automatic temperature."""
    from unilab_rl.algorithms.sac.agent import make
    from unilab_rl.algorithms.sac.config import SACConfig
    from unilab_rl.registry import AlgorithmSpec

    register(
        "sac",
        AlgorithmSpec(
            config_cls=SACConfig,
            make_agent=make,
            description="soft actor-critic: twin critics, target networks, automatic temperature",
        ),
    )

