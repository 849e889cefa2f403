"""Registers ``mjstep`` through the ``unisim`` entry-point group (see pyproject.toml)."""

from unisim import CONTRACT_VERSION
from unisim.hookspecs import hookimpl


@hookimpl
def unisim_register_backends(register):
    from unisim_mjstep.backend import MjStepBackend

    register(
        "mjstep",
        MjStepBackend,
        contract_version=CONTRACT_VERSION,
        description="MuJoCo, one world at a time with mj_step (slow reference)",
    )
