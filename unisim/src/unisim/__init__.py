"""unisim: the simulator backend contract (torch tensors in and out) and its adapters.

An env touches a simulator only through :class:`SimBackend`. Backends declare the
:data:`CONTRACT_VERSION` they implement and their :class:`Capabilities`; anything not declared
fails closed with :class:`CapabilityError`. The MuJoCo CPU backend lives in
:mod:`unisim.backends.mujoco`.
"""

from unisim.contract import (
    CONTRACT_VERSION,
    Capabilities,
    CapabilityError,
    SimBackend,
    SimSpec,
)


def get_backend(name: str):
    """The registered backend ``name`` (a :class:`unisim.plugins.Registration`).

    Raises:
        KeyError: unknown backend; the message lists the installed ones.
    """
    from unisim.registry import get_backend as _get

    return _get(name)


def list_backends():
    """Every registered backend with its distribution and version, sorted by name."""
    from unisim.registry import list_backends as _list

    return _list()


__version__ = "0.1.0"

__all__ = [
    "CONTRACT_VERSION",
    "Capabilities",
    "CapabilityError",
    "SimBackend",
    "SimSpec",
    "__version__",
    "get_backend",
    "list_backends",
]
