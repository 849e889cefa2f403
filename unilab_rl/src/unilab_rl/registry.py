"""What an algorithm plugin registers: :class:`AlgorithmSpec`.

An :class:`AlgorithmSpec` tells a trainer how to build and run an algorithm without knowing it:
its config dataclass (validated by the caller), a factory for the agent and a runner class. A plugin
registers one through the ``unilab_rl_register_algorithms`` hook (:mod:`unilab_rl.hookspecs`); the
application that trains (unilab) loads the ``unilab_rl`` entry-point group with the one plugin
loader, :class:`unisim.plugins.PluginRegistry` (``unilab.plugins.ALGORITHMS``). unilab_rl itself
loads no plugins, so it depends on torch and pluggy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class AlgorithmSpec:
    """How to build an algorithm.

    Attributes:
        config_cls: stdlib dataclass of the algorithm's settings (attribute docstrings document
            each field); must have ``num_envs`` and ``max_iterations``.
        make_agent: ``make_agent(env: VecEnv, cfg, device: torch.device) -> agent``.
        make_runner: ``make_runner(env, agent, **kwargs) -> runner`` with ``learn(...)``.
        description: one line for ``unilab plugins``.
    """

    config_cls: type
    make_agent: Callable[..., Any]
    make_runner: Callable[..., Any]
    description: str = ""


__all__ = ["AlgorithmSpec"]
