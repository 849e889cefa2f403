"""Hook specifications of unisim: the reference for backend plugin authors.

A plugin is a module named by an entry point in the ``unisim`` group of its distribution::

    [project.entry-points.unisim]
    my_backend = "my_package.unisim_plugin"

The module implements the hook below, decorated with :data:`hookimpl` (an undecorated function is
refused). The built-in ``mujoco`` backend registers through exactly this path
(``unisim.backends.mujoco_plugin``); ``examples/unisim-mjstep`` is a complete third-party example,
and ``docs/plugins.md`` the guide. Check a backend with the conformance suite,
:func:`unisim.testing.conformance_tests`.
"""

from __future__ import annotations

from typing import Callable

import pluggy

hookspec = pluggy.HookspecMarker("unisim")
hookimpl = pluggy.HookimplMarker("unisim")


# ---------------------------------------------------------------- registration
@hookspec
def unisim_register_backends(register: Callable[..., None]) -> None:
    """Register simulator backends.

    Called once per process, the first time any backend is looked up (lazily), for every
    installed plugin, each in isolation: a plugin that raises is reported and skipped.

    :param register: call ``register(name, backend_cls, contract_version=N, description="...")``
        once per backend. ``name`` is what users pass as ``--sim``; ``backend_cls`` is a
        :class:`unisim.SimBackend` subclass constructed as ``backend_cls(spec: SimSpec)``;
        ``contract_version`` is the :data:`unisim.CONTRACT_VERSION` the backend implements.
        The registry refuses, naming the backend and its distribution: a duplicate name (naming
        both distributions), a missing or different contract version, a class that is not a
        complete ``SimBackend`` (an abstract method left) or whose overridden contract methods do
        not accept the contract's arguments (see :func:`unisim.registry.contract_problems`).
    :returns: nothing (collect-all hook; return values are ignored).
    """
