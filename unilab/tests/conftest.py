"""Fixtures shared by the unilab suite.

Helpers are handed out as fixtures (not imported from conftest): the other packages' suites,
which run in the same pytest session, have conftest modules of the same name.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def with_site(site: Path) -> str:
    """``PYTHONPATH`` with ``site`` first and the caller's entries after it."""
    return os.pathsep.join([str(site), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])


@dataclass(frozen=True)
class InstalledExample:
    """An example distribution (a folder under examples/) pip-installed into ``site``.

    Attributes:
        source: the example's folder in the repository.
        site: the folder it is installed into, put on ``PYTHONPATH`` by :meth:`run`.
    """

    source: Path
    site: Path

    def run(self, *argv: str, cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` with the installed example importable (``site`` put first on ``PYTHONPATH``,
        ahead of the caller's entries, so a checkout named there stays the code under test) and
        plugin loading strict (``UNILAB_STRICT_PLUGINS=1``); returns the finished process, output
        captured as text."""
        env = dict(os.environ, PYTHONPATH=with_site(self.site), UNILAB_STRICT_PLUGINS="1")
        return subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def install_example(tmp_path_factory) -> Callable[[str], InstalledExample]:
    """``install_example(name) -> InstalledExample``: pip-installs ``examples/<name>`` once per
    session (no deps, no build isolation: offline and fast) into a throw-away folder, an
    environment layer over the project's .venv. The build runs from a copy, so that an in-tree
    build leaves no build/ or *.egg-info in examples/."""
    installed: dict[str, InstalledExample] = {}

    def install(name: str) -> InstalledExample:
        if name not in installed:
            source = EXAMPLES / name
            target = tmp_path_factory.mktemp(f"{name}_site")
            build = tmp_path_factory.mktemp(f"{name}_src")
            subprocess.run(["cp", "-r", f"{source}/.", str(build)], check=True)
            result = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "-q",
                 "--no-deps", "--no-build-isolation", "--target", str(target), str(build)],
                capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            assert result.returncode == 0, result.stdout + result.stderr
            installed[name] = InstalledExample(source, target)
        return installed[name]

    return install
