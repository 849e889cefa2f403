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
from typing import Any

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
    """A ``unilab`` command group whose help reads cleanly (module docstring)."""


__all__ = ["HelpCommand", "HelpGroup", "reflow"]
