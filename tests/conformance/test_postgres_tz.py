"""The conformance suite on PostgreSQL once more, away from UTC on both sides: the server
session in Asia/Tokyo (``options=-c timezone=...``) and this process in America/New_York.

Timestamps must still be stored as the UTC wall clock and read back as the same instants
(DESIGN.md section 9); a writer that leaked either time zone fails the suite here.
"""

import os
import time
from collections.abc import Iterator

import pytest
from composite_store_conformance import TransferSuite, suite_classes

from composite_store import open_store
from composite_store.store import Store
from tests.support.servers import postgres

SERVER_TZ, CLIENT_TZ = "Asia/Tokyo", "America/New_York"


@pytest.fixture(scope="session")
def cs_store_factory(request: pytest.FixtureRequest) -> Store:
    return open_store(postgres.session_url(request, options=f"-c timezone={SERVER_TZ}"))


@pytest.fixture(autouse=True, scope="module")
def client_time_zone() -> Iterator[None]:
    before = os.environ.get("TZ")
    os.environ["TZ"] = CLIENT_TZ
    time.tzset()
    # Guard the premise: had tzset not taken, this module would prove nothing.
    assert time.localtime(0).tm_gmtoff == -5 * 3600, "process time zone did not change"
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


globals().update(suite_classes("PostgresTz", without=(TransferSuite,)))
