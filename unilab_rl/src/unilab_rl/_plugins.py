"""Entry-point plugin loading: lazy, once, each plugin isolated.

The same small module lives in unisim (``unisim._plugins``): unilab_rl may not depend on unisim
(dependencies point one way, and unilab_rl trains on any vector env), so each keeps a copy. Keep the
two identical below this docstring.

Each plugin is a module named by an entry point in the package's group. It is imported on first use
of the registry, and its hook implementation is called with a ``register`` callable. A plugin that
fails to import or to register is recorded in :attr:`PluginRegistry.failures` with its distribution,
version and error; with ``UNILAB_STRICT_PLUGINS=1`` the failure is raised instead.
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

STRICT_ENV = "UNILAB_STRICT_PLUGINS"


class PluginError(RuntimeError):
    """A plugin failed to load or registered something invalid."""


@dataclass(frozen=True)
class PluginFailure:
    """One plugin that could not be loaded: where it came from and why."""

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
    """One registered item (backend, algorithm or task) and the distribution that provided it."""

    name: str
    item: T
    distribution: str
    version: str
    meta: dict = field(default_factory=dict)


def strict_mode() -> bool:
    """True when ``UNILAB_STRICT_PLUGINS`` is set to a true value (1, true, yes)."""
    return os.environ.get(STRICT_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


class PluginRegistry(Generic[T]):
    """Name -> item registry filled by the entry points of one group through one pluggy hook.

    Args:
        group: entry-point group and pluggy project name, e.g. ``"unisim"``.
        hookspecs: module holding the hook specification.
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
        self._hook_name = hook_name
        self._validate = validate
        self._pm = pluggy.PluginManager(group)
        self._pm.add_hookspecs(hookspecs)
        self._items: dict[str, Registration[T]] = {}
        self.failures: list[PluginFailure] = []
        self._loaded = False

    # ------------------------------------------------------------------ loading
    def _fail(self, failure: PluginFailure, cause: BaseException | None = None) -> None:
        self.failures.append(failure)
        if strict_mode():
            raise PluginError(f"{failure} ({STRICT_ENV}=1 makes this fatal)") from cause

    def load(self) -> None:
        """Import every entry point of the group once and let each register its items."""
        if self._loaded:
            return
        self._loaded = True
        for ep in sorted(metadata.entry_points(group=self.group), key=lambda e: e.name):
            dist = ep.dist.metadata["Name"] if ep.dist is not None else "<unknown>"
            version = ep.dist.version if ep.dist is not None else "?"
            try:
                module = ep.load()
            except Exception as exc:  # noqa: BLE001 - isolate every plugin
                self._fail(
                    PluginFailure(self.group, ep.name, dist, version, _short(exc)), exc
                )
                continue
            self.add_plugin(module, distribution=dist, version=version, entry_point=ep.name)

    def add_plugin(
        self, plugin: Any, *, distribution: str, version: str, entry_point: str | None = None
    ) -> None:
        """Register a plugin object (module or instance) and call its hook now.

        Used by :meth:`load` for entry points, and by tests to add an in-process plugin.
        """
        name = entry_point or getattr(plugin, "__name__", repr(plugin))
        try:
            self._pm.register(plugin, name=f"{distribution}:{name}")
            impl = getattr(plugin, self._hook_name, None)
            if impl is None:
                raise PluginError(f"it has no {self._hook_name}() hook implementation")

            def register(item_name: str, item: T, **meta: Any) -> None:
                self._add(item_name, item, meta, distribution, version)

            impl(register=register)
        except PluginError as exc:
            self._fail(PluginFailure(self.group, name, distribution, version, str(exc)), exc)
        except Exception as exc:  # noqa: BLE001 - isolate every plugin
            self._fail(PluginFailure(self.group, name, distribution, version, _short(exc)), exc)

    def _add(self, name: str, item: T, meta: dict, distribution: str, version: str) -> None:
        if not isinstance(name, str) or not name:
            raise PluginError(f"{self.kind} name must be a non-empty string, got {name!r}")
        if name in self._items:
            other = self._items[name]
            raise PluginError(
                f"duplicate {self.kind} name {name!r}: registered by {other.distribution} "
                f"{other.version} and by {distribution} {version}"
            )
        if self._validate is not None:
            self._validate(name, item, meta, distribution)
        self._items[name] = Registration(name, item, distribution, version, dict(meta))

    # ------------------------------------------------------------------ queries
    def names(self) -> list[str]:
        """Sorted registered names."""
        self.load()
        return sorted(self._items)

    def registrations(self) -> list[Registration[T]]:
        """Every registration, sorted by name."""
        self.load()
        return [self._items[n] for n in sorted(self._items)]

    def get(self, name: str) -> Registration[T]:
        """The registration called ``name``.

        Raises:
            KeyError: unknown name; the message lists the valid choices.
        """
        self.load()
        try:
            return self._items[name]
        except KeyError:
            choices = ", ".join(sorted(self._items)) or "(none installed)"
            raise KeyError(f"unknown {self.kind} {name!r}; valid choices: {choices}") from None


def _short(exc: BaseException) -> str:
    last = traceback.format_exception_only(type(exc), exc)[-1].strip()
    return last


__all__ = [
    "PluginError",
    "PluginFailure",
    "PluginRegistry",
    "Registration",
    "STRICT_ENV",
    "strict_mode",
]
