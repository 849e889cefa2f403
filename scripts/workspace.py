#!/usr/bin/env python3
"""UniLab workspace tool (standard library only): sync, verify, freeze.

    python3 scripts/workspace.py sync      # check out pinned repositories, create/update .venv,
                                           # install every package editable, then verify
    python3 scripts/workspace.py verify    # check .venv and the trees against workspace.toml
    python3 scripts/workspace.py freeze    # write each package's current commit into workspace.toml

Options before the verb: ``--manifest PATH`` (default: ``workspace.toml`` of this repository) and
``--venv PATH`` (default: ``.venv`` next to the manifest).

A package lives either in this repository (``path``) or in its own git repository (``git`` URL +
``commit``, optional ``subdirectory``): `sync` clones that into ``.workspace/<name>`` and checks out
the pinned commit (detached), refusing to throw away uncommitted changes unless ``--force``. It then
installs every package in editable mode in one pip call, with the pins of the manifest's
``constraints`` file, and runs `verify`. A second `sync` with nothing changed skips pip.

`verify` prints one line per problem and exits 1 if there is any:

- versions: ``pyproject.toml`` vs the manifest (a bump not reflected), installed vs ``pyproject.toml``
  (not re-synced); the installed distribution comes from the workspace path, editable, and no other
  copy of it is visible (same-named packages exist on PyPI);
- commits: a git package's checkout is at its pin; an in-repository package pinned at a commit has
  no later commit touching its folder (a stale pin). Uncommitted changes are a warning (``--clean``
  makes them a problem) and are recorded in every run's ``run_config.json``;
- entry points the manifest requires exist in the installed distribution;
- contracts: the version the installed code really provides (``[contracts]`` names the attribute,
  e.g. ``unisim:CONTRACT_VERSION``) equals the manifest's ``provides``, and every ``requires`` is met;
- plugins: the registries named in ``[workspace] plugins`` load with every plugin in strict mode;
  each failure is a line (e.g. a backend registered for another unisim contract).

`freeze [NAME ...]` writes the current commit of each (or the named) package into the manifest: the
checkout's HEAD for a git package, the last commit touching the folder for an in-repository one.

Requires Python >= 3.11 (tomllib).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import importlib
import json
import os
import re
import subprocess
import sys

if sys.version_info < (3, 11):  # before tomllib is imported
    sys.exit(f"workspace.py needs Python >= 3.11 (tomllib), this is {sys.version.split()[0]}")

import tomllib  # noqa: E402
import venv  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "workspace.toml"
STAMP_NAME = ".unilab-sync-stamp"

_WORKSPACE_KEYS = {"schema", "constraints", "checkouts", "plugins"}
_PACKAGE_KEYS = {
    "path", "git", "subdirectory", "distribution", "version", "commit", "provides", "requires",
    "entry_points", "extras",
}
_SHA = re.compile(r"^[0-9a-f]{40}$")


class ManifestError(ValueError):
    """workspace.toml is malformed; the message names the table, the key and what was expected."""


# ================================================================================== manifest
@dataclass
class Package:
    """One package of the workspace (a ``[packages.<name>]`` table).

    Attributes:
        name: the table's name.
        distribution: installed distribution name (``pip show <distribution>``).
        version: version the distribution must have.
        commit: pinned git commit, 40 hex digits, or "" (not frozen; only for ``path`` packages).
        provides: contract name -> version this package implements.
        requires: contract name -> version (or list of versions) it needs.
        entry_points: ``"group:name"`` entry points the installed distribution must expose.
        extras: pip extras installed with it (``["test"]``).
        path: folder in this repository, or None for a git package.
        git: URL (or local path) of the package's own repository, or None.
        subdirectory: the package's folder inside that repository ("" = its root).
        repo_dir: where git runs for this package: the checkout of a git package, the folder
            of an in-repository one.
        source: folder holding the package's ``pyproject.toml``; installed editable from here.
    """

    name: str
    distribution: str
    version: str
    commit: str
    provides: dict[str, int]
    requires: dict[str, Any]
    entry_points: list[str]
    extras: list[str]
    path: str | None
    git: str | None
    subdirectory: str
    repo_dir: Path
    source: Path

    @property
    def location(self) -> dict[str, str]:
        if self.git is not None:
            return {"git": self.git, "subdirectory": self.subdirectory}
        return {"path": self.path or ""}


@dataclass
class Workspace:
    """A parsed workspace.toml.

    Attributes:
        manifest_path: the manifest file.
        root: folder of the manifest; ``path`` entries are relative to it.
        constraints: pip constraints file, or None.
        checkouts: where git packages are cloned (``<root>/.workspace``).
        plugins: ``"module:attr"`` of plugin registries (or callables returning them) that
            `verify` loads strictly.
        contracts: contract name -> ``"module:attr"`` holding the version the code implements.
        packages: name -> Package, in manifest order.
    """

    manifest_path: Path
    root: Path
    constraints: Path | None
    checkouts: Path
    plugins: list[str]
    contracts: dict[str, str]
    packages: dict[str, Package] = field(default_factory=dict)


def _closest(key: str, valid: set[str]) -> str:
    # mjbatch_uni.did_you_mean(key, valid, n=1); this script runs before any package is installed
    close = difflib.get_close_matches(key, sorted(valid), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _expect(where: str, key: str, value: Any, kind: type | tuple, what: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ManifestError(f"{where}: {key} = {value!r} must be {what}")
    return value


def _is_local(url: str) -> bool:
    return "://" not in url and not re.match(r"^[\w.-]+@[\w.-]+:", url)


def load_manifest(path: Path = MANIFEST) -> Workspace:
    """Parse and check ``path``.

    Raises:
        ManifestError: unknown key (with the closest valid one), wrong type, a package with both
            or neither of ``path`` and ``git``, a git package without a 40-digit commit.
        FileNotFoundError: no such manifest.
    """
    path = Path(path).resolve()
    with path.open("rb") as f:
        try:
            data = tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            raise ManifestError(f"{path.name}: not valid TOML: {exc}") from None
    root = path.parent
    for key in data:
        if key not in {"workspace", "contracts", "packages"}:
            raise ManifestError(
                f"{path.name}: unknown table [{key}]"
                f"{_closest(key, {'workspace', 'contracts', 'packages'})}"
            )
    wsd = data.get("workspace", {})
    for key in wsd:
        if key not in _WORKSPACE_KEYS:
            raise ManifestError(f"[workspace]: unknown key {key!r}{_closest(key, _WORKSPACE_KEYS)}")
    constraints = wsd.get("constraints")
    plugins = wsd.get("plugins", [])
    _expect("[workspace]", "plugins", plugins, list, 'a list of "module:attr" strings')
    contracts = data.get("contracts", {})
    for key, value in contracts.items():
        _expect("[contracts]", key, value, str, 'a "module:attr" string')
    ws = Workspace(
        manifest_path=path,
        root=root,
        constraints=(root / constraints) if constraints else None,
        checkouts=root / wsd.get("checkouts", ".workspace"),
        plugins=list(plugins),
        contracts=dict(contracts),
    )
    packages = data.get("packages", {})
    if not packages:
        raise ManifestError(f"{path.name}: no [packages.<name>] tables")
    for name, pkg in packages.items():
        where = f"[packages.{name}]"
        for key in pkg:
            if key not in _PACKAGE_KEYS:
                raise ManifestError(f"{where}: unknown key {key!r}{_closest(key, _PACKAGE_KEYS)}")
        if ("path" in pkg) == ("git" in pkg):
            raise ManifestError(
                f"{where}: give exactly one of path (a folder in this repository) or git (the "
                f"URL of the package's own repository), got {sorted(set(pkg) & {'path', 'git'})}"
            )
        for key in ("distribution", "version"):
            if key not in pkg:
                raise ManifestError(f"{where}: missing key {key!r}")
            _expect(where, key, pkg[key], str, "a string")
        commit = _expect(where, "commit", pkg.get("commit", ""), str, "a string")
        if commit and not _SHA.match(commit):
            raise ManifestError(f"{where}: commit = {commit!r} must be 40 hex digits or \"\"")
        git = pkg.get("git")
        if git is not None:
            _expect(where, "git", git, str, "a URL string")
            if not commit:
                raise ManifestError(
                    f"{where}: a git package needs commit = \"<40 hex digits>\" (the pin)"
                )
            if _is_local(git) and not Path(git).is_absolute():
                git = str((root / git).resolve())
        provides = _expect(where, "provides", pkg.get("provides", {}), dict, "a table")
        requires = _expect(where, "requires", pkg.get("requires", {}), dict, "a table")
        for table, values in (("provides", provides), ("requires", requires)):
            for key, value in values.items():
                ok = isinstance(value, int) and not isinstance(value, bool)
                if table == "requires" and isinstance(value, list):
                    ok = bool(value) and all(isinstance(v, int) for v in value)
                if not ok:
                    raise ManifestError(
                        f"{where}: {table}.{key} = {value!r} must be an integer version"
                        + (" or a list of them" if table == "requires" else "")
                    )
        eps = _expect(where, "entry_points", pkg.get("entry_points", []), list, "a list")
        for ep in eps:
            if not isinstance(ep, str) or ep.count(":") != 1:
                raise ManifestError(f'{where}: entry point {ep!r} must be "group:name"')
        extras = _expect(where, "extras", pkg.get("extras", []), list, "a list of strings")
        subdirectory = _expect(where, "subdirectory", pkg.get("subdirectory", ""), str, "a string")
        if git is not None:
            repo_dir = ws.checkouts / name
            source = repo_dir / subdirectory
        else:
            _expect(where, "path", pkg["path"], str, "a folder path string")
            source = root / pkg["path"]
            repo_dir = source
        ws.packages[name] = Package(
            name=name,
            distribution=pkg["distribution"],
            version=pkg["version"],
            commit=commit,
            provides=dict(provides),
            requires=dict(requires),
            entry_points=list(eps),
            extras=list(extras),
            path=pkg.get("path"),
            git=git,
            subdirectory=subdirectory,
            repo_dir=repo_dir,
            source=source,
        )
    return ws


def _rel(ws: Workspace, path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ws.root))
    except ValueError:
        return str(path)


# ================================================================================== git
def _git(*argv: str, cwd: Path) -> str | None:
    """Output of ``git <argv>`` in ``cwd``, stripped; None if git fails or is missing."""
    try:
        out = subprocess.run(
            ["git", *argv], cwd=cwd, capture_output=True, text=True, check=True, timeout=120
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out


def _git_ok(*argv: str, cwd: Path) -> bool:
    return _git(*argv, cwd=cwd) is not None


def git_state(pkg: Package) -> dict[str, Any]:
    """The package's current commit and whether its tree has uncommitted changes.

    Returns:
        ``{"commit": str | None, "dirty": bool | None}``: for a git package the checkout's HEAD
        and any change in the checkout; for an in-repository package the last commit touching its
        folder and any change (untracked files included) inside it. None where git cannot tell
        (no git, no repository, no checkout).
    """
    if pkg.git is not None:
        if not (pkg.repo_dir / ".git").exists():
            return {"commit": None, "dirty": None}
        commit = _git("rev-parse", "HEAD", cwd=pkg.repo_dir)
        status = _git("status", "--porcelain", cwd=pkg.repo_dir)
    else:
        commit = _git("log", "-1", "--format=%H", "--", str(pkg.source), cwd=pkg.repo_dir)
        status = _git("status", "--porcelain", "--", str(pkg.source), cwd=pkg.repo_dir)
    return {"commit": commit or None, "dirty": None if status is None else bool(status)}


def _has_commit(repo: Path, commit: str) -> bool:
    return _git_ok("cat-file", "-e", f"{commit}^{{commit}}", cwd=repo)


def checkout_pin(pkg: Package, force: bool = False) -> list[str]:
    """Clone ``pkg.git`` into ``pkg.repo_dir`` if needed and check out ``pkg.commit`` detached.

    Fetches only when the commit is not already present. Leaves a checkout that is already at the
    pin alone (even with uncommitted changes, which `verify` reports).

    Returns:
        Problems, one line each (empty on success): the folder exists but is no git checkout, the
        clone or fetch failed, the commit is not in the repository, or the checkout has
        uncommitted changes and is not at the pin (``force=True`` discards them).
    """
    dest = pkg.repo_dir
    dest.parent.mkdir(parents=True, exist_ok=True)
    ignore = dest.parent / ".gitignore"
    if not ignore.exists():  # keep the checkouts out of the outer repository's status
        ignore.write_text("# written by scripts/workspace.py: checkouts of git packages\n*\n")
    if not (dest / ".git").exists():
        if dest.exists() and any(dest.iterdir()):
            return [f"{pkg.name}: {dest} exists but is not a git checkout; move it away"]
        print(f"{pkg.name}: cloning {pkg.git} into {dest}", flush=True)
        error = _git_error("clone", "--quiet", pkg.git, str(dest), cwd=dest.parent)
        if error is not None:
            return [f"{pkg.name}: git clone {pkg.git} failed: {error}"]
    elif _git("remote", "get-url", "origin", cwd=dest) != pkg.git:
        _git("remote", "set-url", "origin", pkg.git, cwd=dest)
    head = _git("rev-parse", "HEAD", cwd=dest)
    if head == pkg.commit:
        return []
    if not _has_commit(dest, pkg.commit):
        _git("fetch", "--quiet", "origin", cwd=dest)
        if not _has_commit(dest, pkg.commit):
            _git("fetch", "--quiet", "origin", pkg.commit, cwd=dest)
        if not _has_commit(dest, pkg.commit):
            return [
                f"{pkg.name}: pinned commit {pkg.commit[:12]} is not in {pkg.git} "
                f"(fetched; check the pin in workspace.toml)"
            ]
    if _git("status", "--porcelain", cwd=dest) and not force:
        return [
            f"{pkg.name}: {dest} has uncommitted changes and is at {str(head)[:12]}, not at the "
            f"pin {pkg.commit[:12]}; commit or stash them there, or run `sync --force` to "
            f"discard them"
        ]
    argv = ["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach"]
    argv += ["--force"] if force else []
    error = _git_error(*argv, pkg.commit, cwd=dest)
    if error is not None:
        return [f"{pkg.name}: git checkout {pkg.commit[:12]} failed: {error}"]
    print(f"{pkg.name}: checked out {pkg.commit[:12]} in {dest}", flush=True)
    return []


def _git_error(*argv: str, cwd: Path) -> str | None:
    """Run ``git <argv>``; None on success, else the last line of its error output."""
    try:
        result = subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True)
    except OSError as exc:
        return f"cannot run git: {exc}"
    if result.returncode == 0:
        return None
    lines = [ln.strip() for ln in result.stderr.splitlines() if ln.strip()]
    return lines[-1] if lines else f"exit status {result.returncode}"


# ================================================================================== sync
def _venv_python(venv_dir: Path) -> Path:
    return venv_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _inputs_digest(ws: Workspace, pip: list[str]) -> str:
    """Hash of everything that decides what pip installs: the pip command, the constraints and
    every package's pyproject.toml (not the commits: editable installs follow the trees)."""
    h = hashlib.sha256()
    h.update("\0".join(pip).encode())
    if "-c" in pip:
        h.update(Path(pip[pip.index("-c") + 1]).read_bytes())
    for pkg in ws.packages.values():
        pyproject = pkg.source / "pyproject.toml"
        h.update(pyproject.read_bytes() if pyproject.exists() else b"-")
    h.update(sys.version.encode())
    return h.hexdigest()


