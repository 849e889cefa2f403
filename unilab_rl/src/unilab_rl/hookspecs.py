"""Hook specifications of unilab_rl: the reference for algorithm plugin authors.

A plugin is a module named by an entry point in the ``unilab_rl`` group::

    [project.entry-points.unilab_rl]
    my_algo = "my_package.unilab_rl_plugin"

The built-in ``sac`` registers through exactly this path (``unilab_rl.algorithms.sac.plugin``).
"""

from __future__ import annotations

from typing import Callable

import pluggy

hookspec = pluggy.HookspecMarker("unilab_rl")
hookimpl = pluggy.HookimplMarker("unilab_rl")


# ---------------------------------------------------------------- registration
@hookspec
def unilab_rl_register_algorithms(register: Callable[..., None]) -> None:
    """Register learning algorithms.

    Called once per process, the first time an algorithm is looked up, for every installed
    plugin, each in isolation.

    :param register: call ``register(name, spec: AlgorithmSpec)`` once per algorithm; ``name``
        is what users pass as ``--algo``. A duplicate name is refused, naming both distributions.
    :returns: nothing (collect-all hook).
    """
