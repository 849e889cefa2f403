"""Fixtures shared by the unilab suite.

Helpers are handed out as fixtures (not imported from conftest): the other packages' suites,
which run in the same pytest session, have conftest modules of the same name.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
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


# ---------------------------------------------------------------------------- the command in-process
@dataclass(frozen=True)
class CliResult:
    """What a finished ``unilab`` command left: its exit code and its two streams, as text (the
    fields of :class:`subprocess.CompletedProcess` the tests read)."""

    returncode: int
    stdout: str
    stderr: str


# The warning filters of a fresh interpreter (not in -X dev mode), latest first as
# warnings.filterwarnings leaves them: what a user's `unilab` shows on stderr.
_FRESH_WARNING_FILTERS = (
    ("ignore", ResourceWarning, ""),
    ("ignore", ImportWarning, ""),
    ("ignore", PendingDeprecationWarning, ""),
    ("ignore", DeprecationWarning, ""),
    ("default", DeprecationWarning, "__main__"),
)


def run_in_process(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> CliResult:
    """``unilab ARGS`` through the command's own entry point (``unilab.cli:app``, the console
    script's target) in this process, in ``cwd``, with ``env`` added to the environment.

    What a separate process would print is printed here too, so a test can hold stderr to one
    line: the command's logging.basicConfig runs as in a fresh interpreter (pytest's handlers are
    set aside meanwhile), warnings are shown on stderr under a fresh interpreter's filters, the
    robot-model report prints as it does once per process, and an exception that escapes the
    command is a traceback on stderr with exit code 1. What this cannot see: output written to
    file descriptor 2 by native code, and what only a new process does (loading plugins,
    signals, a working directory of its own): tests about those run the real ``unilab`` in a
    subprocess.
    """
    import faulthandler
    import logging
    import traceback
    import warnings

    from typer.testing import CliRunner

    from unilab.cli import app
    from unilab.robots import scene

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    argv, where, enable, printed = sys.argv, Path.cwd(), faulthandler.enable, scene._PRINTED

    def show(message, category, filename, lineno, file=None, line=None):
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    for handler in handlers:
        root.removeHandler(handler)
    sys.argv = ["unilab", *args]
    scene._PRINTED = set()  # the reports a fresh process has printed: none
    # train's faulthandler.enable() needs a real file descriptor; pytest's own stays enabled.
    faulthandler.enable = lambda *a, **k: None
    try:
        if cwd is not None:
            os.chdir(cwd)
        with warnings.catch_warnings():
            warnings.resetwarnings()
            for action, category, module in _FRESH_WARNING_FILTERS:
                warnings.filterwarnings(action, category=category, module=module)
            warnings.showwarning = show
            result = CliRunner().invoke(app, list(args), prog_name="unilab", env=env)
    finally:
        os.chdir(where)
        faulthandler.enable, sys.argv, scene._PRINTED = enable, argv, printed
        for handler in root.handlers[:]:
            root.removeHandler(handler)
            handler.close()
        for handler in handlers:
            root.addHandler(handler)
        root.setLevel(level)
    stderr, code = result.stderr, result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
        code = 1
    return CliResult(code, result.stdout, stderr)


@pytest.fixture(scope="session")
def unilab_in_process() -> Callable[..., CliResult]:
    """``unilab_in_process(*args, cwd=None, env=None) -> CliResult``: the ``unilab`` command run in
    this process (a few seconds faster than a new interpreter), for tests of what a command
    prints and returns; see :func:`run_in_process`."""
    return run_in_process


@dataclass
class SessionRun:
    """What :func:`run_in_session` saw: the exit code, the output, and the processes still in the
    run's session (``pgrep -s`` output, empty when none) after the grace period."""

    returncode: int
    stdout: str
    stderr: str
    left: str


def run_in_session(cmd: list[str], cwd: Path, timeout: float = 180, grace: float = 10) -> SessionRun:
    """Run ``cmd`` (a ``unilab`` command line) in a new process session until it exits, for tests
    of what a whole run leaves behind, then wait up to ``grace`` s for the session to empty (a
    multiprocessing resource tracker may outlive its parent by a moment). On ``timeout`` (s) the
    whole session (the run, its collectors, its evaluation process) is killed and
    ``subprocess.TimeoutExpired`` propagates, so a hung run leaves no process."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            subprocess.run(["kill", "-9", f"-{proc.pid}"], check=False)
            proc.wait()
    deadline = time.monotonic() + grace
    while (left := subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True).stdout.strip()):
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    return SessionRun(proc.returncode, stdout, stderr, left)


@pytest.fixture(scope="session")
def unilab_in_session() -> Callable[..., SessionRun]:
    """``unilab_in_session(cmd, cwd, timeout=180) -> SessionRun``: :func:`run_in_session`."""
    return run_in_session


# ---------------------------------------------------------------------------- a finished run
# The smallest real run: 2 iterations of 2 envs with the owner settings' runtime (async) and their
# evaluation of the final policy (training.eval_interval=250), without the play and export that
# end a run.
TINY_WALK_RUN = (
    "training.num_envs=2", "training.max_iterations=2", "algo.batch_size=16", "algo.num_updates=1",
    "algo.learning_starts=1", "algo.buffer_size_per_env=8", "sim.nthread=1", "training.device=cpu",
    "training.progress=false", "training.no_play=true",
)


@pytest.fixture(scope="session")
def finished_walk_run(tmp_path_factory) -> Callable[[Path], Path]:
    """``finished_walk_run(dest) -> Path``: a copy of a real run directory that ``unilab train
    --algo sac --task g1_walk_flat`` wrote with :data:`TINY_WALK_RUN` (an untrained policy, its
    checkpoints model_2.pt and model_last.pt, the final policy's evaluation in run_summary.json,
    no policy.onnx, no video), at
    ``dest/logs/sac/g1_walk_flat/<run>``. The run is trained once per session; every caller gets
    its own copy to read or change, so tests stay independent of each other and of their order."""
    from unilab.train import train

    template: list[Path] = []

    def copy(dest: Path) -> Path:
        if not template:
            logs = tmp_path_factory.mktemp("finished_walk_run") / "logs"
            template.append(train("sac", "g1_walk_flat", "mujoco", [*TINY_WALK_RUN, f"training.log_dir={logs}"],
                                  argv=[]))
        source = template[0]
        run = Path(dest) / "logs" / "sac" / "g1_walk_flat" / source.name
        shutil.copytree(source, run)
        return run

    return copy


@pytest.fixture(scope="session")
def checkpoint_policy() -> Callable[..., tuple]:
    """``checkpoint_policy(run_dir, overrides=()) -> (policy, group)``: the run's checkpoint as
    ``unilab.deploy.loading.make_policy`` builds it (the deterministic policy on the CPU and the
    observation group it reads), from a one-env env of the run's config that is closed again."""
    def build(run_dir: Path, overrides: list[str] | tuple[str, ...] = ()) -> tuple:
        from unilab.deploy.loading import load_run, make_env, make_policy

        loaded = load_run(str(run_dir), overrides=list(overrides))
        env = make_env(loaded, 1)
        try:
            return make_policy(loaded, env)
        finally:
            env.close()

    return build
