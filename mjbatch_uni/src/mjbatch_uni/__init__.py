"""mjbatch_uni: a CPU batch executor for MuJoCo.

Steps ``nworld`` worlds of one :class:`mujoco.MjModel` on a persistent thread pool with the GIL
released, built on MuJoCo's official batch stepper (:mod:`mujoco.batch`, MuJoCo >= 3.17), and
hands what an env reads to the host in one packed float32 buffer (:mod:`mjbatch_uni.pack`).
See :class:`Batch`.
"""

from mjbatch_uni.batch import (
    DATA_FIELDS,
    DEFAULT_OUTPUTS,
    DERIVED_MODES,
    DIVERGENCE_WARNINGS,
    MODEL_FIELDS,
    Batch,
    SimulationError,
    available_cores,
)
from mjbatch_uni.model import (
    BODY_SENSOR_KINDS,
    add_body_sensors,
    add_cfrc_ext_trigger,
    computes_cfrc_ext,
    setconst_inputs,
)
from mjbatch_uni.names import did_you_mean
from mjbatch_uni.pack import PackLayout, Packed

__version__ = "0.1.0"

__all__ = [
    "BODY_SENSOR_KINDS",
    "DATA_FIELDS",
    "DEFAULT_OUTPUTS",
    "DERIVED_MODES",
    "DIVERGENCE_WARNINGS",
    "MODEL_FIELDS",
    "Batch",
    "PackLayout",
    "Packed",
    "SimulationError",
    "add_body_sensors",
    "add_cfrc_ext_trigger",
    "available_cores",
    "did_you_mean",
    "computes_cfrc_ext",
    "setconst_inputs",
    "__version__",
]
