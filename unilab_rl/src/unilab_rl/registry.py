"""What an algorithm plugin registers: :class:`AlgorithmSpec`.

An :class:`AlgorithmSpec` tells a trainer how to build and run an algorithm without knowing it:
its config dataclass (validated by the caller) and a factory for the learner. A plugin
registers one through the ``unilab_rl_register_algorithms`` hook (:mod:`unilab_rl.hookspecs`); the
application that trains (unilab) loads the ``unilab_rl`` entry-point group with the one plugin
loader, :class:`unisim.plugins.PluginRegistry` (``unilab.plugins.ALGORITHMS``). unilab_rl itself
loads no plugins, so it depends on torch and pluggy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from unilab_rl.learner import Learner

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


__all__ = ["AlgorithmSpec"]
