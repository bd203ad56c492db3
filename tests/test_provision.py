"""Throwaway namespaces: the core's provisioners, the registry and the adapter convention."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from composite_store import CompositeStoreError, ValidationError
from composite_store.admin.provision import (
    FileProvisioner,
    MemoryProvisioner,
    get_provisioner,
    register_provisioner,
    throwaway,
)


def test_file_namespace_is_a_fresh_directory_never_the_urls_file(tmp_path: Path) -> None:
    existing = tmp_path / "x.db"
    existing.write_bytes(b"data")
    provisioner = FileProvisioner()
    url = f"sqlite:///{existing}?prefix=app_"
    name = asyncio.run(provisioner.create_namespace(url))
    folder = Path(name)
    assert folder.is_dir() and folder.name.startswith("composite-store-ns-")
    assert not any(folder.iterdir())
    assert provisioner.store_url(url, name) == f"sqlite:///{folder / 'store.db'}?prefix=app_"
    (folder / "store.db").write_bytes(b"x")
    asyncio.run(provisioner.drop_namespace(url, name))
    assert not folder.exists()
    assert existing.read_bytes() == b"data"


def test_file_provisioner_refuses_what_it_did_not_make(tmp_path: Path) -> None:
    provisioner = FileProvisioner()
    with pytest.raises(ValidationError, match="not a namespace made by FileProvisioner"):
        asyncio.run(provisioner.drop_namespace("sqlite:///x.db", str(tmp_path)))
    assert tmp_path.exists()
    with pytest.raises(ValidationError, match="with a host is not an embedded file"):
        asyncio.run(provisioner.create_namespace("libsql://db.example.com"))


def test_throwaway_drops_the_namespace_even_on_error() -> None:
    async def use() -> Path:
        async with throwaway("sqlite:///ignored.db") as url:
            folder = Path(url.removeprefix("sqlite:///")).parent
            assert folder.is_dir()
            raise RuntimeError(str(folder))

    with pytest.raises(RuntimeError) as exc:
        asyncio.run(use())
    assert not Path(str(exc.value)).exists()


def test_memory_and_sqlite_are_built_in() -> None:
    assert isinstance(get_provisioner("memory"), MemoryProvisioner)
    assert isinstance(get_provisioner("SQLITE"), FileProvisioner)
    assert get_provisioner("memory").store_url("memory://", "x") == "memory://"


def test_registering_refuses_a_silent_replacement() -> None:
    with pytest.raises(ValidationError, match="already has a provisioner; pass clobber=True"):
        register_provisioner("sqlite", MemoryProvisioner())
    assert isinstance(get_provisioner("sqlite"), FileProvisioner)


def test_a_provisioner_must_have_the_three_functions() -> None:
    class Half:
        async def create_namespace(self, url: str, name: str | None = None) -> str:
            return "x"

    with pytest.raises(CompositeStoreError, match="lacks drop_namespace, store_url"):
        register_provisioner("half-scheme", Half())  # type: ignore[arg-type]


def test_unknown_scheme_names_the_known_ones() -> None:
    with pytest.raises(ValidationError, match="no adapter for URL scheme 'nope'"):
        get_provisioner("nope")
