"""Entry-point plugin loading: lazy, once, each plugin isolated. The one plugin loader of UniLab.

Each plugin is a module named by an entry point in a group. It is imported on first use of the
registry, and its hook implementation is called with a ``register`` callable. A plugin that fails to
import or to register (an exception, or ``sys.exit()`` at import) is recorded in
:attr:`PluginRegistry.failures` with its distribution, version and error; with
``UNILAB_STRICT_PLUGINS=1`` the failure is raised instead.

unisim's backend registry (:data:`unisim.registry.BACKENDS`) is built on it, and unilab builds its
algorithm and task registries on it (``unilab.plugins``). unilab_rl needs no registry of its own: it
defines the algorithm hook (:mod:`unilab_rl.hookspecs`) and what a plugin registers
(:class:`unilab_rl.registry.AlgorithmSpec`), and the application that loads algorithms (unilab)
owns the registry. So the loader lives in one place and no dependency points from unilab_rl to unisim.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field
from importlib import metadata
from types import ModuleType
from typing import Any, Callable, Generic, TypeVar

import pluggy

T = TypeVar("T")

_ISOLATED = (Exception, SystemExit)
"""What a plugin may raise while it loads without taking the process down: any error, and
``SystemExit`` (a plugin module that calls ``sys.exit()`` at import). ``KeyboardInterrupt`` still
stops the process."""

STRICT_ENV = "UNILAB_STRICT_PLUGINS"


class PluginError(RuntimeError):
    """A plugin failed to load or registered something invalid."""


class DuplicatePluginError(PluginError, KeyError):
    """A name registered by two distributions; looking it up is refused (a ``KeyError`` too, so
    callers that turn unknown names into one-line errors handle it the same way)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


@dataclass(frozen=True)
class PluginFailure:
    """One plugin that could not be loaded: where it came from and why.

    Attributes:
        group: entry-point group, e.g. ``"unisim"``.
        entry_point: entry-point name (or the plugin's name for an in-process plugin).
        distribution: distribution that declared it (``"<unknown>"`` without metadata).
        version: that distribution's version (``"?"`` without metadata).
        error: one line: the exception type and message.
    """

    group: str
    entry_point: str
    distribution: str
    version: str
    error: str

    def __str__(self) -> str:
        return (
            f"plugin {self.entry_point!r} from {self.distribution} {self.version} "
            f"(entry-point group {self.group!r}) failed: {self.error}"
        )


@dataclass(frozen=True)
class Registration(Generic[T]):
    """One registered item (backend, algorithm or task) and the distribution that provided it.

    Attributes:
        name: what users type (``--sim``, ``--algo``, ``--task``).
        item: the registered object (a backend class, an AlgorithmSpec, a TaskSpec).
        distribution, version: where it came from.
        meta: the keyword arguments given to ``register`` (``description``, ``contract_version``).
    """

    name: str
    item: T
    distribution: str
    version: str
    meta: dict = field(default_factory=dict)