def cmd_sync(ws: Workspace, venv_dir: Path, args: argparse.Namespace) -> int:
    problems = []
    for pkg in ws.packages.values():
        if pkg.git is not None:
            problems += checkout_pin(pkg, force=args.force)
    for problem in problems:
        print(f"sync: {problem}", file=sys.stderr)
    if problems:
        return 1
    python = _venv_python(venv_dir)
    if not python.exists():
        print(f"creating {_rel(ws, venv_dir)} with {sys.executable}", flush=True)
        builder = venv.EnvBuilder(with_pip=True, system_site_packages=args.system_site_packages)
        builder.create(venv_dir)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    if ws.constraints is not None and not args.no_constraints:
        pip += ["-c", str(ws.constraints)]
    pip += ["--no-deps"] if args.no_deps else []
    pip += ["--no-build-isolation"] if args.no_build_isolation else []
    for pkg in ws.packages.values():
        extras = f"[{','.join(pkg.extras)}]" if pkg.extras else ""
        pip += ["-e", f"{pkg.source.resolve()}{extras}"]
    stamp = venv_dir / STAMP_NAME
    digest = _inputs_digest(ws, pip)
    if stamp.exists() and stamp.read_text() == digest and not args.force:
        print("workspace up to date: skipping pip (use --force to reinstall)", flush=True)
    else:
        print("installing:", ", ".join(ws.packages), flush=True)
        result = subprocess.run(pip, cwd=ws.root)
        if result.returncode != 0:
            print("sync: pip install failed (see above)", file=sys.stderr)
            return result.returncode
        stamp.write_text(digest)
    return _run_verify_in_venv(ws, venv_dir, clean=False)


