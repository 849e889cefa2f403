"""The backend conformance suite: what every :class:`unisim.SimBackend` must do, as checks that a
backend author runs against their backend.

With pytest, one test per check::

    import pytest
    from unisim.testing import conformance_tests
    from my_package import MyBackend

    @pytest.mark.parametrize("check", conformance_tests(MyBackend))
    def test_conformance(check):
        check()

Without pytest: ``python -m unisim.testing <registered backend name>`` prints one line per check
and exits 1 on a failure; :func:`run_conformance` returns the results.

The checks (:data:`CHECKS`, in order) build the backend on a small MJCF model
(:data:`CONFORMANCE_MJCF`: a floating torso with a two-joint leg resting on a floor, two position
actuators, three sensors) and compare it with plain MuJoCo (``mujoco.MjData``, which defines what
the contract's quantities mean):

- ``declarations``: ``contract_version`` is this unisim's, ``capabilities`` is a
  :class:`~unisim.Capabilities`, every contract method is implemented with the contract's arguments;
- ``attributes``: num_envs, device (CPU for a host-bridge backend), dt, nq/nv/nu and the joint,
  actuator, sensor and tracked body names match the model;
- ``initial_state``: every world starts at keyframe 0 with kinematics, body poses and sensors
  computed;
- ``tensors``: shapes ``(num_envs, ...)``, ``float32`` (``diverged``: ``bool``) on ``device``;
- ``step``: holds ctrl for ``nstep`` physics steps (default ``decimation``), agrees with MuJoCo
  after one step;
- ``bad_input``: wrong shapes, non-finite ctrl, rows out of range and unknown names raise
  ValueError / IndexError / KeyError, and a refused step changes nothing;
- ``selected_reset``: a reset of some rows resets those only, others bit-identical (a backend that
  does not declare ``selected_reset`` must refuse a partial reset with CapabilityError);
- ``reset_with_state``: reset to a given qpos/qvel; body positions, wxyz quaternions and world-frame
  velocities agree with MuJoCo's (``mj_objectVelocity`` of the body frame, ``mjOBJ_XBODY``);
- ``set_state``: works on the given rows only, or raises CapabilityError;
- ``contact_forces``: world frame, on the named body, pointing up for a body standing on the floor;
- ``randomization``: declared ⇒ ``set_model_field`` changes the given rows only; not declared ⇒
  ``set_model_field`` and ``model_field`` raise CapabilityError (fail closed);
- ``determinism``: declared ⇒ two identical runs (also at another ``nthread``) are bit-identical;
- ``close``: ``diverged()`` is all False on a sane state, ``close()`` is idempotent.

For plugin tests, :func:`write_distribution` writes a fake installed distribution (metadata and
entry points) that :mod:`importlib.metadata` discovers on ``sys.path``, no pip needed.
"""

from __future__ import annotations

from unisim.testing._checks import (
    CHECKS,
    CONFORMANCE_MJCF,
    ConformanceError,
    ConformanceSkip,
    Target,
    conformance_spec,
)
from unisim.testing._dists import write_distribution
from unisim.testing._suite import CheckResult, conformance_tests, run_conformance

__all__ = [
    "CHECKS",
    "CONFORMANCE_MJCF",
    "CheckResult",
    "ConformanceError",
    "ConformanceSkip",
    "Target",
    "conformance_spec",
    "conformance_tests",
    "run_conformance",
    "write_distribution",
]
