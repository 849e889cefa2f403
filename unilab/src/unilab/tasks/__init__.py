"""Tasks: what ``--task`` names. Each task folder holds its config, its env builder and its plugin."""

from unilab.tasks.spec import TaskSpec

__all__ = ["TaskSpec"]