# ================================================================================== verify
def _run_verify_in_venv(ws: Workspace, venv_dir: Path, clean: bool) -> int:
    python = _venv_python(venv_dir)
    if not python.exists():
        print(f"verify: no environment at {venv_dir}; run `python3 scripts/workspace.py sync`")
        return 1
    env = dict(os.environ, UNILAB_STRICT_PLUGINS="1")
    argv = [str(python), str(Path(__file__).resolve()), "--manifest", str(ws.manifest_path)]
    argv += ["_verify_inside"] + (["--clean"] if clean else [])
    return subprocess.run(argv, env=env, cwd=ws.root).returncode


@dataclass
class Report:
    """What `verify` found: ``problems`` fail it, ``warnings`` are printed only."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    plugin_registries: int = 0


def _pyproject_version(source: Path) -> tuple[bool, str | None]:
    """(pyproject.toml exists, its static [project] version or None if dynamic/unreadable)."""
    path = source / "pyproject.toml"
    if not path.exists():
        return False, None
    try:
        project = tomllib.loads(path.read_text()).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return True, None
    version = project.get("version")
    return True, version if isinstance(version, str) else None


def _installed_origin(dist: Any) -> tuple[str, bool]:
    """(URL the distribution was installed from, editable?) from PEP 610 direct_url.json."""
    text = dist.read_text("direct_url.json")
    if not text:
        return "", False
    try:
        data = json.loads(text)
    except ValueError:
        return "", False
    return data.get("url", ""), bool(data.get("dir_info", {}).get("editable"))


def _import_attr(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    obj = importlib.import_module(module)
    for part in filter(None, attr.split(".")):
        obj = getattr(obj, part)
    return obj


def _fmt_versions(value: Any) -> str:
    return " or ".join(map(str, value)) if isinstance(value, list) else str(value)


def _short(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def verify_environment(ws: Workspace, *, clean: bool = False, plugins: bool = True) -> Report:
    """Compare the running environment and the trees with the manifest (runs inside the venv).

    Args:
        ws: the parsed manifest.
        clean: uncommitted changes in a package's tree are a problem, not a warning.
        plugins: load the ``[workspace] plugins`` registries strictly.

    Returns:
        A Report; each problem and warning is one line naming the package and what was expected.
    """
    from importlib import metadata

    report = Report()
    problems, warnings = report.problems, report.warnings
    commits: dict[str, str | None] = {}
    for name, pkg in ws.packages.items():
        where = _rel(ws, pkg.source)
        # ------------------------------------------------------------ location
        if pkg.git is not None:
            if not (pkg.repo_dir / ".git").exists():
                problems.append(
                    f"{name}: {pkg.git} is not checked out at {_rel(ws, pkg.repo_dir)} "
                    f"(run `scripts/workspace.py sync`)"
                )
                continue
            origin = _git("remote", "get-url", "origin", cwd=pkg.repo_dir)
            if origin != pkg.git:
                problems.append(
                    f"{name}: the checkout {_rel(ws, pkg.repo_dir)} comes from {origin}, but "
                    f"workspace.toml says git = {pkg.git!r} (run `scripts/workspace.py sync`)"
                )
        has_pyproject, source_version = _pyproject_version(pkg.source)
        if not has_pyproject:
            problems.append(f"{name}: no pyproject.toml in {where}")
        elif source_version is not None and source_version != pkg.version:
            problems.append(
                f"{name}: {where}/pyproject.toml has version {source_version} but workspace.toml "
                f"pins {pkg.version}; a version bump not reflected in the manifest: set "
                f'[packages.{name}] version = "{source_version}"'
            )
        # ------------------------------------------------------------ installed distribution
        try:
            dist = metadata.distribution(pkg.distribution)
        except metadata.PackageNotFoundError:
            dist = None
            problems.append(
                f"{name}: distribution {pkg.distribution!r} is not installed "
                f"(run `scripts/workspace.py sync`)"
            )
        if dist is not None:
            expected = source_version or pkg.version
            if dist.version != expected:
                against = "pyproject.toml" if source_version else "workspace.toml"
                problems.append(
                    f"{name}: installed {pkg.distribution} is {dist.version} but {against} says "
                    f"{expected} (run `scripts/workspace.py sync`)"
                )
            origin, editable = _installed_origin(dist)
            if origin.rstrip("/") != pkg.source.resolve().as_uri():
                problems.append(
                    f"{name}: {pkg.distribution} is installed from {origin or 'an index'}, not "
                    f"from the workspace folder {where} (run `scripts/workspace.py sync --force`)"
                )
            elif not editable:
                problems.append(
                    f"{name}: {pkg.distribution} is installed from {where} but not editable "
                    f"(run `scripts/workspace.py sync --force`)"
                )
            others = _other_copies(dist, pkg, metadata.distributions(name=pkg.distribution))
            if others:
                problems.append(
                    f"{name}: another installation of {pkg.distribution} is visible besides the "
                    f"workspace's ({', '.join(others)}); uninstall it"
                )
            have = {f"{ep.group}:{ep.name}" for ep in dist.entry_points}
            for ep in pkg.entry_points:
                if ep not in have:
                    problems.append(
                        f"{name}: entry point {ep!r} required by workspace.toml is missing from "
                        f"{pkg.distribution} {dist.version} (it has: "
                        f"{', '.join(sorted(have)) or 'none'}); declare it under "
                        f"[project.entry-points.{ep.split(':')[0]}] in {where}/pyproject.toml"
                    )
        # ------------------------------------------------------------ commits
        state = git_state(pkg)
        commits[name] = state["commit"]
        problems += _commit_problems(ws, pkg, state["commit"])
        if state["dirty"]:
            line = (
                f"{name}: {_rel(ws, pkg.repo_dir if pkg.git else pkg.source)}/ has uncommitted "
                f"changes (runs record the tree as dirty)"
            )
            (problems if clean else warnings).append(line)
    problems += _contract_problems(ws, commits)
    if plugins:
        problems += _plugin_problems(ws, report)
    return report


def _other_copies(dist: Any, pkg: Package, found: Any) -> list[str]:
    """Metadata folders of ``pkg.distribution`` other than ``dist`` and the build metadata that
    an editable install leaves in the package's own tree (``src/<name>.egg-info``)."""
    first = Path(getattr(dist, "_path", "")).resolve()
    source = pkg.source.resolve()
    others = []
    for other in found:
        path = Path(getattr(other, "_path", "")).resolve()
        if path != first and source not in path.parents:
            others.append(str(path))
    return sorted(set(others))


