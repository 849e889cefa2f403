"""The backend registry behind :func:`unisim.get_backend` (private; use the façade)."""

from __future__ import annotations

from unisim import hookspecs
from unisim._plugins import PluginError, PluginRegistry, Registration
from unisim.contract import CONTRACT_VERSION, SimBackend


def _validate(name: str, item: object, meta: dict, distribution: str) -> None:
    if not (isinstance(item, type) and issubclass(item, SimBackend)):
        raise PluginError(f"backend {name!r} from {distribution} is not a unisim.SimBackend subclass")
    version = meta.get("contract_version")
    if version is None:
        raise PluginError(
            f"backend {name!r} from {distribution} does not declare contract_version; "
            f"this unisim implements contract {CONTRACT_VERSION}"
        )
    if version != CONTRACT_VERSION:
        raise PluginError(
            f"backend {name!r} from {distribution} implements unisim contract {version}, "
            f"but the installed unisim provides contract {CONTRACT_VERSION}; install a version of "
            f"{distribution} built for contract {CONTRACT_VERSION}"
        )


BACKENDS: PluginRegistry[type[SimBackend]] = PluginRegistry(
    "unisim", hookspecs, "unisim_register_backends", "backend", _validate
)


def get_backend(name: str) -> Registration[type[SimBackend]]:
    """The registered backend called ``name``.

    Raises:
        KeyError: unknown backend; the message lists the installed ones.
    """
    return BACKENDS.get(name)


def list_backends() -> list[Registration[type[SimBackend]]]:
    """Every registered backend with its distribution and version, sorted by name."""
    return BACKENDS.registrations()
