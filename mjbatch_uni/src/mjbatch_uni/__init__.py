"""mjbatch_uni: a CPU batch executor for MuJoCo.

Steps ``nworld`` worlds of one :class:`mujoco.MjModel` on a persistent thread pool with the GIL
released, built on MuJoCo's official batch stepper (:mod:`mujoco.batch`, MuJoCo >= 3.17). See
:class:`Batch`.
"""

from mjbatch_uni.batch import (
    DIVERGENCE_WARNINGS,
    Batch,
    SimulationError,
    add_cfrc_ext_trigger,
    computes_cfrc_ext,
    setconst_inputs,
)

__version__ = "0.1.0"

__all__ = [
    "DIVERGENCE_WARNINGS",
    "Batch",
    "SimulationError",
    "add_cfrc_ext_trigger",
    "computes_cfrc_ext",
    "setconst_inputs",
    "__version__",
]