def _commit_problems(ws: Workspace, pkg: Package, current: str | None) -> list[str]:
    """The pin check of one package: at the pin (git) / no newer commit touches it (path)."""
    pin, name = pkg.commit, pkg.name
    if not pin:
        return []
    repo = pkg.repo_dir
    if current is None:
        return [f"{name}: pinned at commit {pin[:12]} but git cannot read {_rel(ws, pkg.source)}"]
    if current == pin:
        return []
    if not _has_commit(repo, pin):
        where = _rel(ws, repo) if pkg.git else "this repository"
        return [f"{name}: pinned commit {pin[:12]} does not exist in {where} (stale or mistyped)"]
    if pkg.git is not None:
        return [
            f"{name}: pinned at commit {pin[:12]} but the checkout {_rel(ws, repo)} is at "
            f"{current[:12]} (run `scripts/workspace.py sync` to check out the pin, or `freeze "
            f"{name}` to pin the checkout)"
        ]
    if _git_ok("merge-base", "--is-ancestor", pin, current, cwd=repo):
        count = _git("rev-list", "--count", f"{pin}..{current}", "--", str(pkg.source), cwd=repo)
        return [
            f"{name}: pinned at commit {pin[:12]} but {count} later commit(s) change {pkg.path} "
            f"(last: {current[:12]}); the pin is stale: run `scripts/workspace.py freeze {name}`"
        ]
    return [
        f"{name}: pinned at commit {pin[:12]}, which is not an ancestor of {current[:12]}, the "
        f"last commit changing {pkg.path}; run `scripts/workspace.py freeze {name}`"
    ]


