"""``unilab eval``: judge a policy the way its users do.

The deterministic policy (mean action) of a checkpoint or an exported ``policy.onnx`` runs a
task's evaluation suite with the task's evaluation settings: held velocity commands for walking
(:mod:`unilab.eval.walking`), every clip of the motion set for tracking
(:mod:`unilab.eval.tracking`). Tasks declare their suites in
:attr:`unilab.tasks.spec.TaskSpec.eval_suites` (:mod:`unilab.eval.suite`).

- :mod:`unilab.eval.suite`: the suite interface and its result.
- :mod:`unilab.eval.policy`: the policy from a checkpoint or an ONNX file, checked against the run.
- :mod:`unilab.eval.runner`: ``unilab eval`` and the reusable :class:`EvalSession`.
- :mod:`unilab.eval.report`: table, JSON record, ``run_summary.json`` entry.
- :mod:`unilab.eval.training`: the suite during training, in a background process.

What every figure means: docs/eval.md. This ``__init__`` imports nothing heavy.
"""
