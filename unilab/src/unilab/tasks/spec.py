"""What a task registers: its settings model, its env builder, its owner YAML defaults, its
evaluation suites, the curricula a resumed run restores and the data files a run records."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel


@dataclass(frozen=True)
class CurriculumState:
    """An env curriculum whose state checkpoints record and a resumed run restores through the
    config: the envs may live in collector processes, which only the config reaches.

    A checkpoint records the last value the env logged under :attr:`log_key` (its ``curriculum``
    entry). ``training.resume`` sets :attr:`start_key` to it unless the run's config gives that
    key; ``unilab play`` does the same below the user's overrides (:mod:`unilab.resume`).

    Attributes:
        log_key: the env's ``extras["log"]`` entry that holds the state, a float, e.g.
            ``"Curriculum/penalty_scale"``.
        start_key: the dotted config key that starts the env's curriculum at a value, e.g.
            ``"env.penalty_curriculum.start"``; its None starts it at :attr:`initial_key`.
        initial_key: the dotted config key of the curriculum's own start, e.g.
            ``"env.penalty_curriculum.initial"``.
        enabled_key: the dotted boolean config key that turns the curriculum on; None: always on.
        name: what the line printed at resume calls it, e.g. ``"penalty curriculum"``.
    """

    log_key: str
    start_key: str
    initial_key: str
    enabled_key: str | None = None
    name: str = "curriculum"


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
        curricula: the env curricula whose state checkpoints record and resumed runs restore
            (:class:`CurriculumState`); empty: a resumed run's env starts as a new one.
        data_files: ``data_files(env_cfg) -> list[dict]``: the data files the env reads besides
            the robot model (e.g. reference motions), each ``{"key": config key, "name": the
            file's name in the task, "file": path, "sha256": hex digest}``
            (:func:`unilab.runs.data_file`). Training records them in ``run_config.json``
            (``data``); play, eval and export warn when the files they rebuild the env from
            differ (:func:`unilab.runs.data_changes`). None: the task reads no data files.
    """

    config_cls: type[BaseModel]
    make_env: Callable[..., Any]
    owner_configs: Path | None = None
    description: str = ""
    eval_suites: tuple[Any, ...] = ()
    curricula: tuple[CurriculumState, ...] = ()
    data_files: Callable[[BaseModel], list[dict[str, str]]] | None = None
