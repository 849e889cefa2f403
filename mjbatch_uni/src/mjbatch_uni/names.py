"""Name suggestions for messages about an unknown name (a field, body, option or config key).

The one such helper of the workspace: unisim and unilab sit on mjbatch_uni and use it too.
``scripts/workspace.py`` keeps a two-line copy because it runs on the standard library alone,
before any of the packages is installed.
"""

from __future__ import annotations

import difflib
from typing import Iterable


def did_you_mean(name: str, choices: Iterable[str], n: int = 3) -> str:
    """A hint naming the choices closest to ``name``: ``" (did you mean 'a', 'b'?)"``, or ``""``.

    Args:
        name: the unknown name as given.
        choices: the valid names.
        n: at most this many suggestions, closest first (difflib's ratio >= 0.6).
    """
    close = difflib.get_close_matches(name, list(choices), n=n)
    return f" (did you mean {', '.join(map(repr, close))}?)" if close else ""


__all__ = ["did_you_mean"]
