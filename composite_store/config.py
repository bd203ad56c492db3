"""Where routing comes from: explicit arguments, then environment variables, then a config file.

Precedence is written once, here (as pydantic-settings orders init > env > file). Each source
is read by one small function that names itself in errors.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from composite_store.errors import ValidationError
from composite_store.schema import DOMAINS, domain_key

__all__ = [
    "CONFIG_FILE",
    "ENV_DEFAULT",
    "Route",
    "Routing",
    "env_var",
    "from_env",
    "from_file",
    "from_mapping",
    "merge",
]

CONFIG_FILE = "composite-store.toml"
ENV_DEFAULT = "COMPOSITE_STORE_URL"


def env_var(domain: str) -> str:
    """The environment variable that routes ``domain``: ``COMPOSITE_STORE_<DOMAIN>_URL``."""
    return f"COMPOSITE_STORE_{domain.upper()}_URL"


@dataclass(frozen=True)
class Route:
    """One routing value and the source it came from (for error messages)."""

    value: Any
    source: str


@dataclass
class Routing:
    """A default route and per-domain routes, each tagged with its source."""

    default: Route | None = None
    domains: dict[str, Route] = field(default_factory=dict)


def _check_domain(key: str, source: str) -> None:
    if key not in DOMAINS:
        raise ValidationError(f"{source}: unknown domain {key!r}; known: {', '.join(DOMAINS)}")


def _url_or_off(value: Any, where: str) -> Any:
    if value is False or isinstance(value, str):
        if isinstance(value, str) and value.strip().lower() in ("false", "off", "disabled"):
            return False
        return value
    raise ValidationError(f"{where}: expected a URL string or false, got {value!r}")


def from_mapping(data: Mapping[str, Any], source: str) -> Routing:
    """Read ``{"default": URL, "domains": {domain: URL | false}}``."""
    unknown = set(data) - {"default", "domains"}
    if unknown:
        raise ValidationError(
            f"{source}: unknown keys {sorted(unknown)}; expected default, domains"
        )
    routing = Routing()
    if data.get("default") is not None:
        routing.default = Route(_url_or_off(data["default"], f"default ({source})"), source)
    domains = data.get("domains") or {}
    if not isinstance(domains, Mapping):
        raise ValidationError(f"{source}: 'domains' must be a table of domain = URL")
    for given, value in domains.items():
        key = domain_key(given)
        _check_domain(key, source)
        routing.domains[key] = Route(_url_or_off(value, f"domains.{key} ({source})"), source)
    return routing


def from_env(environ: Mapping[str, str] | None = None) -> Routing:
    """Read ``COMPOSITE_STORE_URL`` and ``COMPOSITE_STORE_<DOMAIN>_URL``."""
    env = os.environ if environ is None else environ
    routing = Routing()
    if env.get(ENV_DEFAULT):
        routing.default = Route(env[ENV_DEFAULT], f"{ENV_DEFAULT} (environment)")
    for domain in DOMAINS:
        name = env_var(domain)
        if env.get(name):
            source = f"{name} (environment)"
            routing.domains[domain] = Route(_url_or_off(env[name], source), source)
    return routing


def from_file(path: str | Path) -> Routing:
    """Read a TOML file: ``composite-store.toml`` or ``[tool.composite-store]`` of pyproject."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValidationError(f"{path}: cannot read config: {exc}") from exc
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("composite-store", {})
    return from_mapping(data, f"{path} (file)")


def discover(cwd: str | Path | None = None) -> Routing:
    """The config file of the current directory, if any."""
    base = Path(cwd or Path.cwd())
    if (base / CONFIG_FILE).is_file():
        return from_file(base / CONFIG_FILE)
    pyproject = base / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            return Routing()
        if "composite-store" in data.get("tool", {}):
            return from_file(pyproject)
    return Routing()


def merge(*sources: Routing) -> Routing:
    """Combine sources, the first one winning per key (pass them in precedence order)."""
    result = Routing()
    for routing in reversed(sources):
        if routing.default is not None:
            result.default = routing.default
        result.domains.update(routing.domains)
    return result
