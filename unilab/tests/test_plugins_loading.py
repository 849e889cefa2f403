"""Plugin loading: lazy, once, each plugin isolated; a broken plugin is reported with its
distribution, version and error and the CLI keeps working; strict mode makes it fatal; a duplicate
name names both distributions. Plugins are fake installed distributions on sys.path."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from unisim import hookspecs
from unisim.plugins import DuplicatePluginError, PluginError, PluginRegistry
from unisim.testing import write_distribution

ROOT = Path(__file__).resolve().parents[2]
UNILAB = str(Path(sys.executable).parent / "unilab")

GOOD = """
from unisim.hookspecs import hookimpl
calls = []

@hookimpl
def unisim_register_backends(register):
    calls.append(1)
    register({name!r}, object, description="a thing")
"""


@pytest.fixture
def group(monkeypatch):
    """A fresh entry-point group name, strict mode off."""
    monkeypatch.delenv("UNILAB_STRICT_PLUGINS", raising=False)
    return f"unilab_test_{uuid.uuid4().hex[:8]}"


def make_registry(group: str) -> PluginRegistry:
    return PluginRegistry(group, hookspecs, "unisim_register_backends", "backend")


def install(tmp_path, monkeypatch, group: str, dists: dict[str, dict[str, str]]) -> dict:
    """Fake distributions: dist name -> {entry-point name: module source (or None: missing)}.
    Returns entry-point name -> module name."""
    site = tmp_path / "site"
    modules = {}
    for dist, eps in dists.items():
        files, targets = {}, {}
        for ep, source in eps.items():
            module = f"mod_{ep}_{uuid.uuid4().hex[:8]}"
            modules[ep] = module
            if source is not None:
                files[f"{module}.py"] = source
            targets[ep] = module
        write_distribution(site, dist, "1.2.3", entry_points={group: targets}, files=files)
    monkeypatch.syspath_prepend(str(site))
    return modules


def test_loading_is_lazy_and_happens_once(tmp_path, monkeypatch, group):
    modules = install(tmp_path, monkeypatch, group, {"good-dist": {"good": GOOD.format(name="a")}})
    reg = make_registry(group)
    assert not reg.loaded and modules["good"] not in sys.modules
    assert reg.names() == ["a"] and reg.names() == ["a"]
    reg.get("a")
    assert reg.loaded and sys.modules[modules["good"]].calls == [1]
    item = reg.get("a")
    assert (item.distribution, item.version, item.meta["description"]) == ("good-dist", "1.2.3",
                                                                            "a thing")


@pytest.mark.parametrize(
    "source, error",
    [
        (None, "ModuleNotFoundError: No module named 'mod_broken_"),
        ("import no_such_dependency_for_unilab_tests\n",
         "ModuleNotFoundError: No module named 'no_such_dependency_for_unilab_tests'"),
        ("from unisim.hookspecs import hookimpl\n@hookimpl\ndef unisim_register_backends(register):"
         "\n    raise RuntimeError('boom')\n", "RuntimeError: boom"),
        ("def unisim_register_backends(register):\n    register('x', object)\n",
         "its unisim_register_backends() is not marked as a hook implementation (decorate it "
         "with unisim.hookspecs.hookimpl)"),
        ("x = 1\n", "it has no unisim_register_backends() hook implementation"),
        ("from unisim.hookspecs import hookimpl\n@hookimpl\ndef unisim_register_backends(reg):"
         "\n    pass\n", "PluginValidationError"),
    ],
    ids=["missing_module", "import_error", "hook_raises", "unmarked_hook", "no_hook", "bad_args"],
)
def test_broken_plugin_is_isolated_and_reported(tmp_path, monkeypatch, group, source, error):
    install(tmp_path, monkeypatch, group, {
        "good-dist": {"good": GOOD.format(name="a")},
        "broken-dist": {"broken": source},
    })
    reg = make_registry(group)
    assert reg.names() == ["a"]
    assert len(reg.failures) == 1
    line = str(reg.failures[0])
    assert line.startswith(
        f"plugin 'broken' from broken-dist 1.2.3 (entry-point group '{group}') failed: "
    ), line
    assert error in line


def test_strict_mode_makes_a_broken_plugin_fatal_every_time(tmp_path, monkeypatch, group):
    install(tmp_path, monkeypatch, group, {
        "good-dist": {"good": GOOD.format(name="a")},
        "broken-dist": {"broken": "raise ImportError('needs libfoo')\n"},
    })
    monkeypatch.setenv("UNILAB_STRICT_PLUGINS", "1")
    reg = make_registry(group)
    for _ in range(2):
        with pytest.raises(PluginError) as info:
            reg.get("a")
        assert "plugin 'broken' from broken-dist 1.2.3" in str(info.value)
        assert "ImportError: needs libfoo" in str(info.value)
        assert "UNILAB_STRICT_PLUGINS=1" in str(info.value)
    monkeypatch.delenv("UNILAB_STRICT_PLUGINS")
    assert reg.get("a").distribution == "good-dist"
    with pytest.raises(PluginError):
        reg.load(strict=True)


def test_duplicate_name_is_an_error_naming_both_distributions(tmp_path, monkeypatch, group):
    install(tmp_path, monkeypatch, group, {
        "first-dist": {"a_first": GOOD.format(name="same")},
        "second-dist": {"b_second": GOOD.format(name="same")},
    })
    reg = make_registry(group)
    assert reg.names() == ["same"]
    assert "duplicate backend name 'same': registered by first-dist 1.2.3 and by second-dist " \
           "1.2.3" in str(reg.failures[0])
    with pytest.raises(DuplicatePluginError) as info:
        reg.get("same")
    assert isinstance(info.value, KeyError)
    assert str(info.value) == ("backend 'same' is registered by both first-dist 1.2.3 and "
                               "second-dist 1.2.3; uninstall one of them")


def test_unknown_name_lists_the_valid_ones(tmp_path, monkeypatch, group):
    install(tmp_path, monkeypatch, group, {"good-dist": {"good": GOOD.format(name="a")}})
    with pytest.raises(KeyError, match="unknown backend 'b'; valid choices: a"):
        make_registry(group).get("b")


def test_one_plugin_loader_and_no_private_imports_across_packages():
    """The loader exists once (unisim.plugins); a package imports another package's public
    modules only; unilab_rl, which depends on torch and pluggy alone, imports no other package."""
    import ast

    packages = {"mjbatch_uni": "mjbatch_uni", "unisim": "unisim", "unilab_rl": "unilab_rl", "unilab": "unilab"}
    loaders, problems = [], []
    for folder, own in packages.items():
        for path in sorted((ROOT / folder / "src" / own).rglob("*.py")):
            tree = ast.parse(path.read_text())
            if any(isinstance(n, ast.ClassDef) and n.name == "PluginRegistry" for n in tree.body):
                loaders.append(path.relative_to(ROOT).as_posix())
            for node in ast.walk(tree):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                    [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
                for name in names:
                    top, *rest = name.split(".")
                    if top in packages and top != own:
                        if any(part.startswith("_") for part in rest):
                            problems.append(f"{path.relative_to(ROOT)} imports private {name}")
                        if own == "unilab_rl":
                            problems.append(f"{path.relative_to(ROOT)} imports {name}")
    assert loaders == ["unisim/src/unisim/plugins.py"]
    assert problems == []


def test_a_plugin_calling_sys_exit_at_import_is_isolated(tmp_path, monkeypatch, group):
    install(tmp_path, monkeypatch, group, {
        "good-dist": {"good": GOOD.format(name="a")},
        "exiting-dist": {"exiting": "import sys\nsys.exit(3)\n"},
    })
    reg = make_registry(group)
    assert reg.names() == ["a"]
    assert [str(f) for f in reg.failures] == [
        f"plugin 'exiting' from exiting-dist 1.2.3 (entry-point group '{group}') failed: "
        "SystemExit: it called sys.exit(3) while loading"
    ]


# ---------------------------------------------------------------- the CLI, as a user runs it
def cli(tmp_path: Path, *args: str, strict: bool = False) -> subprocess.CompletedProcess:
    """``unilab ARGS`` in ``tmp_path`` with the fake distributions of ``tmp_path/site`` importable
    (first on ``PYTHONPATH``, the caller's entries after them)."""
    pythonpath = [str(tmp_path / "site"), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(pythonpath))
    env.pop("UNILAB_STRICT_PLUGINS", None)
    if strict:
        env["UNILAB_STRICT_PLUGINS"] = "1"
    return subprocess.run([UNILAB, *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=180)


@pytest.fixture
def broken_backend(tmp_path):
    write_distribution(tmp_path / "site", "unilab-test-broken", "0.0.1",
                       entry_points={"unisim": {"broken_sim": "unilab_test_broken_sim"}},
                       files={"unilab_test_broken_sim.py": "import no_such_module_for_test\n"})


def test_cli_lists_plugins_and_warns_about_a_broken_one(tmp_path, broken_backend):
    result = cli(tmp_path, "plugins")
    assert result.returncode == 0, result.stderr
    assert any(" mujoco " in ln and "unisim" in ln for ln in result.stdout.splitlines())
    assert result.stderr.strip().splitlines() == [
        "warning: plugin 'broken_sim' from unilab-test-broken 0.0.1 (entry-point group 'unisim') "
        "failed: ModuleNotFoundError: No module named 'no_such_module_for_test'"
    ]


def test_cli_strict_mode_fails_with_one_line(tmp_path, broken_backend):
    result = cli(tmp_path, "plugins", strict=True)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: plugin 'broken_sim' from "
                                                   "unilab-test-broken 0.0.1"), result.stderr
    assert "UNILAB_STRICT_PLUGINS=1" in lines[0] and "Traceback" not in result.stderr


def test_cli_refuses_a_duplicated_backend_name_naming_both(tmp_path):
    plugin = (
        "from unisim.hookspecs import hookimpl\n"
        "from unisim import CONTRACT_VERSION\n"
        "@hookimpl\n"
        "def unisim_register_backends(register):\n"
        "    from unisim.backends.mujoco import MujocoBackend\n"
        "    register('mujoco', MujocoBackend, contract_version=CONTRACT_VERSION)\n"
    )
    write_distribution(tmp_path / "site", "unilab-test-dup", "1.0",
                       entry_points={"unisim": {"mujoco_too": "unilab_test_dup_plugin"}},
                       files={"unilab_test_dup_plugin.py": plugin})
    result = cli(tmp_path, "train", "--algo", "sac", "--task", "g1_walk_flat", "--sim", "mujoco")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "error: --sim: backend 'mujoco' is registered by both unisim 0.1.0 and unilab-test-dup "
        "1.0; uninstall one of them"
    ]
    assert list(tmp_path.glob("logs")) == []


