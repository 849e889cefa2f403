"""Registers the built-in ``mujoco`` backend through the ``unisim`` entry-point group."""

from __future__ import annotations

from unisim.contract import CONTRACT_VERSION
from unisim.hookspecs import hookimpl


@hookimpl
def unisim_register_backends(register):
    """Register ``mujoco``: CPU MuJoCo worlds stepped by mjbatch_uni, host-bridge tensors."""
    from unisim.backends.mujoco import MujocoBackend

    register(
        "mujoco",
        MujocoBackend,
        contract_version=CONTRACT_VERSION,
        description="MuJoCo on CPU threads (mujoco.batch via mjbatch_uni), host-bridge tensors",
    )
