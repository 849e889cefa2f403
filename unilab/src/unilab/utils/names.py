"""Resolve name patterns (regular expressions) to per-name values, mjlab style."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence


def resolve_name_values(patterns: Mapping[str, float], names: Sequence[str]) -> list[float]:
    """One value per name, taken from the single pattern that fully matches it.

    Follows mjlab's ``resolve_matching_names_values`` (``mjlab/utils/lab_api/string.py``): each
    key of ``patterns`` is a regular expression matched with ``re.fullmatch``.

    Args:
        patterns: regex -> value, e.g. ``{r".*knee.*": 0.35, r".*": 0.1}`` is ambiguous for knees
            and therefore an error; write disjoint patterns.
        names: the names to resolve, e.g. the 29 G1 joint names in action order.

    Returns:
        ``len(names)`` floats, in the order of ``names``.

    Raises:
        ValueError: a name matched by no pattern or by more than one, naming it and the patterns.
    """
    compiled = [(p, re.compile(p)) for p in patterns]
    values: list[float] = []
    for name in names:
        hits = [p for p, rx in compiled if rx.fullmatch(name)]
        if len(hits) != 1:
            what = "no pattern" if not hits else f"several patterns {hits}"
            raise ValueError(f"{name!r} matches {what}; patterns: {list(patterns)}")
        values.append(float(patterns[hits[0]]))
    return values


__all__ = ["resolve_name_values"]