@pytest.fixture
def exiting_backend(tmp_path):
    write_distribution(tmp_path / "site", "unilab-test-exit", "0.0.1",
                       entry_points={"unisim": {"exit_sim": "unilab_test_exit_sim"}},
                       files={"unilab_test_exit_sim.py": "import sys\nsys.exit(3)\n"})


EXIT_WARNING = ("warning: plugin 'exit_sim' from unilab-test-exit 0.0.1 (entry-point group 'unisim') failed: "
                "SystemExit: it called sys.exit(3) while loading")


def fake_run(tmp_path: Path) -> Path:
    """A run directory whose checkpoint holds no weights: play resolves its plugins, then stops."""
    import json

    import torch

    run = tmp_path / "run"
    run.mkdir()
    (run / "run_config.json").write_text(json.dumps({"algo": "sac", "task": "g1_walk_flat", "sim": "mujoco"}))
    torch.save({"agent": {}, "algo": "sac", "task": "g1_walk_flat", "iteration": 1}, run / "model_last.pt")
    return run


@pytest.mark.parametrize("command", ["plugins", "config", "train", "play"])
def test_every_command_survives_a_plugin_that_exits_and_says_so_once(tmp_path, exiting_backend, command):
    """A plugin module that calls sys.exit() at import used to end every command silently with
    its exit code. Each command now goes on and prints the failure as one warning line."""
    args = {
        "plugins": ["plugins"],
        "config": ["config", "--algo", "sac", "--task", "g1_walk_flat"],
        # a bad key: the command gets past plugin loading, then stops before building anything
        "train": ["train", "--algo", "sac", "--task", "g1_walk_flat", "algo.no_such_key=1"],
        "play": ["play", str(fake_run(tmp_path)), "--no-video"],
    }[command]
    result = cli(tmp_path, *args)
    lines = result.stderr.strip().splitlines()
    assert lines.count(EXIT_WARNING) == 1, result.stderr
    assert "Traceback" not in result.stderr
    if command in ("plugins", "config"):
        assert result.returncode == 0, result.stderr
        assert lines == [EXIT_WARNING]
        assert ("mujoco" if command == "plugins" else "num_envs:") in result.stdout
    elif command == "train":
        assert result.returncode == 2 and lines[-1].startswith("error: unknown key 'algo.no_such_key'")
    else:
        assert result.returncode == 2 and lines[-1].startswith("error: ")


