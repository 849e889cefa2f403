"""Registers the built-in ``flashsac`` algorithm through the ``unilab_rl`` entry-point group."""

from __future__ import annotations

from unilab_rl.hookspecs import hookimpl


@hookimpl
def unilab_rl_register_algorithms(register):
    """Register ``flashsac``: FlashSAC (arXiv 2604.04539)."""
    from unilab_rl.algorithms.flashsac.agent import make
    from unilab_rl.algorithms.flashsac.config import FlashSACConfig
    from unilab_rl.registry import AlgorithmSpec

    register(
        "flashsac",
        AlgorithmSpec(
            config_cls=FlashSACConfig,
            make_agent=make,
            description="FlashSAC: batch-norm residual nets, unit-norm weights, twin categorical critics",
        ),
    )

