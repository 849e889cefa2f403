"""The backend registry: :data:`BACKENDS`, behind :func:`unisim.get_backend`.

Every registration is checked against the contract this unisim implements before it is accepted,
so that a backend built for another contract is refused when plugins load (``unilab plugins``,
``scripts/workspace.py verify``), not at the first reset of a training run:

- the item is a :class:`~unisim.contract.SimBackend` subclass with :class:`Capabilities`;
- the registration declares ``contract_version`` equal to :data:`unisim.CONTRACT_VERSION` (and the
  class's own ``contract_version`` attribute, if it sets one, agrees);
- no abstract method of the contract is left unimplemented;
- every contract method the backend overrides accepts the contract's arguments
  (:func:`contract_problems`).
"""

from __future__ import annotations

import inspect

from unisim import hookspecs
from unisim.plugins import PluginError, PluginRegistry, Registration
from unisim.contract import CONTRACT_VERSION, Capabilities, SimBackend

# Public methods and properties of the contract, checked on every backend class.
CONTRACT_METHODS = (
    "step",
    "reset",
    "set_state",
    "sensor",
    "body_state",
    "contact_force",
    "diverged",
    "set_model_field",
    "model_field",
    "close",
)
CONTRACT_PROPERTIES = ("qpos", "qvel")


def contract_problems(cls: type) -> list[str]:
    """What keeps ``cls`` from implementing this unisim's contract, one sentence each.

    Args:
        cls: a class registered as a backend.

    Returns:
        An empty list when ``cls`` is a complete :class:`SimBackend` whose overridden methods
        accept the contract's arguments (by position and by keyword); else one problem per entry,
        e.g. ``"reset(self, env_ids) does not accept the contract's reset(self, env_ids,
        qpos=None, qvel=None)"``.
    """
    if not (isinstance(cls, type) and issubclass(cls, SimBackend)):
        return [f"{cls!r} is not a unisim.SimBackend subclass"]
    problems = []
    if not isinstance(getattr(cls, "capabilities", None), Capabilities):
        problems.append("its class attribute `capabilities` is not a unisim.Capabilities")
    missing = sorted(getattr(cls, "__abstractmethods__", ()))
    if missing:
        problems.append(f"it does not implement {', '.join(missing)}")
    for name in CONTRACT_PROPERTIES:
        if name not in missing and not isinstance(inspect.getattr_static(cls, name), property):
            problems.append(f"{name} must be a property")
    for name in CONTRACT_METHODS:
        impl, base = getattr(cls, name, None), getattr(SimBackend, name)
        if impl is base or name in missing:
            continue
        if not callable(impl):
            problems.append(f"{name} is not a method")
            continue
        expected = inspect.signature(base)
        try:
            actual = inspect.signature(impl)
        except (TypeError, ValueError):  # builtins without a signature: accept
            continue
        if not _accepts(actual, expected):
            problems.append(
                f"{name}{_plain(actual)} does not accept the contract's {name}{_plain(expected)}"
            )
    return problems


def _accepts(actual: inspect.Signature, expected: inspect.Signature) -> bool:
    """Whether every call the contract allows (all arguments by position, by keyword, and only
    the required ones) binds to ``actual``."""
    params = list(expected.parameters.values())
    required = [p for p in params if p.default is inspect.Parameter.empty]
    calls = [
        ([None] * len(params), {}),
        ([None], {p.name: None for p in params[1:]}),
        ([None] * len(required), {}),
    ]
    for args, kwargs in calls:
        try:
            actual.bind(*args, **kwargs)
        except TypeError:
            return False
    return True


def _plain(sig: inspect.Signature) -> str:
    """``(self, env_ids, qpos=None)``: a signature without annotations."""
    parts = []
    for p in sig.parameters.values():
        text = ("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else "")
        text += p.name
        if p.default is not inspect.Parameter.empty:
            text += f"={p.default!r}"
        parts.append(text)
    return f"({', '.join(parts)})"


def _validate(name: str, item: object, meta: dict, distribution: str) -> None:
    if not (isinstance(item, type) and issubclass(item, SimBackend)):
        raise PluginError(
            f"backend {name!r} from {distribution} is {item!r}, not a unisim.SimBackend subclass"
        )
    version = meta.get("contract_version")
    if version is None:
        raise PluginError(
            f"backend {name!r} from {distribution} does not declare contract_version; pass "
            f"register({name!r}, {item.__name__}, contract_version={CONTRACT_VERSION}) for the "
            f"contract this unisim implements ({CONTRACT_VERSION})"
        )
    if version != CONTRACT_VERSION:
        raise PluginError(
            f"backend {name!r} from {distribution} implements unisim contract {version}, "
            f"but the installed unisim provides contract {CONTRACT_VERSION}; install a version of "
            f"{distribution} built for contract {CONTRACT_VERSION}"
        )
    declared = item.__dict__.get("contract_version")
    if declared is not None and declared != version:
        raise PluginError(
            f"backend {name!r} from {distribution}: {item.__name__}.contract_version is "
            f"{declared} but it is registered with contract_version={version}"
        )
    problems = contract_problems(item)
    if problems:
        raise PluginError(
            f"backend {name!r} ({item.__module__}.{item.__qualname__}) from {distribution} does "
            f"not implement unisim contract {CONTRACT_VERSION}: {'; '.join(problems)}"
        )


BACKENDS: PluginRegistry[type[SimBackend]] = PluginRegistry(
    "unisim", hookspecs, "unisim_register_backends", "backend", _validate
)


def get_backend(name: str) -> Registration[type[SimBackend]]:
    """The registered backend called ``name``.

    Raises:
        KeyError: unknown backend; the message lists the installed ones.
        PluginError: strict mode (``UNILAB_STRICT_PLUGINS=1``) and a backend plugin failed.
    """
    return BACKENDS.get(name)


def list_backends() -> list[Registration[type[SimBackend]]]:
    """Every registered backend with its distribution and version, sorted by name."""
    return BACKENDS.registrations()
