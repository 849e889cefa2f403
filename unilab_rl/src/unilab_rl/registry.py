"""Algorithm registry: what ``--algo`` names.

An :class:`AlgorithmSpec` tells a trainer how to build and run an algorithm without knowing it:
its config dataclass (validated by the caller), a factory for the agent and a runner class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from unilab_rl import hookspecs
from unilab_rl._plugins import PluginError, PluginRegistry, Registration


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


def _validate(name: str, item: object, meta: dict, distribution: str) -> None:
    if not isinstance(item, AlgorithmSpec):
        raise PluginError(f"algorithm {name!r} from {distribution} must be an AlgorithmSpec")


ALGORITHMS: PluginRegistry[AlgorithmSpec] = PluginRegistry(
    "unilab_rl", hookspecs, "unilab_rl_register_algorithms", "algorithm", _validate
)


def get_algorithm(name: str) -> Registration[AlgorithmSpec]:
    """The algorithm called ``name``. Raises KeyError listing the valid names."""
    return ALGORITHMS.get(name)


def list_algorithms() -> list[Registration[AlgorithmSpec]]:
    """Every registered algorithm with its distribution and version."""
    return ALGORITHMS.registrations()
