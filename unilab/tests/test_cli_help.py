"""Every `unilab` help screen reads cleanly: no type column (`<bool>`, `<str>`, `<int>`), no braces
around arguments in the usage line, and each command's description on one line of its group's
listing (no break mid-sentence)."""

from __future__ import annotations

import re

import pytest
import typer.main
from typer.testing import CliRunner

from unilab.cli import app
from unilab.cli_help import reflow

TYPE_COLUMN = re.compile(r"<(bool|str|int|float|path|list\[[^\]]*\])>")


def _commands(command, path=()):
    """(path, click command) of every command and group under ``command``, itself included."""
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


ROOT = typer.main.get_command(app)
ALL = list(_commands(ROOT))


def _help(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], prog_name="unilab",
                                env={"COLUMNS": "300", "TERMINAL_WIDTH": "300"})
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_is_listed():
    names = {" ".join(path) for path, _ in ALL}
    assert {"train", "play", "export", "eval", "config", "plugins", "motion import", "motion inspect",
            "motion record"} <= names


@pytest.mark.parametrize("path", [path for path, _ in ALL], ids=lambda p: " ".join(p) or "unilab")
def test_help_has_no_typer_artefacts(path):
    text = _help(path)
    assert not TYPE_COLUMN.search(text), text
    assert "{" not in text and "}" not in text, text
    usage = next(line for line in text.splitlines() if "Usage:" in line).split()
    assert usage[:2 + len(path)] == ["Usage:", "unilab", *path], usage
    for word in usage[2 + len(path):]:  # [OPTIONS], then arguments by upper-case name
        assert word.strip("[].").isupper(), usage


@pytest.mark.parametrize("path", [path for path, cmd in ALL if getattr(cmd, "commands", None)],
                         ids=lambda p: " ".join(p) or "unilab")
def test_group_lists_each_description_on_one_line(path):
    text = _help(path)
    group = ROOT
    for name in path:
        group = group.commands[name]
    for name, sub in group.commands.items():
        first = reflow(sub.help).split("\n\n")[0]
        line = next((ln for ln in text.splitlines() if f" {name} " in ln), "")
        assert first in line, f"{name}: {first!r} not on one line of\n{text}"


def test_flags_show_no_value_and_options_their_name():
    text = _help(("play",))
    flag = next(line for line in text.splitlines() if "--no-video" in line)
    assert "NO_VIDEO" not in flag and "roll out and report" in flag
    assert re.search(r"--num-envs\s+NUM_ENVS\s", text)
    assert "Usage: unilab play [OPTIONS] RUN [OVERRIDES]..." in text


def test_the_plugins_command_is_described_with_every_kind_it_lists():
    from unilab.plugins import all_registries

    listing = _help(())
    row = next(ln for ln in listing.splitlines() if " plugins " in ln)
    kinds = [r.kind for r in all_registries()]
    assert kinds == ["backend", "algorithm", "task", "robot"]
    assert all(k in row for k in kinds), row  # robots were left out
