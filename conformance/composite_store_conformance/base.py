"""``Suite``: the base of every conformance class, and the wrapping of its ``async def`` tests."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from composite_store.domains.base import Domain

__all__ = [
    "CAPABILITY_OFF",
    "CAPABILITY_ON",
    "LOOP_FIXTURE",
    "Suite",
    "capability_skip_reason",
    "is_capability_skip",
]

#: The prefixes of a skip reason that a capability caused: the test needs a flag the backend
#: does not claim (``cs_requires``), or checks the refusal of one the backend does claim.
#: ``composite-store check`` counts these apart from other skips.
CAPABILITY_OFF = "capability off: "
CAPABILITY_ON = "capability on: "


def capability_skip_reason(domain: Domain, capability: str, *, needed_on: bool = True) -> str:
    """The skip reason of a test ``domain``'s ``capability`` flag rules out: with the
    backend's reason where a needed flag is off."""
    if not needed_on:
        return (
            f"{CAPABILITY_ON}{domain.backend} claims {capability} for the {domain.domain} "
            "domain (this test checks the refusal where it is off)"
        )
    reason = domain.capabilities.reason(capability)
    return (
        f"{CAPABILITY_OFF}{domain.backend} does not claim {capability} for the "
        f"{domain.domain} domain" + (f": {reason}" if reason else "")
    )


def is_capability_skip(reason: str | None) -> bool:
    """Whether a skip reason is one of ``capability_skip_reason``'s."""
    return bool(reason) and str(reason).startswith((CAPABILITY_OFF, CAPABILITY_ON))

#: The plugin's fixture that runs a coroutine on the session's event loop; every suite test
#: asks for it (see ``Suite.__init_subclass__``).
LOOP_FIXTURE = "cs_run"


class Suite:
    """Base of the conformance classes (not collected by itself: its name ends in ``Suite``).

    A backend's test module takes one class per suite from ``suite_classes``, or subclasses a
    suite in one line::

        class TestSqliteMemory(MemorySuite): pass

    The tests this backend is known to fail are the store's own ``known_gaps`` (``Store``); the
    plugin turns each into a strict xfail, so a fixed gap shows up as an unexpected pass.

    The suite's tests are written ``async def`` and run on the plugin's one event loop per
    session, where the store was initialized. So that no other async plugin (pytest-asyncio in
    auto mode, anyio) takes them for its own and runs them on another loop, each is wrapped
    here, when its class is defined, in a plain function that asks for the plugin's
    ``cs_run`` fixture.
    """

    #: The domains the suite's tests use; the first one's capabilities gate ``cs_requires``.
    domains: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, member in list(vars(cls).items()):
            if name.startswith("test") and inspect.iscoroutinefunction(member):
                setattr(cls, name, _on_session_loop(member))


def _on_session_loop(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """``test`` as a plain function taking the loop fixture as well as its own arguments."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        loop = kwargs.pop(LOOP_FIXTURE)
        loop(test(*args, **kwargs))

    signature = inspect.signature(test)
    # Keyword-only: the test's own parameters (fixtures, parametrize names) keep their places.
    loop_parameter = inspect.Parameter(LOOP_FIXTURE, inspect.Parameter.KEYWORD_ONLY)
    run.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), loop_parameter]
    )
    return run