def _contract_problems(ws: Workspace, commits: dict[str, str | None]) -> list[str]:
    """Provided contract versions (read from the installed code) against every requirement."""
    problems = []
    providers: dict[str, tuple[str, int]] = {}  # contract -> (package, version it really has)
    for name, pkg in ws.packages.items():
        for key, declared in pkg.provides.items():
            if key in providers:
                problems.append(
                    f"{name}: provides {key}, which {providers[key][0]} provides too; one "
                    f"contract has one provider"
                )
                continue
            actual = declared
            attr = ws.contracts.get(key)
            if attr is not None:
                try:
                    actual = _import_attr(attr)
                except Exception as exc:  # noqa: BLE001 - one line per problem
                    problems.append(f"{name}: cannot read {key} from {attr}: {_short(exc)}")
                    continue
                if actual != declared:
                    at = f" at commit {commits[name][:12]}" if commits.get(name) else ""
                    problems.append(
                        f"{name}: workspace.toml says it provides {key} {declared}, but the "
                        f"installed code{at} has {attr} = {actual!r}; pin a commit that "
                        f"implements {key} {declared}, or correct provides"
                    )
            providers[key] = (name, actual)
    for name, pkg in ws.packages.items():
        for key, wanted in pkg.requires.items():
            fits = wanted if isinstance(wanted, list) else [wanted]
            if key not in providers:
                problems.append(
                    f"{name}: requires {key} {_fmt_versions(wanted)} but no package of the "
                    f"workspace provides {key}"
                )
                continue
            provider, version = providers[key]
            if version not in fits:
                at = f" at commit {commits[provider][:12]}" if commits.get(provider) else ""
                problems.append(
                    f"{name}: requires {key} {_fmt_versions(wanted)} but {provider}{at} provides "
                    f"{key} {version}; pin {provider} at a commit implementing "
                    f"{_fmt_versions(wanted)}"
                )
    return problems


