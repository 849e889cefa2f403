"""UniLab: train humanoid policies with off-policy RL on CPU MuJoCo physics.

The ``unilab`` command (``unilab.cli``) trains, lists plugins and manages runs.
"""

__version__ = "0.1.0"

METRIC_SCHEMA_VERSION = 1
"""Version of the metric names and ``run_summary.json`` fields; see docs/run_summary.md."""
