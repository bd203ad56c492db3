"""Where CompositeStore takes its routes from, and where it must not."""

from __future__ import annotations

from pathlib import Path

import pytest

from composite_store import CompositeStore
from composite_store.config import ENV_DEFAULT


def test_from_config_ignores_a_composite_store_toml_in_the_current_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "composite-store.toml").write_text('[domains]\nworkflows = "memory://"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ENV_DEFAULT, raising=False)
    store = CompositeStore.from_config({"default": f"sqlite:///{tmp_path / 'given.db'}"})
    assert set(store.describe().values()) == {f"sqlite sqlite:///{tmp_path / 'given.db'}"}


def test_use_config_file_false_skips_discovery(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "composite-store.toml").write_text('default = "memory://"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ENV_DEFAULT, raising=False)
    assert CompositeStore(use_environment=False).describe()["memory"].startswith("memory")
    assert CompositeStore(use_environment=False, use_config_file=False).get("memory") is None


def test_mastras_camel_case_domain_keys_are_accepted(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    store = CompositeStore(
        domains={"workflowDefinitions": url}, use_environment=False, use_config_file=False
    )
    assert store.get("workflowDefinitions") is store.get("workflow_definitions") is not None
    from composite_store.config import from_mapping

    routing = from_mapping({"domains": {"workflowDefinitions": url}}, "test")
    assert set(routing.domains) == {"workflow_definitions"}
