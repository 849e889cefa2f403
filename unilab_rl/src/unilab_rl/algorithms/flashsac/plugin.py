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
            make_runner=make_runner,
            description="FlashSAC: batch-norm residual nets, unit-norm weights, twin categorical critics",
        ),
    )


def make_runner(env, agent, *, env_fn=None, **kwargs):
    """The runner ``agent.cfg.runtime`` asks for: :class:`~unilab_rl.runner.OffPolicyRunner`
    (``"sync"``) or :class:`~unilab_rl.async_runtime.AsyncOffPolicyRunner` (``"async"``, needs
    ``env_fn``, a picklable env factory for the collector processes); see
    :func:`unilab_rl.async_runtime.make_off_policy_runner`.

    Raises:
        ValueError: ``runtime="async"`` without ``env_fn``.
    """
    from unilab_rl.async_runtime import make_off_policy_runner

    return make_off_policy_runner(env, agent, env_fn=env_fn, **kwargs)
