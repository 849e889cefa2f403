"""`scripts/workspace.py verify`: one precise line per problem, on a fake workspace (temp manifest,
package folders and fake installed distributions on sys.path), and success on the real one."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from unisim.testing import write_distribution

ROOT = Path(__file__).resolve().parents[2]


def _load_tool():
    spec = importlib.util.spec_from_file_location("workspace_tool_under_test",
                                                  ROOT / "scripts" / "workspace.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


tool = _load_tool()

GOOD_PLUGIN = """
from unisim.hookspecs import hookimpl

@hookimpl
def unisim_register_backends(register):
    register("thing", object)
"""


def git(cwd: Path, *argv: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    return subprocess.run(["git", *argv], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


class FakeWorkspace:
    """A provider package (contract fake_contract, one plugin) and a consumer requiring it.

    Every keyword of :meth:`build` changes one thing from a consistent workspace.
    """

    def __init__(self, tmp_path: Path, monkeypatch) -> None:
        self.tmp, self.mp = tmp_path, monkeypatch
        self.uid = uuid.uuid4().hex[:8]
        self.root = tmp_path / "ws"
        self.site = tmp_path / "site"
        self.group = f"wstest_{self.uid}"
        self.provider = f"fake-provider-{self.uid}"
        monkeypatch.delenv("UNILAB_STRICT_PLUGINS", raising=False)

    def build(
        self,
        *,
        manifest_version="0.1.0",
        pyproject_version="0.1.0",
        installed_version="0.1.0",
        code_contract=1,
        provides=1,
        requires=1,
        required_entry_points=("thing",),
        plugin_source=GOOD_PLUGIN,
        origin="provider",
        editable=True,
        install_provider=True,
        commit="",
    ):
        uid = self.uid
        shutil.rmtree(self.site, ignore_errors=True)  # a rebuild starts afresh
        for name in [m for m in sys.modules if uid in m]:
            del sys.modules[name]
        for pkg, version in (("provider", pyproject_version), ("consumer", "0.1.0")):
            (self.root / pkg).mkdir(parents=True, exist_ok=True)
            (self.root / pkg / "pyproject.toml").write_text(
                f'[project]\nname = "fake-{pkg}-{uid}"\nversion = "{version}"\n'
            )
        eps = ", ".join(f'"{self.group}:{ep}"' for ep in required_entry_points)
        requires_toml = json.dumps(requires)
        (self.root / "workspace.toml").write_text(f"""
[workspace]
plugins = ["regmod_{uid}:REGISTRY"]

[contracts]
fake_contract = "prov_{uid}:CONTRACT_VERSION"

[packages.provider]
path = "provider"
distribution = "{self.provider}"
version = "{manifest_version}"
commit = "{commit}"
provides = {{ fake_contract = {provides} }}
entry_points = [{eps}]

