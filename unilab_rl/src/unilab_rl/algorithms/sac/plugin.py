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
            make_runner=make_runner,
            description="soft actor-critic: twin critics, target networks, automatic temperature",
        ),
    )


def make_runner(env, agent, *, env_fn=None, **kwargs):
    """The runner ``agent.cfg.runtime`` asks for.

    Args:
        env: the vector env (used by the synchronous runner).
        agent: the SAC learner.
        env_fn: picklable zero-argument env factory, required for ``runtime="async"`` (the
            collector process builds its own env with it).
        **kwargs: passed to the runner (``log_fn``, ``checkpoint_fn``, intervals, ``seed``).

    Returns:
        :class:`~unilab_rl.runner.OffPolicyRunner` or
        :class:`~unilab_rl.async_runtime.AsyncOffPolicyRunner`.

    Raises:
        ValueError: ``runtime="async"`` without ``env_fn``.
    """
    from unilab_rl.async_runtime import make_off_policy_runner

    return make_off_policy_runner(env, agent, env_fn=env_fn, **kwargs)