def _plugin_problems(ws: Workspace, report: Report) -> list[str]:
    """Load every registry of ``[workspace] plugins`` with all plugins; each failure is a line."""
    problems = []
    for spec in ws.plugins:
        try:
            obj = _import_attr(spec)
            registries = obj() if callable(obj) and not hasattr(obj, "load") else obj
            registries = [registries] if hasattr(registries, "load") else list(registries)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"plugins: cannot import {spec}: {_short(exc)}")
            continue
        for registry in registries:
            report.plugin_registries += 1
            try:
                registry.load(strict=False)
            except Exception as exc:  # noqa: BLE001
                problems.append(f"plugins: loading the {registry.group!r} group: {_short(exc)}")
            problems += [str(failure) for failure in registry.failures]
    return problems


def _verify_inside(ws: Workspace, clean: bool) -> int:
    """Runs inside the venv: print one line per problem; 0 if none, else 1."""
    report = verify_environment(ws, clean=clean)
    for line in report.warnings:
        print(f"verify: warning: {_one_line(line)}")
    for line in report.problems:
        print(f"verify: {_one_line(line)}")
    if report.problems:
        print(f"verify: {len(report.problems)} problem(s) in {ws.manifest_path}")
        return 1
    print(
        f"verify: ok ({len(ws.packages)} packages, {report.plugin_registries} plugin registries "
        f"loaded strictly)"
    )
    return 0


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