@pytest.mark.parametrize("command", ["config", "train"])
def test_train_and_config_print_a_lenient_plugin_failure_once(tmp_path, broken_backend, command):
    args = ["--algo", "sac", "--task", "g1_walk_flat"] + (["algo.no_such_key=1"] if command == "train" else [])
    result = cli(tmp_path, command, *args)
    warning = ("warning: plugin 'broken_sim' from unilab-test-broken 0.0.1 (entry-point group 'unisim') "
               "failed: ModuleNotFoundError: No module named 'no_such_module_for_test'")
    lines = result.stderr.strip().splitlines()
    assert lines[0] == warning and lines.count(warning) == 1, result.stderr
    assert result.returncode == (0 if command == "config" else 2), result.stderr


def test_strict_mode_and_a_broken_robot_plugin_make_train_one_error_line(tmp_path):
    """The robot registry loads when the task builds its scene, after the run is planned: in
    strict mode its failure is the same one line (exit 2) as a bad setting, not a traceback."""
    write_distribution(tmp_path / "site", "unilab-test-broken-robot", "0.0.1",
                       entry_points={"unilab_robots": {"broken_robot": "unilab_test_broken_robot"}},
                       files={"unilab_test_broken_robot.py": "import no_such_module_for_test\n"})
    result = cli(tmp_path, "train", "--algo", "sac", "--task", "g1_walk_flat", "training.num_envs=2",
                 "training.max_iterations=1", "training.no_play=true", "training.device=cpu", strict=True)
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert len(errors) == 1 and errors[0].startswith(
        "error: could not build task 'g1_walk_flat': robot.name: plugin 'broken_robot' from "
        "unilab-test-broken-robot 0.0.1 (entry-point group 'unilab_robots') failed: ModuleNotFoundError"
    ) and "UNILAB_STRICT_PLUGINS=1" in errors[0], result.stderr


