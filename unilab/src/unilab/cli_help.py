"""Help screens that read cleanly: the command and group classes of every ``unilab`` command.

Typer 0.29's help has three artefacts: a type column beside each parameter (``<bool>``,
``<str>``, ``<int>``: ``TyperOption.display_type_rich`` returns the type unless a metavar is set,
and ``TyperArgument`` always returns it), required arguments in braces in the usage line
(``TyperArgument._usage_display_name`` writes ``{run}``), and the source line breaks of a
docstring kept inside a paragraph (rich markup mode keeps single newlines in the command list
and in every paragraph after the first), so a description breaks mid-sentence.

:class:`HelpCommand` and :class:`HelpGroup` fix all three where Typer reads them: a flag shows no
type, a value option the upper-case name of its long form (``--num-envs NUM_ENVS``), an argument its
upper-case name (usage: ``unilab play [OPTIONS] RUN [OVERRIDES]...``), and each paragraph of a
help text is one line that the terminal wraps. Parsing is unchanged. Every command of
:mod:`unilab.cli` and :mod:`unilab.motion.cli` uses them (``unilab/tests/test_cli_help.py``
checks each help screen).
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption


def reflow(text: str | None) -> str | None:
    """``text`` with the line breaks inside each paragraph replaced by spaces; paragraphs (split
    at blank lines) and a ``\\f`` cut-off are kept. None stays None."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(p.split()) if not p.startswith("\b") else p for p in paragraphs)


class _Argument(TyperArgument):
    """A positional argument shown by its upper-case name, with no type column."""

    @property
    def display_name_raw(self) -> str:
        return self.metavar if self.metavar is not None else (self.name or "").upper()

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + "..." if self.nargs != 1 else name


class _Option(TyperOption):
    """A flag shown bare; a value option followed by its metavar (default: its upper-case name)."""

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag or self.count:
            return None
        if self.metavar is not None:
            return self.metavar
        longs = [opt for opt in self.opts if opt.startswith("--")]
        return (longs[0][2:] if longs else self.name or "value").replace("-", "_").upper()


def _clean_params(params: list[Any]) -> None:
    """Give Typer's parameters the display classes above, in place (same state, same parsing)."""
    for param in params:
        if type(param) is TyperArgument:
            param.__class__ = _Argument
        elif type(param) is TyperOption:
            param.__class__ = _Option
        if getattr(param, "help", None):
            param.help = reflow(param.help)


class _CleanHelp:
    """The help of a command or group, cleaned (module docstring): descriptions reflowed, the
    parameters' metavars set. Mixed in before the Typer class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help = reflow(self.help)
        self.short_help = reflow(self.short_help)

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        _clean_params(params)
        return params


class HelpCommand(_CleanHelp, TyperCommand):
    """A ``unilab`` command whose help reads cleanly (module docstring)."""


class HelpGroup(_CleanHelp, TyperGroup):
    """A ``unilab`` command group whose help reads cleanly (module docstring).

    As the top-level command it also turns click's usage errors (a missing argument, an option
    value of the wrong type, an unknown command or option) into one ``error:`` line on stderr
    that names the command's ``--help``, exit code 2, instead of click's usage block and Typer's
    boxed message. A group called without a command still prints its help.
    """

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, **extra)
        except Exception as exc:  # click's classes, matched by name: typer >= 0.20 vendors click
            kinds = {cls.__name__ for cls in type(exc).__mro__}
            if "NoArgsIsHelpError" in kinds:
                typer.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message())
            elif "ClickException" in kinds:
                ctx = getattr(exc, "ctx", None)
                where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
                typer.echo(f"error: {' '.join(exc.format_message().split())}{where}", err=True)
            elif "Abort" in kinds:
                typer.echo("Aborted!", err=True)
                sys.exit(1)
            else:
                raise
            sys.exit(exc.exit_code)
        sys.exit(rv if isinstance(rv, int) else 0)  # an Exit's code, else success


__all__ = ["HelpCommand", "HelpGroup", "reflow"]