# ================================================================================== records
def workspace_record(ws: Workspace) -> dict[str, Any]:
    """What a run records about the workspace (``run_config.json["workspace"]``).

    Returns:
        ``{"manifest": path, "manifest_sha256": hex, "packages": {name: {"location": {"path"} |
        {"git", "subdirectory"}, "distribution", "version" (pinned), "installed_version" (None if
        not installed), "pinned_commit" ("" = not pinned), "commit" (None if unknown), "dirty"
        (bool or None), "at_pin" (commit == pinned_commit; None if not pinned)}}}``.
    """
    from importlib import metadata

    out: dict[str, Any] = {
        "manifest": str(ws.manifest_path),
        "manifest_sha256": hashlib.sha256(ws.manifest_path.read_bytes()).hexdigest(),
        "packages": {},
    }
    for name, pkg in ws.packages.items():
        try:
            installed = metadata.version(pkg.distribution)
        except metadata.PackageNotFoundError:
            installed = None
        state = git_state(pkg)
        out["packages"][name] = {
            "location": pkg.location,
            "distribution": pkg.distribution,
            "version": pkg.version,
            "installed_version": installed,
            "pinned_commit": pkg.commit,
            "commit": state["commit"],
            "dirty": state["dirty"],
            "at_pin": (state["commit"] == pkg.commit) if pkg.commit else None,
        }
    return out


