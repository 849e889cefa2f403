"""A package kept in its own git repository, pinned at a commit: `sync` clones it into
``.workspace/<name>``, checks out the pin and installs it editable; `verify` checks the pin.

The stale-pin reproduction: the sibling pinned at an old commit, written for an older unisim
contract (contract 0, whose ``reset`` took no state). The original system found out at the first
reset of a training run; here `sync` (through `verify`) stops with one precise line.

To stay fast, the throwaway environment is a venv without pip whose ``.pth`` file adds the
project's .venv (torch, unisim, pip, setuptools), and sync installs with --no-deps
--no-build-isolation.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "unisim-mjstep"
TOOL = [sys.executable, str(ROOT / "scripts" / "workspace.py")]


def _load_tool():
    spec = importlib.util.spec_from_file_location("workspace_tool_git_test",
                                                  ROOT / "scripts" / "workspace.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


TOOL_MODULE = _load_tool()
FAST = ["--no-deps", "--no-build-isolation", "--no-constraints"]

# What a backend written for contract 0 looked like: it registered for contract 0, and its reset
# took only the rows.
STALE_RESET = '''

# -- written for unisim contract 0, whose reset() took no state
_reset = MjStepBackend.reset


def _reset_contract0(self, env_ids):
    _reset(self, env_ids)


MjStepBackend.reset = _reset_contract0
'''


def git(cwd: Path, *argv: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    return subprocess.run(["git", *argv], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def sibling(tmp_path) -> dict[str, str | Path]:
    """A git repository of unisim-mjstep: commit ``stale`` (contract 0), then ``fixed``."""
    repo = tmp_path / "remote" / "unisim-mjstep"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns(
        "__pycache__", "*.egg-info", "build", "tests"))
    plugin = repo / "src" / "unisim_mjstep" / "plugin.py"
    backend = repo / "src" / "unisim_mjstep" / "backend.py"
    good_plugin, good_backend = plugin.read_text(), backend.read_text()
    assert "contract_version=CONTRACT_VERSION" in good_plugin
    plugin.write_text(good_plugin.replace("contract_version=CONTRACT_VERSION", "contract_version=0"))
    backend.write_text(good_backend + STALE_RESET)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "mjstep for unisim contract 0")
    stale = git(repo, "rev-parse", "HEAD")
    plugin.write_text(good_plugin)
    backend.write_text(good_backend)
    git(repo, "commit", "-qam", "port to unisim contract 1")
    return {"repo": repo, "stale": stale, "fixed": git(repo, "rev-parse", "HEAD")}


@pytest.fixture
def env_dir(tmp_path) -> Path:
    """A venv that sees the project's .venv packages through a .pth file."""
    path = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(path)
    python = path / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True).stdout
    base = sysconfig.get_paths()["purelib"]
    Path(site.strip(), "zz_unilab_base.pth").write_text(f"import site; site.addsitedir({base!r})\n")
    return path


def write_manifest(ws: Path, repo: Path, commit: str) -> Path:
    ws.mkdir(exist_ok=True)
    path = ws / "workspace.toml"
    path.write_text(f"""
[workspace]
plugins = ["unisim.registry:BACKENDS"]

[packages.unisim_mjstep]
git = "{repo}"
commit = "{commit}"
distribution = "unisim-mjstep"
version = "0.1.0"
entry_points = ["unisim:mjstep"]
""")
    return path


