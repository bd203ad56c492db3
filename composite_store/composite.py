"""``CompositeStore``: route each domain to its own backend."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from composite_store import config
from composite_store.config import Route, Routing
from composite_store.domains.base import Domain
from composite_store.errors import ConfigurationError, ValidationError, redact
from composite_store.registry import get_adapter, open_store
from composite_store.schema import DOMAINS, domain_key
from composite_store.store import Store
from composite_store.urls import scheme_of

__all__ = ["CompositeStore", "DomainSource"]

#: What a domain can be routed to: a domain object, a whole store, a URL, False (off) or None
#: (fall back to the default).
DomainSource = Domain | Store | str | bool | None


class CompositeStore(Store):
    """Route each storage domain to its own backend.

    ``default`` is a store or URL serving every domain not routed elsewhere. Each ``domains``
    value is a domain object, a whole store (its same-named domain is used), a URL, ``False``
    (off) or ``None`` (the default). Routes not given here come from the environment
    (``COMPOSITE_STORE_URL``, ``COMPOSITE_STORE_<DOMAIN>_URL``; off with
    ``use_environment=False``), then from ``config_file``, else from ``composite-store.toml`` or
    ``[tool.composite-store]`` in ``pyproject.toml`` found from the current directory (off with
    ``use_config_file=False``).

    The same URL given to several domains opens one store (one pool). ``close()`` closes the
    stores opened from URLs; stores and domains passed in belong to the caller.
    """

    backend = "composite"

    def __init__(
        self,
        default: Store | str | None = None,
        domains: Mapping[str, DomainSource] | None = None,
        *,
        use_environment: bool = True,
        config_file: str | Path | None = None,
        use_config_file: bool = True,
        **options: Any,
    ) -> None:
        explicit = Routing()
        if default is not None:
            explicit.default = Route(default, "default= (argument)")
        for given, value in (domains or {}).items():
            key = domain_key(given)
            if key not in DOMAINS:
                raise ValidationError(f"unknown domain {key!r}; known: {', '.join(DOMAINS)}")
            if value is not None:
                explicit.domains[key] = Route(value, f"domains[{key!r}] (argument)")
        sources = [explicit]
        if use_environment:
            sources.append(config.from_env())
        if config_file:
            sources.append(config.from_file(config_file))
        elif use_config_file:
            sources.append(config.discover())
        self.routing = config.merge(*sources)
        self._options = options
        self._used_options: set[str] = set()
        self._opened: dict[str, Store] = {}
        self._unrouted: dict[str, str] = {}
        resolved: dict[str, Domain] = {}
        for name in DOMAINS:
            dom = self._resolve(name)
            if dom is not None:
                resolved[name] = dom
        self._check_options_used()
        super().__init__(resolved)

    @classmethod
    def from_config(cls, source: str | Path | Mapping[str, Any], **options: Any) -> CompositeStore:
        """Build a composite from a TOML file path or a ``{"default", "domains"}`` mapping."""
        if isinstance(source, Mapping):
            routing = config.from_mapping(source, "config mapping")
            domains = {k: r.value for k, r in routing.domains.items()}
            default = routing.default.value if routing.default else None
            return cls(default, domains, use_environment=False, use_config_file=False, **options)
        # The file's routes keep the file as their source (describe(), inspect).
        return cls(use_environment=False, config_file=source, **options)

    # -- resolution ------------------------------------------------------------------------------

    def _open(self, url: str, source: str) -> Store:
        if url not in self._opened:
            try:
                # Each store takes the composite's options it knows (echo= to the SQL stores,
                # not to MongoDB's client); one that no store takes is refused below.
                accepted = get_adapter(scheme_of(url)).option_names()
                mine = {k: v for k, v in self._options.items() if k in accepted}
                self._used_options.update(mine)
                self._opened[url] = open_store(url, **mine)
            except ValidationError as exc:
                raise type(exc)(f"{source}: {exc}") from exc
        return self._opened[url]

    def _check_options_used(self) -> None:
        unused = sorted(set(self._options) - self._used_options)
        if not unused:
            return
        opened = sorted({type(store).__name__ for store in self._opened.values()})
        takers = ", ".join(opened) if opened else "no store opened from a URL"
        raise ConfigurationError(
            f"option {unused[0]!r} applies to none of this composite's stores ({takers})"
        )

    def _resolve(self, name: str) -> Domain | None:
        route = self.routing.domains.get(name) or self.routing.default
        if route is None:
            self._unrouted[name] = (
                f"no default store and no route for it; pass default=..., "
                f"domains={{{name!r}: ...}} or set {config.env_var(name)} / {config.ENV_DEFAULT}"
            )
            return None
        value, source = route.value, route.source
        if value is False:
            self._unrouted[name] = f"it is disabled ({source})"
            return None
        if value is True:
            raise ValidationError(f"{source}: True is not a route; use a store, URL, False or None")
        if isinstance(value, str):
            value = self._open(value, source)
        if isinstance(value, Store):
            dom = value.get(name)
            if dom is None:
                self._unrouted[name] = (
                    f"{source} routes it to a {value.backend} store, which does not offer it"
                )
            return dom
        if isinstance(value, Domain):
            if value.domain != name:
                raise ValidationError(
                    f"{source}: {type(value).__name__} serves {value.domain!r}, not {name!r}"
                )
            return value
        raise ValidationError(f"{source}: cannot route {name!r} to {type(value).__name__}")

    def _missing_hint(self, name: str) -> str:
        return self._unrouted.get(name, "nothing provides it")

    # -- lifecycle -------------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the stores this composite opened from URLs (not those passed in)."""
        for store in self._opened.values():
            await store.close()

    def route_sources(self) -> dict[str, str]:
        """Where each routed domain's route came from: an argument, an environment variable,
        or a config file (``"COMPOSITE_STORE_URL (environment)"``)."""
        found: dict[str, str] = {}
        for name in self._domains:
            route = self.routing.domains.get(name) or self.routing.default
            if route is not None:
                found[name] = route.source
        return found

    def describe(self) -> dict[str, str]:
        """The routing table: domain -> backend, credentials redacted; unrouted domains say why."""
        table = {key: redact(dom.describe()) for key, dom in self._domains.items()}
        for key in DOMAINS:
            if key not in table:
                table[key] = f"(not configured: {self._unrouted.get(key, 'nothing provides it')})"
        return {k: table[k] for k in DOMAINS}
