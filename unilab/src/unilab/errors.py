"""The errors the ``unilab`` commands turn into one line for the user."""

from __future__ import annotations


class UserError(Exception):
    """A problem with what the user asked for (a name, key, value or file); the CLI prints it as
    one ``error:`` line with exit code 2, no traceback."""


class RunFailed(Exception):
    """A run stopped by a fault of the machine or of its own (a full disk, say) after its run
    directory existed; ``run_summary.json`` records ``status: failed`` with the same message. The
    CLI prints it as one ``error:`` line with exit code 1.

    Attributes:
        run_dir: the run directory (its summary and last checkpoint describe the stop).
    """

    def __init__(self, message: str, run_dir=None) -> None:
        super().__init__(message)
        self.run_dir = run_dir


__all__ = ["RunFailed", "UserError"]