def strict_mode() -> bool:
    """True when ``UNILAB_STRICT_PLUGINS`` is set to a true value (1, true, yes, on)."""
    return os.environ.get(STRICT_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


class PluginRegistry(Generic[T]):
    """Name -> item registry filled by the entry points of one group through one pluggy hook.

    Loading is lazy (the first query imports the plugins), happens once per registry, and isolates
    every plugin: one that fails to import, lacks the hook, raises in it or registers something
    invalid is recorded in :attr:`failures` and the others still load. In strict mode
    (``UNILAB_STRICT_PLUGINS=1``, or ``load(strict=True)``) any failure makes the load, and every
    later query, raise :class:`PluginError` listing all failures.

    Args:
        group: entry-point group, e.g. ``"unisim"``.
        hookspecs: module holding the hook specification, its ``hookspec`` marker (whose project
            name pluggy uses) and its ``hookimpl`` marker.
        hook_name: name of the hook each plugin implements, called as ``hook(register=...)``.
        kind: human word for the items ("backend"), used in messages.
        validate: called as ``validate(name, item, meta, distribution)`` on every registration;
            raises :class:`PluginError` to refuse it.
    """

    def __init__(
        self,
        group: str,
        hookspecs: ModuleType,
        hook_name: str,
        kind: str,
        validate: Callable[[str, T, dict, str], None] | None = None,
    ) -> None:
        self.group = group
        self.kind = kind
        self._hookspecs = hookspecs
        self._hook_name = hook_name
        self._validate = validate
        # pluggy's project is the hookspecs' marker name (the group by default)
        marker = getattr(hookspecs, "hookspec", None)
        self._pm = pluggy.PluginManager(getattr(marker, "project_name", group))
        self._pm.add_hookspecs(hookspecs)
        self._items: dict[str, Registration[T]] = {}
        self._duplicates: dict[str, list[Registration[T]]] = {}
        self.failures: list[PluginFailure] = []
        self._loaded = False

    # ------------------------------------------------------------------ loading
    @property
    def loaded(self) -> bool:
        """Whether the entry points have been imported (they are, on the first query)."""
        return self._loaded

    def load(self, strict: bool | None = None) -> None:
        """Import every entry point of the group once and let each register its items.

        Args:
            strict: raise if any plugin failed; ``None`` reads ``UNILAB_STRICT_PLUGINS``.

        Raises:
            PluginError: strict and at least one plugin failed (now or at the first load).
        """
        if not self._loaded:
            self._loaded = True
            for ep in sorted(metadata.entry_points(group=self.group), key=lambda e: e.name):
                dist = ep.dist.metadata["Name"] if ep.dist is not None else "<unknown>"
                version = ep.dist.version if ep.dist is not None else "?"
                try:
                    module = ep.load()
                except _ISOLATED as exc:  # noqa: BLE001 - isolate every plugin
                    self.failures.append(
                        PluginFailure(self.group, ep.name, dist, version, _short(exc))
                    )
                    continue
                self._add_plugin(module, dist, version, ep.name)
        if self.failures and (strict_mode() if strict is None else strict):
            raise PluginError(self._strict_message())

    def add_plugin(
        self, plugin: Any, *, distribution: str, version: str, entry_point: str | None = None
    ) -> None:
        """Register a plugin object (module or instance) and call its hook now.

        Used by :meth:`load` for entry points, and by tests to add an in-process plugin. A failure
        is recorded in :attr:`failures` (and raised in strict mode).
        """
        before = len(self.failures)
        self._add_plugin(plugin, distribution, version, entry_point)
        if len(self.failures) > before and strict_mode():
            raise PluginError(self._strict_message())

    def _add_plugin(
        self, plugin: Any, distribution: str, version: str, entry_point: str | None
    ) -> None:
        name = entry_point or getattr(plugin, "__name__", repr(plugin))
        try:
            self._pm.register(plugin, name=f"{distribution}:{name}")
            impl = getattr(plugin, self._hook_name, None)
            if impl is None:
                raise PluginError(f"it has no {self._hook_name}() hook implementation")
            if not self._pm.get_hookcallers(plugin):
                raise PluginError(
                    f"its {self._hook_name}() is not marked as a hook implementation "
                    f"(decorate it with {self._hookspecs.__name__}.hookimpl)"
                )

            def register(item_name: str, item: T, **meta: Any) -> None:
                self._add(item_name, item, meta, distribution, version)

            impl(register=register)
        except _ISOLATED as exc:  # noqa: BLE001 - isolate every plugin
            error = str(exc) if isinstance(exc, PluginError) else _short(exc)
            self.failures.append(PluginFailure(self.group, name, distribution, version, error))

    def _add(self, name: str, item: T, meta: dict, distribution: str, version: str) -> None:
        if not isinstance(name, str) or not name:
            raise PluginError(f"{self.kind} name must be a non-empty string, got {name!r}")
        if self._validate is not None:
            self._validate(name, item, meta, distribution)
        registration = Registration(name, item, distribution, version, dict(meta))
        if name in self._items:
            other = self._items[name]
            self._duplicates.setdefault(name, [other]).append(registration)
            raise PluginError(
                f"duplicate {self.kind} name {name!r}: registered by {other.distribution} "
                f"{other.version} and by {distribution} {version}"
            )
        self._items[name] = registration

    def _strict_message(self) -> str:
        lines = "; ".join(str(f) for f in self.failures)
        return f"{lines} ({STRICT_ENV}=1 makes a plugin failure fatal)"

    # ------------------------------------------------------------------ queries
    def names(self) -> list[str]:
        """Sorted registered names (a duplicated name included, under its first registration)."""
        self.load()
        return sorted(self._items)

    def registrations(self) -> list[Registration[T]]:
        """Every registration, sorted by name (for a duplicated name, the first one only)."""
        self.load()
        return [self._items[n] for n in sorted(self._items)]

    def get(self, name: str) -> Registration[T]:
        """The registration called ``name``.

        Raises:
            KeyError: unknown name; the message lists the valid choices.
            DuplicatePluginError: (a KeyError) two distributions registered ``name``.
            PluginError: strict mode and a plugin failed to load.
        """
        self.load()
        if name in self._duplicates:
            owners = " and ".join(f"{r.distribution} {r.version}" for r in self._duplicates[name])
            raise DuplicatePluginError(
                f"{self.kind} {name!r} is registered by both {owners}; uninstall one of them"
            )
        try:
            return self._items[name]
        except KeyError:
            choices = ", ".join(sorted(self._items)) or "(none installed)"
            raise KeyError(f"unknown {self.kind} {name!r}; valid choices: {choices}") from None


def _short(exc: BaseException) -> str:
    """``Type: message`` of an exception, on one line."""
    if isinstance(exc, SystemExit):
        return f"SystemExit: it called sys.exit({exc.code!r}) while loading"
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return " ".join(last.split())


__all__ = [
    "DuplicatePluginError",
    "PluginError",
    "PluginFailure",
    "PluginRegistry",
    "Registration",
    "STRICT_ENV",
    "strict_mode",
]
