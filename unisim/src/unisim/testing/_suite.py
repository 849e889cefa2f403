"""Running the checks: as pytest parameters, or all at once."""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Any, Iterable

from unisim.contract import SimSpec
from unisim.testing._checks import CHECKS, ConformanceSkip, Target, conformance_spec


class _BoundCheck:
    """One check bound to a backend; calling it runs the check (a skip becomes pytest.skip)."""

    def __init__(self, name: str, target: Target) -> None:
        self.name = name
        self.target = target

    def __call__(self) -> None:
        try:
            CHECKS[self.name](self.target)
        except ConformanceSkip as exc:
            import pytest

            pytest.skip(f"{self.name}: {exc}")

    def __repr__(self) -> str:
        return f"<conformance check {self.name!r} of {self.target.backend_cls.__name__}>"


def _target(backend_cls: type, spec: SimSpec | None, kwargs: dict) -> Target:
    if spec is not None and kwargs:
        raise TypeError("give either spec or conformance_spec() keyword arguments, not both")
    return Target(backend_cls, spec if spec is not None else conformance_spec(**kwargs))


def _names(checks: Iterable[str] | None) -> list[str]:
    names = list(CHECKS) if checks is None else list(checks)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ValueError(f"unknown conformance check(s) {unknown}; valid: {', '.join(CHECKS)}")
    return names


def conformance_tests(
    backend_cls: type,
    spec: SimSpec | None = None,
    *,
    checks: Iterable[str] | None = None,
    **spec_kwargs: Any,
) -> list:
    """The conformance checks of ``backend_cls`` as ``pytest.param`` objects, one per check,
    with the check's name as the test id. Each is a callable that runs the check::

        @pytest.mark.parametrize("check", conformance_tests(MyBackend, device="cuda"))
        def test_conformance(check):
            check()

    Args:
        backend_cls: the :class:`unisim.SimBackend` subclass under test.
        spec: the spec to build it from; default :func:`conformance_spec` (its model and tracked
            bodies are what the checks expect: change only device, nthread, options).
        checks: names of :data:`CHECKS` to run (default: all).
        **spec_kwargs: passed to :func:`conformance_spec` (``device``, ``nthread``, ``options``).

    Raises:
        ValueError: an unknown check name.
    """
    import pytest

    target = _target(backend_cls, spec, spec_kwargs)
    return [pytest.param(_BoundCheck(n, target), id=n) for n in _names(checks)]


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check: ``status`` is ``"passed"``, ``"failed"`` or ``"skipped"``."""

    name: str
    status: str
    message: str = ""

    def __str__(self) -> str:
        tail = f": {self.message}" if self.message else ""
        return f"{self.status.upper():7} {self.name}{tail}"


def run_conformance(
    backend_cls: type,
    spec: SimSpec | None = None,
    *,
    checks: Iterable[str] | None = None,
    **spec_kwargs: Any,
) -> list[CheckResult]:
    """Run the checks of ``backend_cls`` (arguments as :func:`conformance_tests`) and return one
    :class:`CheckResult` each; a check that raises anything else than a skip is failed."""
    target = _target(backend_cls, spec, spec_kwargs)
    results = []
    for name in _names(checks):
        try:
            CHECKS[name](target)
        except ConformanceSkip as exc:
            results.append(CheckResult(name, "skipped", str(exc)))
        except AssertionError as exc:
            results.append(CheckResult(name, "failed", str(exc)))
        except Exception as exc:  # noqa: BLE001 - a crash is a failure, with its origin
            where = traceback.extract_tb(exc.__traceback__)[-1]
            results.append(CheckResult(
                name, "failed",
                f"{type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})",
            ))
        else:
            results.append(CheckResult(name, "passed"))
    return results
