"""Evaluation suites: what a task declares through its :class:`~unilab.tasks.spec.TaskSpec`
(``eval_suites``), and the record every suite returns.

A suite is a set of cases run by one batched env: :meth:`EvalSuite.plan` turns the run's config,
the selected case names and the rows per case into a :class:`Plan` (how many env rows, which
``key=value`` settings the env is built with), and :meth:`EvalSuite.run` rolls the deterministic
policy out in that env and returns a :class:`SuiteResult`. The runner (:mod:`unilab.eval.runner`)
builds the env, the policy and the report around them, so a third-party task gets ``unilab eval``
and evaluation during training by registering a suite.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

Policy = Callable[[torch.Tensor], torch.Tensor]
"""(B, obs_dim) float32 raw observations -> (B, num_actions) float32 actions in the env's units,
on the CPU (a torch module or :class:`unilab.eval.policy.OnnxPolicy`)."""


@dataclass(frozen=True)
class Plan:
    """How a suite's cases map onto one env.

    Attributes:
        rows: env rows (worlds) to build.
        overrides: ``key=value`` settings applied over the run's config before the env is built
            (the suite's evaluation settings).
        cases: the selected case names, in order (a suite whose cases exist only once its env is
            built, e.g. the clips of a motion set, may leave it empty).
        num_envs: rows per case, as asked (or the suite's default).
    """

    rows: int
    overrides: tuple[str, ...]
    cases: tuple[str, ...]
    num_envs: int


@dataclass
class EvalContext:
    """What :meth:`EvalSuite.run` gets besides the env and the policy.

    Attributes:
        cfg: the run's config with the plan's overrides (pydantic model: ``cfg.env``, ...).
        plan: the :class:`Plan` the env was built from.
        group: the observation group the policy reads (``"actor"``).
        seed: seed of the env's generator and of the suite's own draws (e.g. random start frames).
        build_env: ``build_env(overrides, num_envs) -> env``: another env of the same run with extra
            ``key=value`` settings (e.g. to read the task's domain-randomization events); the
            caller closes it.
        progress: ``progress(done, total)`` called as the rollout advances, or None.
        cache: kept across the evaluations of one env (e.g. what a suite read from another env).
    """

    cfg: Any
    plan: Plan
    group: str = "actor"
    seed: int = 0
    build_env: Callable[[list[str], int], Any] | None = None
    progress: Callable[[int, int], None] | None = None
    cache: dict[str, Any] = field(default_factory=dict)


@dataclass
class SuiteResult:
    """What a suite measured.

    Attributes:
        suite: the suite's name.
        headline: the suite's one figure in [0, 1] (walking: share of cases passed; tracking:
            share of clips completed from their first frame).
        headline_text: the same in words, e.g. ``"14/16 cases passed"``.
        passed: the headline reaches the suite's bar (walking: every case passes; tracking: the
            task's bar).
        cases: one JSON-able dict per case (or clip), with at least ``name`` and ``passed``.
        columns: header of the stdout table.
        rows: one list of strings per table row (already formatted), ``len(columns)`` each.
        settings: the suite's settings (durations, thresholds, rows per case, ...), JSON-able;
            ``layout`` says in words how rows map onto cases.
        notes: lines printed under the table (legend, skipped cases).
        steps: env steps rolled out (rows x steps), for the cost of the evaluation.
    """

    suite: str
    headline: float
    headline_text: str
    passed: bool
    cases: list[dict[str, Any]]
    columns: list[str]
    rows: list[list[str]]
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    steps: int = 0


class EvalSuite(abc.ABC):
    """A task's evaluation suite. Subclasses are frozen dataclasses whose fields are the suite's
    settings (so a task can register one with its own keys, durations and bars)."""

    name: str
    description: str
    default_num_envs: int
    """Rows per case of ``unilab eval`` when ``--num-envs`` is not given."""
    training_num_envs: int
    """Rows per case of the evaluation during training (``training.eval_interval``)."""

    @abc.abstractmethod
    def plan(self, cfg: Any, cases: list[str] | None, num_envs: int | None) -> Plan:
        """The env rows and settings for ``cases`` (None: all) with ``num_envs`` rows per case.

        Raises:
            UserError: an unknown case (naming the valid ones) or ``num_envs < 1``.
        """

    @abc.abstractmethod
    def run(self, env: Any, policy: Policy, ctx: EvalContext) -> SuiteResult:
        """Roll ``policy`` out in ``env`` (built from :meth:`plan`) and measure.

        Raises:
            UserError: the env does not offer what the suite needs (naming it).
        """


def pick_suite(suites: tuple[EvalSuite, ...] | list[EvalSuite], name: str | None, task: str) -> EvalSuite:
    """The suite called ``name`` among a task's ``suites`` (None: the first).

    Raises:
        UserError: the task declares no suite, or none of that name (listing them).
    """
    from unilab.errors import UserError

    if not suites:
        raise UserError(f"task {task!r} declares no evaluation suite (TaskSpec.eval_suites is empty)")
    if name is None:
        return suites[0]
    for suite in suites:
        if suite.name == name:
            return suite
    names = ", ".join(s.name for s in suites)
    raise UserError(f"--suite {name}: task {task!r} has no suite {name!r}; its suites: {names}")


def select_cases(names: list[str] | None, valid: list[str], what: str = "case") -> list[str]:
    """``names`` checked against ``valid`` (None or empty: all of ``valid``), in the given order,
    duplicates dropped.

    Raises:
        UserError: a name not in ``valid`` (naming the valid ones).
    """
    from unilab.errors import UserError

    if not names:
        return list(valid)
    out: list[str] = []
    for name in names:
        if name not in valid:
            raise UserError(f"--case {name}: no {what} {name!r}; valid: {', '.join(valid)}")
        if name not in out:
            out.append(name)
    return out


def check_num_envs(num_envs: int | None, default: int) -> int:
    """``num_envs`` or ``default``; raises UserError when below 1."""
    from unilab.errors import UserError

    n = default if num_envs is None else num_envs
    if n < 1:
        raise UserError(f"--num-envs must be >= 1, got {n}")
    return int(n)


__all__ = ["EvalContext", "EvalSuite", "Plan", "Policy", "SuiteResult", "check_num_envs", "pick_suite", "select_cases"]
