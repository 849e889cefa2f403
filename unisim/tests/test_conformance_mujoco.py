"""unisim.testing: the conformance suite passes on the built-in mujoco backend and catches
backends that break the contract (each broken double fails exactly the check that covers it)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from unisim import CapabilityError
from unisim.backends.mujoco import MujocoBackend
from unisim.testing import CHECKS, conformance_spec, conformance_tests, run_conformance


@pytest.mark.parametrize("check", conformance_tests(MujocoBackend))
def test_mujoco_backend_conforms(check):
    check()


def test_mujoco_backend_conforms_with_two_threads():
    results = run_conformance(MujocoBackend, nthread=2, checks=["step", "determinism"])
    assert [r.status for r in results] == ["passed", "passed"], results


# ---------------------------------------------------------------- broken doubles
class ClaimsNoRandomization(MujocoBackend):
    """Declares no randomization but still changes model fields: not fail-closed."""

    capabilities = dataclasses.replace(MujocoBackend.capabilities, randomization=False)


class Float64State(MujocoBackend):
    @property
    def qpos(self):
        return super().qpos.double()


class NoisyButDeterministic(MujocoBackend):
    def step(self, ctrl, nstep=None):
        super().step(ctrl + 1e-3 * torch.randn_like(ctrl), nstep)


class ResetsEveryRow(MujocoBackend):
    def reset(self, env_ids, qpos=None, qvel=None):
        if qpos is None and qvel is None:
            env_ids = torch.arange(self.num_envs)
        super().reset(env_ids, qpos, qvel)


class QuatXyzw(MujocoBackend):
    def body_state(self):
        pos, quat, lin, ang = super().body_state()
        return pos, quat[..., [1, 2, 3, 0]], lin, ang


class NoSelectedReset(MujocoBackend):
    """Declares no selected reset; a partial reset must then be refused."""

    capabilities = dataclasses.replace(MujocoBackend.capabilities, selected_reset=False)

    def reset(self, env_ids, qpos=None, qvel=None):
        if len(env_ids) != self.num_envs:
            raise CapabilityError("this backend resets all rows at once")
        super().reset(env_ids, qpos, qvel)


@pytest.mark.parametrize(
    "backend_cls, failing, message",
    [
        (ClaimsNoRandomization, "randomization",
         "set_model_field() by a backend that does not declare randomization must raise "
         "CapabilityError, but it returned normally"),
        (Float64State, "tensors", "qpos after construction has dtype torch.float64, expected "
                                  "torch.float32"),
        (NoisyButDeterministic, "determinism",
         "capabilities.deterministic is True but a second identical run gives a different qpos"),
        (ResetsEveryRow, "selected_reset", "reset([0, 2]) changed qpos of rows [1]"),
        (QuatXyzw, "initial_state", "body_state quat (wxyz) differs from plain MuJoCo"),
    ],
    ids=["randomization", "dtype", "determinism", "selected_reset", "quat_order"],
)
def test_suite_catches_a_broken_backend(backend_cls, failing, message):
    result = {r.name: r for r in run_conformance(backend_cls, checks=[failing])}[failing]
    assert result.status == "failed", result
    assert message in result.message, result.message
    assert result.message.startswith(f"{failing}: ")


def test_backend_without_selected_reset_passes_by_refusing_partial_resets():
    results = run_conformance(NoSelectedReset, checks=["selected_reset", "reset_with_state"])
    assert [r.status for r in results] == ["passed", "passed"], results


def test_checks_are_named_and_spec_is_checked():
    ids = [p.id for p in conformance_tests(MujocoBackend)]
    assert ids == list(CHECKS)
    with pytest.raises(ValueError, match="unknown conformance check.*'stepp'"):
        conformance_tests(MujocoBackend, checks=["stepp"])
    with pytest.raises(ValueError, match="num_envs must be >= 3"):
        conformance_spec(num_envs=2)
