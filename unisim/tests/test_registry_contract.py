"""The backend registry refuses what does not implement this unisim's contract, with a line that
names the backend, its distribution and the versions that fit."""

from __future__ import annotations

import types

import pytest

import unisim
from unisim import CONTRACT_VERSION, Capabilities, SimBackend
from unisim.plugins import PluginRegistry
from unisim.registry import BACKENDS, _validate, contract_problems
from unisim.backends.mujoco import MujocoBackend
from unisim.hookspecs import hookimpl


def plugin(name: str, cls: object, **meta) -> types.ModuleType:
    """An in-process plugin module registering ``cls`` as backend ``name``."""
    module = types.ModuleType(f"plugin_{name}")

    @hookimpl
    def unisim_register_backends(register):
        register(name, cls, **meta)

    module.unisim_register_backends = unisim_register_backends
    return module


def registry() -> PluginRegistry:
    reg = PluginRegistry("unisim_test_registry", unisim.hookspecs, "unisim_register_backends",
                         "backend", _validate)
    reg._loaded = True  # no entry points: only the plugins a test adds
    return reg


def failure_of(cls: object, monkeypatch, **meta) -> str:
    monkeypatch.delenv("UNILAB_STRICT_PLUGINS", raising=False)
    reg = registry()
    reg.add_plugin(plugin("thing", cls, **meta), distribution="thing-sim", version="2.0")
    assert reg.names() == []
    assert len(reg.failures) == 1
    return str(reg.failures[0])


class StaleReset(MujocoBackend):
    """Written for an older contract whose reset took no state."""

    def reset(self, env_ids):  # noqa: D102
        super().reset(env_ids)


class Incomplete(SimBackend):
    capabilities = Capabilities(tensor_kind="host_bridge")

    def step(self, ctrl, nstep=None):  # noqa: D102
        pass


def test_builtin_mujoco_backend_is_complete_and_registered():
    assert contract_problems(MujocoBackend) == []
    reg = BACKENDS.get("mujoco")
    assert reg.item is MujocoBackend and reg.distribution == "unisim"
    assert reg.meta["contract_version"] == CONTRACT_VERSION


def test_other_contract_version_is_refused_naming_backend_distribution_and_versions(monkeypatch):
    line = failure_of(MujocoBackend, monkeypatch, contract_version=CONTRACT_VERSION + 1)
    assert f"backend 'thing' from thing-sim implements unisim contract {CONTRACT_VERSION + 1}" in line
    assert f"installed unisim provides contract {CONTRACT_VERSION}" in line
    assert line.startswith("plugin 'plugin_thing' from thing-sim 2.0 (entry-point group")


def test_missing_contract_version_is_refused(monkeypatch):
    line = failure_of(MujocoBackend, monkeypatch)
    assert "does not declare contract_version" in line
    assert f"contract_version={CONTRACT_VERSION}" in line


def test_stale_method_signature_is_refused_at_registration(monkeypatch):
    line = failure_of(StaleReset, monkeypatch, contract_version=CONTRACT_VERSION)
    assert "reset(self, env_ids) does not accept the contract's " \
           "reset(self, env_ids, qpos=None, qvel=None)" in line


def test_abstract_methods_left_are_named(monkeypatch):
    line = failure_of(Incomplete, monkeypatch, contract_version=CONTRACT_VERSION)
    assert "it does not implement body_state, contact_force, qpos, qvel, reset, sensor" in line


def test_not_a_backend_class_is_refused(monkeypatch):
    line = failure_of(object(), monkeypatch, contract_version=CONTRACT_VERSION)
    assert "not a unisim.SimBackend subclass" in line


def test_class_contract_attribute_must_agree_with_registration(monkeypatch):
    Old = type("Old", (MujocoBackend,), {"contract_version": CONTRACT_VERSION - 1})
    line = failure_of(Old, monkeypatch, contract_version=CONTRACT_VERSION)
    assert f"Old.contract_version is {CONTRACT_VERSION - 1}" in line


def test_compatible_override_with_extra_defaulted_arguments_is_accepted(monkeypatch):
    class Extra(MujocoBackend):
        def reset(self, env_ids, qpos=None, qvel=None, *, keyframe=0):  # noqa: D102
            super().reset(env_ids, qpos, qvel)

    assert contract_problems(Extra) == []
    monkeypatch.delenv("UNILAB_STRICT_PLUGINS", raising=False)
    reg = registry()
    reg.add_plugin(plugin("extra", Extra, contract_version=CONTRACT_VERSION),
                   distribution="extra-sim", version="1.0")
    assert reg.get("extra").item is Extra and reg.failures == []