[packages.consumer]
path = "consumer"
distribution = "fake-consumer-{uid}"
version = "0.1.0"
requires = {{ fake_contract = {requires_toml} }}
""")
        files = {
            f"prov_{uid}.py": f"CONTRACT_VERSION = {code_contract}\n",
            f"regmod_{uid}.py": (
                "from unisim import hookspecs\nfrom unisim.plugins import PluginRegistry\n"
                f"REGISTRY = PluginRegistry({self.group!r}, hookspecs, "
                "'unisim_register_backends', 'thing')\n"
            ),
            f"plug_{uid}.py": plugin_source,
        }
        if install_provider:
            write_distribution(
                self.site, self.provider, installed_version,
                entry_points={self.group: {"thing": f"plug_{uid}"}}, files=files,
                direct_url=None if origin is None else self.root / origin, editable=editable,
            )
        else:
            write_distribution(self.site, f"unrelated-{uid}", "1.0", files=files)
        write_distribution(self.site, f"fake-consumer-{uid}", "0.1.0",
                           direct_url=self.root / "consumer")
        if str(self.site) not in sys.path:
            self.mp.syspath_prepend(str(self.site))
        return tool.load_manifest(self.root / "workspace.toml")

    def problems(self, **changes) -> list[str]:
        return tool.verify_environment(self.build(**changes)).problems


@pytest.fixture
def fake(tmp_path, monkeypatch) -> FakeWorkspace:
    return FakeWorkspace(tmp_path, monkeypatch)


def test_consistent_fake_workspace_has_no_problem(fake):
    report = tool.verify_environment(fake.build())
    assert report.problems == [] and report.warnings == []
    assert report.plugin_registries == 1


def test_version_bump_not_reflected_in_the_manifest(fake):
    assert fake.problems(pyproject_version="0.2.0", installed_version="0.2.0") == [
        "provider: provider/pyproject.toml has version 0.2.0 but workspace.toml pins 0.1.0; a "
        'version bump not reflected in the manifest: set [packages.provider] version = "0.2.0"'
    ]


def test_version_bump_not_yet_installed(fake):
    assert fake.problems(pyproject_version="0.2.0", manifest_version="0.2.0") == [
        f"provider: installed {fake.provider} is 0.1.0 but pyproject.toml says 0.2.0 "
        f"(run `scripts/workspace.py sync`)"
    ]


def test_missing_entry_point(fake):
    assert fake.problems(required_entry_points=("thing", "other")) == [
        f"provider: entry point '{fake.group}:other' required by workspace.toml is missing from "
        f"{fake.provider} 0.1.0 (it has: {fake.group}:thing); declare it under "
        f"[project.entry-points.{fake.group}] in provider/pyproject.toml"
    ]


def test_contract_requirement_not_met(fake):
    assert fake.problems(requires=2) == [
        "consumer: requires fake_contract 2 but provider provides fake_contract 1; pin provider "
        "at a commit implementing 2"
    ]
    assert fake.problems(requires=[1, 2]) == []


def test_installed_code_provides_another_contract_than_the_manifest_says(fake):
    assert fake.problems(code_contract=0) == [
        f"provider: workspace.toml says it provides fake_contract 1, but the installed code has "
        f"prov_{fake.uid}:CONTRACT_VERSION = 0; pin a commit that implements fake_contract 1, or "
        f"correct provides",
        "consumer: requires fake_contract 1 but provider provides fake_contract 0; pin provider "
        "at a commit implementing 1",
    ]


@pytest.mark.parametrize(
    "source, error",
    [
        ("raise ImportError('libthing.so not found')\n", "ImportError: libthing.so not found"),
        ("from unisim.hookspecs import hookimpl\n@hookimpl\n"
         "def unisim_register_backends(register):\n    register('', object)\n",
         "thing name must be a non-empty string, got ''"),
    ],
    ids=["import", "register"],
)
def test_broken_plugin_fails_verify(fake, source, error):
    assert fake.problems(plugin_source=source) == [
        f"plugin 'thing' from {fake.provider} 0.1.0 (entry-point group '{fake.group}') failed: "
        f"{error}"
    ]


def test_package_installed_from_elsewhere_or_not_editable_or_missing(fake):
    where = (fake.root / "consumer").resolve().as_uri()
    assert fake.problems(origin="consumer") == [
        f"provider: {fake.provider} is installed from {where}, not from the workspace folder "
        f"provider (run `scripts/workspace.py sync --force`)"
    ]


def test_package_from_an_index(fake):
    assert fake.problems(origin=None) == [
        f"provider: {fake.provider} is installed from an index, not from the workspace folder "
        f"provider (run `scripts/workspace.py sync --force`)"
    ]


def test_package_not_editable(fake):
    assert fake.problems(editable=False) == [
        f"provider: {fake.provider} is installed from provider but not editable "
        f"(run `scripts/workspace.py sync --force`)"
    ]


def test_package_not_installed(fake):
    problems = fake.problems(install_provider=False)
    assert problems[0] == (f"provider: distribution '{fake.provider}' is not installed "
                           f"(run `scripts/workspace.py sync`)")
    assert len(problems) == 1


def test_stale_commit_dirty_tree_and_freeze(fake):
    ws = fake.build()
    git(fake.root, "init", "-q")
    git(fake.root, "add", ".")
    git(fake.root, "commit", "-qm", "first")
    first = git(fake.root, "rev-parse", "HEAD")
    (fake.root / "provider" / "module.py").write_text("x = 1\n")
    git(fake.root, "add", ".")
    git(fake.root, "commit", "-qm", "second")
    second = git(fake.root, "rev-parse", "HEAD")

    assert fake.problems(commit=first) == [
        f"provider: pinned at commit {first[:12]} but 1 later commit(s) change provider "
        f"(last: {second[:12]}); the pin is stale: run `scripts/workspace.py freeze provider`"
    ]
    assert fake.problems(commit="0" * 40) == [
        "provider: pinned commit 000000000000 does not exist in this repository (stale or "
        "mistyped)"
    ]
    # freeze pins the current commits; then verify is clean
    ws = fake.build(commit=first)
    assert tool.cmd_freeze(ws, ["provider"]) == 0
    ws = tool.load_manifest(fake.root / "workspace.toml")
    assert ws.packages["provider"].commit == second
    assert tool.cmd_freeze(ws, []) == 0  # consumer gains a commit line
    ws = tool.load_manifest(fake.root / "workspace.toml")
    assert ws.packages["consumer"].commit == first
    assert tool.verify_environment(ws).problems == []
    # an uncommitted change: a warning, a problem with --clean, recorded for runs
    (fake.root / "provider" / "module.py").write_text("x = 2\n")
    report = tool.verify_environment(ws)
    assert report.problems == []
    assert report.warnings == [
        "provider: provider/ has uncommitted changes (runs record the tree as dirty)"
    ]
    assert tool.verify_environment(ws, clean=True).problems == report.warnings
    record = tool.workspace_record(ws)["packages"]
    assert record["provider"] == {
        "location": {"path": "provider"}, "distribution": fake.provider, "version": "0.1.0",
        "installed_version": "0.1.0", "pinned_commit": second, "commit": second, "dirty": True,
        "at_pin": True,
    }
    assert record["consumer"]["dirty"] is False


def test_verify_command_prints_one_line_per_problem_and_exits_1(fake):
    fake.build(requires=2, required_entry_points=("thing", "other"))
    env = dict(os.environ, PYTHONPATH=str(fake.site))
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "workspace.py"), "--manifest",
         str(fake.root / "workspace.toml"), "--venv", str(Path(sys.prefix)), "verify"],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert all(ln.startswith("verify: ") for ln in lines), lines
    assert len(lines) == 3, lines
    assert lines[0].startswith(f"verify: provider: entry point '{fake.group}:other'")
    assert lines[1].startswith("verify: consumer: requires fake_contract 2")
    assert lines[2] == f"verify: 2 problem(s) in {fake.root / 'workspace.toml'}"


@pytest.mark.parametrize(
    "table, message",
    [
        ('path = "a"\ndistribution = "a"\nversion = "1"\nentry_point = []',
         "[packages.a]: unknown key 'entry_point' (did you mean 'entry_points'?)"),
        ('path = "a"\ngit = "https://x/a.git"\ndistribution = "a"\nversion = "1"',
         "[packages.a]: give exactly one of path (a folder in this repository) or git (the URL "
         "of the package's own repository), got ['git', 'path']"),
        ('git = "https://x/a.git"\ndistribution = "a"\nversion = "1"',
         '[packages.a]: a git package needs commit = "<40 hex digits>" (the pin)'),
        ('path = "a"\ndistribution = "a"\nversion = "1"\ncommit = "abc"',
         "[packages.a]: commit = 'abc' must be 40 hex digits or \"\""),
        ('path = "a"\ndistribution = "a"\nversion = "1"\nrequires = { c = "1" }',
         "[packages.a]: requires.c = '1' must be an integer version or a list of them"),
        ('path = "a"\nversion = "1"', "[packages.a]: missing key 'distribution'"),
    ],
    ids=["unknown_key", "path_and_git", "git_without_commit", "bad_commit", "bad_requires",
         "missing_key"],
)
def test_manifest_errors_name_table_key_and_expectation(tmp_path, table, message):
    path = tmp_path / "workspace.toml"
    path.write_text(f"[workspace]\nschema = 1\n\n[packages.a]\n{table}\n")
    with pytest.raises(tool.ManifestError) as info:
        tool.load_manifest(path)
    assert str(info.value) == message


def test_real_workspace_verifies():
    """`python3 scripts/workspace.py verify` against the project's .venv, as after a sync."""
    python = shutil.which("python3") or sys.executable
    result = subprocess.run([python, str(ROOT / "scripts" / "workspace.py"), "verify"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines()[-1] == (
        "verify: ok (4 packages, 4 plugin registries loaded strictly)"
    )


def test_run_config_workspace_record_of_the_real_workspace():
    from unilab import runs

    state = runs.workspace_state()
    assert state["root"] == str(ROOT) and "error" not in state, state
    assert set(state["packages"]) == {"mjbatch_uni", "unisim", "unilab_rl", "unilab"}
    unisim = state["packages"]["unisim"]
    assert unisim["location"] == {"path": "unisim"} and unisim["installed_version"] == "0.1.0"
    assert set(unisim) >= {"pinned_commit", "commit", "dirty", "at_pin"}
    assert len(state["manifest_sha256"]) == 64
