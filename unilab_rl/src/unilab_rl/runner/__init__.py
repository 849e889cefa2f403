"""Training loops around a :class:`~unilab_rl.learner.Learner`.

- :class:`OffPolicyRunner` (``sync.py``): one process alternates collection and learning.
- :class:`~unilab_rl.async_runtime.AsyncOffPolicyRunner`: collector processes step the env while
  the learner updates.
- ``loop.py``: what both share: the run record (:class:`LearnSummary`), the trainer's hooks
  (:class:`RunnerHooks`), episode windows, log and checkpoint cadence, and how a run ends.

:func:`make_runner` picks the loop from ``runtime.mode``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from unilab_rl.learner import Learner
from unilab_rl.runner.loop import (
    STATUSES,
    EpisodeLogWindow,
    FunctionHooks,
    LearnSummary,
    RunnerHooks,
    StopTraining,
    draw_seed,
    loop_settings,
)
from unilab_rl.runner.sync import OffPolicyRunner
from unilab_rl.runtime import RuntimeConfig
from unilab_rl.vecenv import VecEnv


def make_runner(env: VecEnv | None, learner: Learner, runtime: RuntimeConfig, *,
                env_fn: Callable[..., VecEnv] | None = None, **kwargs: Any):
    """The runner ``runtime.mode`` asks for.

    Args:
        env: the vector env the synchronous runner steps (unused, may be None, for async).
        learner: the learner.
        runtime: execution settings; ``mode`` picks the loop, the async runner reads the rest.
        env_fn: picklable env factory, required for ``mode="async"`` (each collector builds its
            own env shard with it).
        **kwargs: the runners' keyword arguments (``hooks``, intervals, ``seed``, ...; ``env_seed``
            only for async).

    Returns:
        :class:`OffPolicyRunner` or :class:`~unilab_rl.async_runtime.AsyncOffPolicyRunner`.

    Raises:
        ValueError: ``mode="async"`` without ``env_fn``, or sync without ``env``.
    """
    if runtime.mode == "async":
        if env_fn is None:
            raise ValueError("runtime.mode='async' needs env_fn, a picklable env factory for the collector processes")
        from unilab_rl.async_runtime import AsyncOffPolicyRunner

        return AsyncOffPolicyRunner(env_fn, learner, runtime, **kwargs)
    if env is None:
        raise ValueError("runtime.mode='sync' needs the env")
    kwargs.pop("env_seed", None)
    return OffPolicyRunner(env, learner, **kwargs)


__all__ = [
    "STATUSES",
    "EpisodeLogWindow",
    "FunctionHooks",
    "LearnSummary",
    "OffPolicyRunner",
    "RunnerHooks",
    "StopTraining",
    "draw_seed",
    "loop_settings",
    "make_runner",
]