# ================================================================================== freeze
def cmd_freeze(ws: Workspace, names: list[str]) -> int:
    unknown = [n for n in names if n not in ws.packages]
    if unknown:
        print(f"freeze: unknown package(s) {', '.join(unknown)}; "
              f"valid: {', '.join(ws.packages)}", file=sys.stderr)
        return 2
    text = ws.manifest_path.read_text()
    for name in names or list(ws.packages):
        pkg = ws.packages[name]
        state = git_state(pkg)
        if not state["commit"]:
            print(f"freeze: {name}: no git commit for {_rel(ws, pkg.source)}", file=sys.stderr)
            return 1
        text = _set_commit(text, name, state["commit"])
        flag = " (uncommitted changes: commit them and freeze again)" if state["dirty"] else ""
        print(f"{name}: {state['commit'][:12]}{flag}")
    ws.manifest_path.write_text(text)
    return 0


def _set_commit(text: str, name: str, commit: str) -> str:
    """``text`` with ``commit = "<commit>"`` in table ``[packages.<name>]`` (added if absent)."""
    header = re.search(rf"^\[packages\.{re.escape(name)}\][ \t]*$", text, re.M)
    if header is None:
        raise ManifestError(f"no [packages.{name}] table header in the manifest")
    start = header.end()
    nxt = re.search(r"^\[", text[start:], re.M)
    end = start + nxt.start() if nxt else len(text)
    block = text[start:end]
    line = f'commit = "{commit}"'
    if re.search(r"^commit\s*=.*$", block, re.M):
        block = re.sub(r"^commit\s*=.*$", line, block, count=1, flags=re.M)
    else:
        block = "\n" + line + block
    return text[:start] + block + text[end:]


# ================================================================================== main
def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="workspace.py", description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--manifest", type=Path, default=MANIFEST, help="workspace.toml to use")
    parser.add_argument("--venv", type=Path, default=None,
                        help="environment folder (default: .venv next to the manifest)")
    sub = parser.add_subparsers(dest="verb", required=True, metavar="{sync,verify,freeze}")
    s = sub.add_parser("sync", help="check out the pins, create or update the venv, verify")
    s.add_argument("--force", action="store_true",
                   help="reinstall even if nothing changed; discard uncommitted changes in "
                        "checkouts of git packages that are not at their pin")
    s.add_argument("--no-constraints", action="store_true",
                   help="do not apply the manifest's constraints file")
    s.add_argument("--system-site-packages", action="store_true",
                   help="let a new venv see the interpreter's packages (e.g. a CUDA torch)")
    s.add_argument("--no-deps", action="store_true",
                   help="install the packages only (the environment already has their deps)")
    s.add_argument("--no-build-isolation", action="store_true",
                   help="build with the environment's setuptools (offline)")
    v = sub.add_parser("verify", help="check the venv and the trees against the manifest")
    v.add_argument("--clean", action="store_true", help="uncommitted changes are a problem")
    f = sub.add_parser("freeze", help="write current commits into the manifest")
    f.add_argument("names", nargs="*", help="packages to freeze (default: all)")
    inside = sub.add_parser("_verify_inside")
    inside.add_argument("--clean", action="store_true")
    args = parser.parse_args(argv)
    verb = args.verb.strip("_")
    try:
        ws = load_manifest(args.manifest)
    except FileNotFoundError:
        print(f"{verb}: no manifest at {args.manifest}", file=sys.stderr)
        return 2
    except ManifestError as exc:
        print(f"{verb}: {exc}", file=sys.stderr)
        return 2
    venv_dir = (args.venv or ws.root / ".venv").resolve()
    if args.verb == "sync":
        return cmd_sync(ws, venv_dir, args)
    if args.verb == "verify":
        return _run_verify_in_venv(ws, venv_dir, clean=args.clean)
    if args.verb == "freeze":
        return cmd_freeze(ws, args.names)
    return _verify_inside(ws, clean=args.clean)


if __name__ == "__main__":
    sys.exit(main())
