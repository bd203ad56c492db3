"""Throwaway namespaces: create one next to a URL's data, open a store in it, drop it.

The test matrix and ``composite-store check`` run in namespaces made here, and nothing else
creates namespaces. A provisioner is anything with three functions (``Provisioner``); each
adapter package ships one as its ``provision`` module, found by convention from the package
of the scheme's store class (``postgresql`` -> ``composite_store_postgres.provision``: a
schema; MariaDB: a database; MongoDB: a database; Redis: a key prefix). The core provides the
embedded ones: SQLite gets a new file in a new temporary directory (the URL's own file is never
opened) and ``memory://`` a fresh store. ``register_provisioner`` overrides the convention.
"""

from __future__ import annotations

import importlib
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, cast

from composite_store.errors import CompositeStoreError, ValidationError
from composite_store.registry import get_adapter
from composite_store.urls import scheme_of

__all__ = [
    "FileProvisioner",
    "MemoryProvisioner",
    "Provisioner",
    "get_provisioner",
    "register_provisioner",
    "throwaway",
]


class Provisioner(Protocol):
    """Creates and drops throwaway namespaces on the server (or disk) a URL names."""

    async def create_namespace(self, url: str, name: str | None = None) -> str:
        """Create namespace ``name`` (default: a fresh random one) and return its name; never
        touches existing data."""
        ...

    async def drop_namespace(self, url: str, name: str) -> Any:
        """Drop namespace ``name`` and everything in it."""
        ...

    def store_url(self, url: str, name: str) -> str:
        """``url`` pointing a store at namespace ``name``."""
        ...


#: Marks the directories ``FileProvisioner`` makes, so it never deletes anything else.
_DIR_PREFIX = "composite-store-ns-"


class FileProvisioner:
    """Embedded files (``sqlite:///PATH``): a namespace is a new temporary directory holding a
    new file. The path in the URL is not used at all, so its data cannot be touched."""

    async def create_namespace(self, url: str, name: str | None = None) -> str:
        if name is not None:
            raise ValidationError("file namespaces are always fresh temporary directories")
        if not url.split("://", 1)[1].startswith("/"):
            raise ValidationError(
                f"{scheme_of(url)}:// with a host is not an embedded file; only "
                f"'{scheme_of(url)}:///PATH' URLs get a throwaway file"
            )
        return tempfile.mkdtemp(prefix=_DIR_PREFIX)

    async def drop_namespace(self, url: str, name: str) -> None:
        folder = Path(name)
        if not folder.name.startswith(_DIR_PREFIX):
            raise ValidationError(f"{name!r} is not a namespace made by FileProvisioner")
        shutil.rmtree(folder, ignore_errors=True)

    def store_url(self, url: str, name: str) -> str:
        _, _, query = url.partition("?")
        target = f"{scheme_of(url)}:///{Path(name) / 'store.db'}"
        return f"{target}?{query}" if query else target


class MemoryProvisioner:
    """``memory://``: every store is its own namespace."""

    async def create_namespace(self, url: str, name: str | None = None) -> str:
        return name or "memory"

    async def drop_namespace(self, url: str, name: str) -> None:
        return None

    def store_url(self, url: str, name: str) -> str:
        return "memory://"


_registry: dict[str, Provisioner] = {"memory": MemoryProvisioner(), "sqlite": FileProvisioner()}


def register_provisioner(
    scheme: str, provisioner: Provisioner | ModuleType, *, clobber: bool = False
) -> None:
    """Provision namespaces for ``scheme`` with ``provisioner`` (an object or a module with
    the ``Provisioner`` functions); refuses to replace one unless ``clobber``."""
    scheme = scheme.lower()
    if scheme in _registry and not clobber and _registry[scheme] is not provisioner:
        raise ValidationError(
            f"scheme {scheme!r} already has a provisioner; pass clobber=True to replace it"
        )
    _registry[scheme] = _checked(provisioner, f"the provisioner for {scheme!r}")


def get_provisioner(scheme: str) -> Provisioner:
    """The provisioner of ``scheme``: registered, else the ``provision`` module of the package
    that serves the scheme."""
    scheme = scheme.lower()
    if scheme in _registry:
        return _registry[scheme]
    store_cls = get_adapter(scheme)  # names the extra to install when it is missing
    package = store_cls.__module__.split(".", 1)[0]
    try:
        module = importlib.import_module(f"{package}.provision")
    except ModuleNotFoundError as exc:
        raise CompositeStoreError(
            f"'{scheme}://' has no throwaway namespaces: {package} has no provision module; "
            "its author can add one (see composite_store.admin.provision.Provisioner) or call "
            "composite_store.admin.provision.register_provisioner"
        ) from exc
    what = f"'{scheme}://' has no throwaway namespaces: {package}.provision"
    provisioner = _checked(module, what)
    _registry[scheme] = provisioner
    return provisioner


def _checked(candidate: Provisioner | ModuleType, what: str) -> Provisioner:
    missing = [
        fn for fn in ("create_namespace", "drop_namespace", "store_url")
        if not callable(getattr(candidate, fn, None))
    ]
    if missing:
        raise CompositeStoreError(f"{what} lacks {', '.join(missing)} (see Provisioner)")
    return cast(Provisioner, candidate)


@asynccontextmanager
async def throwaway(url: str) -> AsyncIterator[str]:
    """Create a fresh namespace next to ``url``'s data, yield a store URL inside it, and drop
    the namespace afterwards (also on error)."""
    provisioner = get_provisioner(scheme_of(url))
    name = await provisioner.create_namespace(url)
    try:
        yield provisioner.store_url(url, name)
    finally:
        await provisioner.drop_namespace(url, name)
