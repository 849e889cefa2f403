"""Algorithm registry: what ``--algo`` names.

An :class:`AlgorithmSpec` tells a trainer how to build and run an algorithm without knowing it:
its config dataclass (validated by the caller), a factory for the agent and a runner class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from unilab_rl import hookspecs
from unilab_rl.learner import Learner
from unilab_rl._plugins import PluginError, PluginRegistry, Registration


@dataclass(frozen=True)
class AlgorithmSpec:
    """How to build an algorithm.

    Attributes:
        config_cls: stdlib dataclass of the algorithm's hyperparameters (the ``algo.*`` keys; an
            attribute docstring documents each field, ``__post_init__`` checks ranges).
        make_agent: ``make_agent(env, cfg, *, device, runtime, max_iterations) -> Learner``:
            builds the learner (:class:`unilab_rl.learner.Learner`) for ``env`` on ``device``
            with the run's execution settings (:class:`unilab_rl.runtime.RuntimeConfig`);
            ``max_iterations`` is the run's length, for schedules over the run.
        description: one line for ``unilab plugins``.

    Which loop trains it is not the algorithm's choice: :func:`unilab_rl.runner.make_runner`
    picks the synchronous or asynchronous runner from ``runtime.mode``.
    """

    config_cls: type
    make_agent: Callable[..., Learner]
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