def tool(manifest: Path, env_dir: Path, *argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return subprocess.run([*TOOL, "--manifest", str(manifest), "--venv", str(env_dir), *argv],
                          capture_output=True, text=True, timeout=300, env=env)


def verify_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [ln for ln in result.stdout.splitlines()
            if ln.startswith("verify: ") and not ln.startswith("verify: warning")]


def test_stale_pin_is_caught_at_sync_then_fixed_pin_syncs_and_verifies(tmp_path, sibling, env_dir):
    ws = tmp_path / "ws"
    manifest = write_manifest(ws, sibling["repo"], sibling["stale"])
    checkout = ws / ".workspace" / "unisim_mjstep"

    # 1. sync at the stale pin: cloned, checked out, installed; verify stops it with one line.
    result = tool(manifest, env_dir, "sync", *FAST)
    assert result.returncode == 1, result.stdout + result.stderr
    assert git(checkout, "rev-parse", "HEAD") == sibling["stale"]
    assert (ws / ".workspace" / ".gitignore").exists()
    assert "warning" not in result.stdout  # the editable install leaves the checkout clean
    assert verify_lines(result) == [
        "verify: plugin 'mjstep' from unisim-mjstep 0.1.0 (entry-point group 'unisim') failed: "
        "backend 'mjstep' from unisim-mjstep implements unisim contract 0, but the installed "
        "unisim provides contract 1; install a version of unisim-mjstep built for contract 1",
        f"verify: 1 problem(s) in {manifest}",
    ]

    # 2. What the original system did instead: nothing checked, and the first reset of a
    #    training run failed (here: the g1_walk_flat env on the stale backend class).
    script = (
        "from unilab.plugins import TASKS\n"
        "from unisim_mjstep import MjStepBackend\n"
        "task = TASKS.get('g1_walk_flat').item\n"
        "no_dr = {'domain_randomization': {'enabled': False}}  # mjstep has no randomization\n"
        "cfg = task.config_cls(**(no_dr if 'domain_randomization' in task.config_cls.model_fields"
        " else {}))\n"
        "env = task.make_env(cfg, backend_cls=MjStepBackend, num_envs=2)\n"
        "env.reset()\n"
    )
    crash = subprocess.run([str(env_dir / "bin" / "python"), "-c", script], capture_output=True,
                           text=True, timeout=300)
    assert crash.returncode != 0
    assert "TypeError" in crash.stderr and "unexpected keyword argument 'qpos'" in crash.stderr

    # 3. The sibling's checkout moved to the fixed commit by hand: verify names the drift.
    git(checkout, "checkout", "-q", sibling["fixed"])
    result = tool(manifest, env_dir, "verify")
    assert result.returncode == 1
    assert verify_lines(result)[0] == (
        f"verify: unisim_mjstep: pinned at commit {sibling['stale'][:12]} but the checkout "
        f".workspace/unisim_mjstep is at {sibling['fixed'][:12]} (run `scripts/workspace.py "
        f"sync` to check out the pin, or `freeze unisim_mjstep` to pin the checkout)"
    )

    # 4. freeze pins the checkout; sync (no pip needed) and verify pass.
    result = tool(manifest, env_dir, "freeze", "unisim_mjstep")
    assert result.returncode == 0, result.stderr
    assert f'commit = "{sibling["fixed"]}"' in manifest.read_text()
    result = tool(manifest, env_dir, "sync", *FAST)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "workspace up to date: skipping pip" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == (
        "verify: ok (1 packages, 1 plugin registries loaded strictly)"
    )

    # 5. Re-pinning to the stale commit with local edits in the checkout: sync refuses to
    #    discard them; with force it checks the pin out (git only, run in-process).
    (checkout / "README.md").write_text("local edit\n")
    manifest.write_text(manifest.read_text().replace(sibling["fixed"], sibling["stale"]))
    pkg = TOOL_MODULE.load_manifest(manifest).packages["unisim_mjstep"]
    assert TOOL_MODULE.checkout_pin(pkg) == [
        f"unisim_mjstep: {checkout} has uncommitted changes and is at "
        f"{sibling['fixed'][:12]}, not at the pin {sibling['stale'][:12]}; commit or stash them "
        f"there, or run `sync --force` to discard them"
    ]
    assert git(checkout, "rev-parse", "HEAD") == sibling["fixed"]
    assert TOOL_MODULE.checkout_pin(pkg, force=True) == []
    assert git(checkout, "rev-parse", "HEAD") == sibling["stale"]
    assert git(checkout, "status", "--porcelain") == ""


def test_checkout_problems_are_one_line_each(tmp_path, sibling):
    """Pins that cannot be checked out (git only, no install)."""
    manifest = write_manifest(tmp_path / "ws", sibling["repo"], "1" * 40)
    pkg = TOOL_MODULE.load_manifest(manifest).packages["unisim_mjstep"]
    assert TOOL_MODULE.checkout_pin(pkg) == [
        f"unisim_mjstep: pinned commit 111111111111 is not in {sibling['repo']} (fetched; check "
        f"the pin in workspace.toml)"
    ]
    missing = write_manifest(tmp_path / "ws2", tmp_path / "no_such_repo", sibling["fixed"])
    pkg = TOOL_MODULE.load_manifest(missing).packages["unisim_mjstep"]
    (problem,) = TOOL_MODULE.checkout_pin(pkg)
    assert problem.startswith(f"unisim_mjstep: git clone {tmp_path / 'no_such_repo'} failed: ")
    report = TOOL_MODULE.verify_environment(TOOL_MODULE.load_manifest(missing), plugins=False)
    assert report.problems == [
        f"unisim_mjstep: {tmp_path / 'no_such_repo'} is not checked out at "
        f".workspace/unisim_mjstep (run `scripts/workspace.py sync`)"
    ]
