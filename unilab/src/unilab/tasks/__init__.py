"""Tasks: what ``--task`` names. Each task folder holds its config, its env builder and its plugin."""

from unilab.tasks.spec import CurriculumState, TaskSpec

__all__ = ["CurriculumState", "TaskSpec"]
