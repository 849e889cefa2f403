"""What a task registers: its settings model, its env builder, its owner YAML defaults and its
evaluation suites."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel


@dataclass(frozen=True)
class TaskSpec:
    """How to build a task's env.

    Attributes:
        config_cls: pydantic model of the task's settings (the ``env.*`` override keys).
        make_env: ``make_env(cfg, *, backend_cls, num_envs, nthread, cpu_ids, robot, seed)
            -> VecEnv``: builds the env on a backend of the given class; ``robot`` is the run's
            ``robot.*`` section (:class:`unilab.config.RobotConfig`), which
            :func:`unilab.robots.robot_scene` turns into the scene.
        owner_configs: folder of owner YAML defaults, ``<algo>_<sim>.yaml`` and presets
            ``<algo>_<sim>.<preset>.yaml``, each a mapping of config sections (``algo``, ``runtime``,
            ``env``, ``sim``, ``robot``, ``training``) applied over the code defaults.
        description: one line for ``unilab plugins``.
        eval_suites: the task's evaluation suites (:class:`unilab.eval.suite.EvalSuite`), the
            first being the default of ``unilab eval`` and of the evaluation during training
            (``training.eval_interval``); empty: the task cannot be evaluated.
    """

    config_cls: type[BaseModel]
    make_env: Callable[..., Any]
    owner_configs: Path | None = None
    description: str = ""
    eval_suites: tuple[Any, ...] = ()