ROBOT_PLUGIN = """
import dataclasses
from unilab.hookspecs import hookimpl

@hookimpl
def unilab_register_robots(register):
    from unilab.robots.g1 import G1
    register("g1_copy", dataclasses.replace(G1, name="g1_copy"))
"""


def test_run_config_records_the_robot_plugin_and_play_names_it_once_uninstalled(tmp_path):
    """run_config.json's plugins hold the robot's distribution beside the algorithm's, task's and
    backend's; with that distribution gone, play's one error line names it."""
    import json
    import shutil

    write_distribution(tmp_path / "site", "unilab-test-robot", "0.0.2",
                       entry_points={"unilab_robots": {"g1_copy": "unilab_test_robot"}},
                       files={"unilab_test_robot.py": ROBOT_PLUGIN})
    result = cli(tmp_path, "train", "--algo", "sac", "--task", "g1_walk_flat", "robot.name=g1_copy",
                 "training.num_envs=2", "training.max_iterations=2", "algo.batch_size=16", "algo.learning_starts=1",
                 "algo.num_updates=1", "algo.buffer_size_per_env=32", "sim.nthread=1", "training.device=cpu",
                 "training.no_play=true", "training.eval_interval=0", "training.progress=false",
                 f"training.log_dir={tmp_path / 'logs'}")
    assert result.returncode == 0, result.stderr
    (run_dir,) = (tmp_path / "logs" / "sac" / "g1_walk_flat").iterdir()
    plugins = json.loads((run_dir / "run_config.json").read_text())["plugins"]
    assert plugins["robot"] == {"name": "g1_copy", "distribution": "unilab-test-robot", "version": "0.0.2"}
    assert set(plugins) == {"algo", "task", "sim", "robot"}
    shutil.rmtree(tmp_path / "site")  # the robot's package uninstalled
    result = cli(tmp_path, "play", str(run_dir), "--no-video")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line == ("error: robot.name: unknown robot 'g1_copy'; valid choices: g1; the run used it from the "
                    "package unilab-test-robot 0.0.2, not installed here: install that package"), line
