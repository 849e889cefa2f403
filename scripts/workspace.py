#!/usr/bin/env python3
"""UniLab workspace tool (standard library only): sync, verify, freeze.

    python3 scripts/workspace.py sync      # create/update .venv, install the four packages, verify
    python3 scripts/workspace.py verify    # check .venv against workspace.toml; exit 1 on a problem
    python3 scripts/workspace.py freeze    # record each package's current git commit in workspace.toml

`sync` installs the four packages of ``workspace.toml`` in editable mode in one pip call, with the
pins of ``scripts/constraints.txt`` (torch 2.13.0 CPU on the development machines), then runs
``verify``. A second `sync` with nothing changed skips pip and only verifies (a few seconds).

`verify` checks, one line per problem: each distribution is installed at the manifest's version,
from the workspace path (not a same-named package from an index); its entry points exist; the
contract versions required are provided; every built-in plugin loads in strict mode.

Requires Python >= 3.11 (tomllib).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "workspace.toml"
VENV = ROOT / ".venv"
STAMP = VENV / ".unilab-sync-stamp"


def _load_manifest() -> dict:
    import tomllib

    with MANIFEST.open("rb") as f:
        return tomllib.load(f)


def _venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _inputs_digest(manifest: dict, constraints: Path | None) -> str:
    """Hash of everything that decides what pip installs."""
    h = hashlib.sha256()
    h.update(MANIFEST.read_bytes())
    if constraints is not None:
        h.update(constraints.read_bytes())
    for pkg in manifest["packages"].values():
        h.update((ROOT / pkg["path"] / "pyproject.toml").read_bytes())
    h.update(sys.version.encode())
    return h.hexdigest()


def cmd_sync(args: argparse.Namespace) -> int:
    manifest = _load_manifest()
    constraints = None
    if not args.no_constraints:
        constraints = ROOT / manifest["workspace"]["constraints"]
    if not _venv_python().exists():
        print(f"creating {VENV.relative_to(ROOT)} with {sys.executable}", flush=True)
        venv.EnvBuilder(with_pip=True, system_site_packages=args.system_site_packages).create(VENV)
    digest = _inputs_digest(manifest, constraints)
    if STAMP.exists() and STAMP.read_text() == digest and not args.force:
        print("workspace up to date: skipping pip (use --force to reinstall)", flush=True)
    else:
        pip = [str(_venv_python()), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
        if constraints is not None:
            pip += ["-c", str(constraints)]
        for name, pkg in manifest["packages"].items():
            extra = "[test]"
            pip += ["-e", f"{ROOT / pkg['path']}{extra}"]
        print("installing:", ", ".join(manifest["packages"]), flush=True)
        result = subprocess.run(pip, cwd=ROOT)
        if result.returncode != 0:
            print("sync: pip install failed (see above)", file=sys.stderr)
            return result.returncode
        STAMP.write_text(digest)
    return _run_verify_in_venv(strict_plugins=True)


def _run_verify_in_venv(strict_plugins: bool) -> int:
    if not _venv_python().exists():
        print(f"verify: no environment at {VENV}; run `python3 scripts/workspace.py sync`")
        return 1
    env = dict(os.environ)
    if strict_plugins:
        env["UNILAB_STRICT_PLUGINS"] = "1"
    return subprocess.run(
        [str(_venv_python()), str(Path(__file__).resolve()), "_verify_inside"], env=env, cwd=ROOT
    ).returncode


def cmd_verify(args: argparse.Namespace) -> int:
    return _run_verify_in_venv(strict_plugins=True)


def _git(*argv: str, cwd: Path = ROOT) -> str | None:
    try:
        out = subprocess.run(
            ["git", *argv], cwd=cwd, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return out


def package_git_state(path: Path) -> dict:
    """Commit of the last change to ``path`` and whether its tree has uncommitted changes."""
    commit = _git("log", "-1", "--format=%H", "--", str(path))
    status = _git("status", "--porcelain", "--", str(path))
    return {"commit": commit or "", "dirty": bool(status)}


def cmd_freeze(args: argparse.Namespace) -> int:
    manifest = _load_manifest()
    text = MANIFEST.read_text()
    for name, pkg in manifest["packages"].items():
        state = package_git_state(ROOT / pkg["path"])
        if not state["commit"]:
            print(f"freeze: {name}: no git commit touches {pkg['path']}")
            return 1
        section = f"[packages.{name}]"
        start = text.index(section)
        end = text.find("\n[", start + 1)
        end = len(text) if end == -1 else end
        block = text[start:end]
        lines = [
            f'commit = "{state["commit"]}"' if ln.startswith("commit =") else ln
            for ln in block.splitlines()
        ]
        text = text[:start] + "\n".join(lines) + text[end:]
        flag = " (dirty tree: commit first)" if state["dirty"] else ""
        print(f"{name}: {state['commit'][:12]}{flag}")
    MANIFEST.write_text(text)
    return 0


def _verify_inside() -> int:
    """Runs inside .venv: compare the installed environment with the manifest."""
    from importlib import metadata

    manifest = _load_manifest()
    problems: list[str] = []
    provided: dict[str, int] = {}
    for name, pkg in manifest["packages"].items():
        dist_name = pkg["distribution"]
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            problems.append(f"{name}: distribution {dist_name!r} is not installed")
            continue
        if dist.version != pkg["version"]:
            problems.append(
                f"{name}: installed {dist_name} {dist.version} but workspace.toml pins "
                f"{pkg['version']} (update the manifest or the package's pyproject.toml)"
            )
        direct = dist.read_text("direct_url.json")
        origin = json.loads(direct).get("url", "") if direct else ""
        expected = (ROOT / pkg["path"]).resolve().as_uri()
        if origin.rstrip("/") != expected:
            problems.append(
                f"{name}: {dist_name} is installed from {origin or 'an index'}, "
                f"not from the workspace path {pkg['path']}"
            )
        eps = {f"{ep.group}:{ep.name}" for ep in dist.entry_points}
        for ep in pkg.get("entry_points", []):
            if ep not in eps:
                problems.append(f"{name}: entry point {ep!r} missing from {dist_name}")
        commit = pkg.get("commit", "")
        if commit:
            state = package_git_state(ROOT / pkg["path"])
            if state["commit"] and state["commit"] != commit:
                problems.append(
                    f"{name}: pinned at commit {commit[:12]} but the tree is at "
                    f"{state['commit'][:12]} (run `scripts/workspace.py freeze`)"
                )
        for key, value in pkg.get("provides", {}).items():
            provided[key] = value
    for name, pkg in manifest["packages"].items():
        for key, value in pkg.get("requires", {}).items():
            if provided.get(key) != value:
                problems.append(
                    f"{name}: requires {key} {value} but the workspace provides "
                    f"{provided.get(key, 'none')}"
                )
    if not problems:
        problems += _check_plugins(provided)
    for p in problems:
        print(f"verify: {p}")
    if problems:
        return 1
    print(f"verify: ok ({len(manifest['packages'])} packages, plugins loaded strictly)")
    return 0


def _check_plugins(provided: dict[str, int]) -> list[str]:
    problems = []
    try:
        import unisim
        from unilab.plugins import all_registries

        if provided.get("unisim_contract") != unisim.CONTRACT_VERSION:
            problems.append(
                f"unisim: CONTRACT_VERSION is {unisim.CONTRACT_VERSION} but workspace.toml "
                f"says unisim provides {provided.get('unisim_contract')}"
            )
        for registry in all_registries():
            registry.load()
            for failure in registry.failures:
                problems.append(str(failure))
    except Exception as exc:  # noqa: BLE001 - report any plugin failure as one line
        problems.append(f"plugins: {type(exc).__name__}: {exc}")
    return problems


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_verify_inside"]:
        return _verify_inside()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    s = sub.add_parser("sync", help="create or update .venv at the pins, then verify")
    s.add_argument("--force", action="store_true", help="reinstall even if nothing changed")
    s.add_argument(
        "--no-constraints", action="store_true", help="do not apply scripts/constraints.txt"
    )
    s.add_argument(
        "--system-site-packages",
        action="store_true",
        help="let .venv see the interpreter's packages (e.g. a preinstalled CUDA torch)",
    )
    sub.add_parser("verify", help="check .venv against workspace.toml")
    sub.add_parser("freeze", help="write each package's current commit into workspace.toml")
    args = parser.parse_args(argv)
    return {"sync": cmd_sync, "verify": cmd_verify, "freeze": cmd_freeze}[args.verb](args)


if __name__ == "__main__":
    sys.exit(main())
