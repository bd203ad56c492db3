"""docker/: the compose file, its README table, and how test discovery uses it.

No Docker engine runs on this project's machines, so nothing here starts a container: the
compose file is checked as data against docker/README.md, and ``servers.docker`` is driven
through a stand-in ``docker`` command on PATH that answers (or hangs) as a real one would.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

import tests.support.servers.docker as compose
from tests.support.servers import Found, mariadb, mongodb, postgres, redis

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "docker" / "README.md"
SERVICES = {"postgres", "mariadb", "mysql", "mongodb", "redis", "redis-cluster", "oracle", "libsql"}
#: Ports servers on developer machines commonly hold already; none of ours may take them.
STANDARD_PORTS = {5432, 3306, 6379, 27017, 8080, 4222, 5672, 1883}


def compose_services() -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = yaml.safe_load(
        compose.COMPOSE_FILE.read_text(encoding="utf-8")
    )["services"]
    return services


@dataclass(frozen=True)
class Row:
    image: str
    ports: list[int]
    variable: str | None
    url: str


def readme_table() -> dict[str, Row]:
    """The services table of docker/README.md, by service."""
    rows: dict[str, Row] = {}
    for line in README.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `"):
            continue
        service, image, ports, _credentials, variable, url = (
            cell.strip() for cell in line.strip().strip("|").split("|")
        )
        named = re.search(r"COMPOSITE_STORE_TEST_\w+", variable)
        rows[service.strip("`")] = Row(
            image=image.strip("`"),
            ports=[int(p) for p in re.findall(r"\d+", ports)],
            variable=named.group(0) if named else None,
            url=url.strip("`"),
        )
    return rows


# -- the compose file and its README table -----------------------------------------------------


def test_compose_file_defines_every_service_with_a_healthcheck() -> None:
    services = compose_services()
    assert set(services) == SERVICES
    for name, spec in services.items():
        test = spec.get("healthcheck", {}).get("test")
        assert test and test[0] in {"CMD", "CMD-SHELL"}, f"{name} has no healthcheck"
        assert spec.get("ports"), f"{name} publishes no port"
        for entry in spec["ports"]:
            assert str(entry).startswith("127.0.0.1:"), f"{name} publishes {entry} beyond loopback"


def test_readme_table_matches_the_compose_file() -> None:
    services, table = compose_services(), readme_table()
    assert set(table) == set(services)
    for name, row in table.items():
        assert row.image == services[name]["image"], name
        assert row.ports == [host for host, _ in compose.published_ports(name)], name
        port = re.search(r":(\d+)(?=[/?]|$)", row.url)
        assert port is not None and int(port.group(1)) == row.ports[0], f"{name}: {row.url}"


def test_host_ports_are_fixed_distinct_and_clear_of_standard_ports() -> None:
    ports = [host for name in compose_services() for host, _ in compose.published_ports(name)]
    assert len(ports) == len(set(ports))
    assert not set(ports) & STANDARD_PORTS
    # A high range, except Oracle's own 1521 (tests/conformance/test_oracle.py documents it).
    assert all(port >= 50000 for port in ports if port != 1521)


def test_replica_set_and_cluster_are_configured() -> None:
    services = compose_services()
    mongo = services["mongodb"]
    assert mongo["command"][:2] == ["--replSet", "rs0"]
    assert "rs.initiate" in " ".join(mongo["healthcheck"]["test"])
    cluster = compose.published_ports("redis-cluster")
    # Same port inside and out: the nodes announce these numbers in MOVED redirections.
    assert len(cluster) == 3 and all(host == inside for host, inside in cluster)
    script = services["redis-cluster"]["command"][-1]
    assert "--cluster-replicas 0" in script
    assert all(f"127.0.0.1:{port}" in script for port, _ in cluster)


#: service -> (discovery module, its URL template attribute, its environment attribute).
WIRED: dict[str, tuple[ModuleType, str, str]] = {
    "postgres": (postgres, "DOCKER", "ENV"),
    "mariadb": (mariadb, "DOCKER", "ENV"),
    "mongodb": (mongodb, "DOCKER", "ENV"),
    "redis": (redis, "DOCKER", "ENV"),
    "redis-cluster": (redis, "DOCKER_CLUSTER", "CLUSTER_ENV"),
}


@pytest.mark.parametrize("service", sorted(WIRED))
def test_readme_urls_and_variables_are_the_ones_discovery_uses(service: str) -> None:
    module, template, env = WIRED[service]
    row = readme_table()[service]
    assert row.variable == getattr(module, env)
    assert getattr(module, template).format(host="127.0.0.1", port=row.ports[0]) == row.url


# -- docker_url against a stand-in docker command ----------------------------------------------


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No cached engine answer, no Docker opt-out, a session of our own (closed after)."""
    monkeypatch.delenv(compose.CONTROL, raising=False)
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    monkeypatch.setattr(compose, "_SESSION", compose._Session())
    compose.engine_answers.cache_clear()
    yield
    compose.shutdown()
    compose.engine_answers.cache_clear()


def fake_docker(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    info: str = "exit 0",
    compose_plugin: bool = True,
    running: str = "",
    up_fails: bool = False,
) -> Path:
    """Put a stand-in ``docker`` first on PATH; returns the file it logs its arguments to."""
    bin_dir, log = tmp_path / "bin", tmp_path / "docker.log"
    bin_dir.mkdir()
    script = bin_dir / "docker"
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$*" >> "{log}"\n'
        'case "$*" in\n'
        f'  "info "*) echo 27.3.1; {info} ;;\n'
        f'  "compose version") exit {0 if compose_plugin else 1} ;;\n'
        f'  *" ps --status running --services") echo "{running}" ;;\n'
        f'  *" up --wait "*) exit {1 if up_fails else 0} ;;\n'
        '  *" port postgres 5432") echo 127.0.0.1:55432 ;;\n'
        "esac\n"
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    log.touch()
    return log


def timed(call: Callable[[], object]) -> tuple[object, float]:
    start = time.monotonic()
    result = call()
    return result, time.monotonic() - start


TEMPLATE = postgres.DOCKER


@pytest.mark.usefixtures("fresh")
def test_no_docker_on_path_gives_none_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    url, seconds = timed(lambda: compose.docker_url("postgres", TEMPLATE))
    assert url is None
    assert seconds < 2


@pytest.mark.usefixtures("fresh")
def test_an_engine_that_never_answers_gives_none_within_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "sleeper.pid"
    # `docker info` hangs (as on a dead daemon socket), through a child holding its pipes.
    fake_docker(tmp_path, monkeypatch, info=f'sleep 60 & echo $! > "{pid_file}"; wait')
    monkeypatch.setattr(compose, "ENGINE_TIMEOUT", 0.5)
    url, seconds = timed(lambda: compose.docker_url("postgres", TEMPLATE))
    assert url is None
    assert seconds < 2
    # The whole process group went, the child too: nothing is left sleeping.
    pid = int(pid_file.read_text())
    stat = Path(f"/proc/{pid}/stat")
    assert not stat.exists() or stat.read_text().split(") ")[1].startswith("Z")


@pytest.mark.usefixtures("fresh")
def test_an_engine_without_compose_warns_and_gives_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_docker(tmp_path, monkeypatch, compose_plugin=False)
    with pytest.warns(RuntimeWarning, match=r"not using Docker for postgres: .*Compose plugin"):
        assert compose.docker_url("postgres", TEMPLATE) is None


@pytest.mark.usefixtures("fresh")
def test_a_service_is_started_once_then_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = fake_docker(tmp_path, monkeypatch)
    url = "postgresql://composite:composite@127.0.0.1:55432/composite?connect_timeout=5"
    assert compose.docker_url("postgres", TEMPLATE) == url
    assert compose.docker_url("postgres", TEMPLATE) == url
    calls = log.read_text().splitlines()
    ups = [c for c in calls if " up " in c]
    assert ups == [
        f"compose -f {compose.COMPOSE_FILE} -p {compose.PROJECT} up --wait "
        f"--wait-timeout {compose.STARTUP_TIMEOUT} postgres"
    ]
    assert not [c for c in calls if " rm " in c]
    compose.shutdown()
    assert log.read_text().splitlines()[-1].endswith("rm --stop --force --volumes postgres")


@pytest.mark.usefixtures("fresh")
def test_a_service_that_cannot_start_warns_and_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = fake_docker(tmp_path, monkeypatch, up_fails=True)
    with pytest.warns(RuntimeWarning, match=r"docker compose up postgres failed"):
        assert compose.docker_url("postgres", TEMPLATE) is None
    assert log.read_text().splitlines()[-1].endswith("rm --stop --force --volumes postgres")
    # The failure is remembered: no second start in the same process.
    with pytest.warns(RuntimeWarning, match=r"docker compose up postgres failed"):
        assert compose.docker_url("postgres", TEMPLATE) is None
    assert len([c for c in log.read_text().splitlines() if " up " in c]) == 1


@pytest.mark.usefixtures("fresh")
def test_a_service_already_running_is_used_and_left_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = fake_docker(tmp_path, monkeypatch, running="redis postgres")
    assert compose.docker_url("postgres", TEMPLATE) is not None
    compose.shutdown()
    assert not [c for c in log.read_text().splitlines() if " rm " in c]


@pytest.mark.usefixtures("fresh")
@pytest.mark.parametrize("value", ["0", "off"])
def test_docker_can_be_turned_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    log = fake_docker(tmp_path, monkeypatch)
    monkeypatch.setenv(compose.CONTROL, value)
    assert compose.docker_url("postgres", TEMPLATE) is None
    assert log.read_text() == ""


# -- precedence: environment URL > Docker > local server ---------------------------------------


@dataclass(frozen=True)
class Chain:
    module: ModuleType
    finder: str
    env: str
    service: str
    template: str


CHAINS = {
    "postgres": Chain(postgres, "find", "ENV", "postgres", "DOCKER"),
    "mariadb": Chain(mariadb, "find", "ENV", "mariadb", "DOCKER"),
    "mongodb": Chain(mongodb, "find", "ENV", "mongodb", "DOCKER"),
    "redis": Chain(redis, "find", "ENV", "redis", "DOCKER"),
    "redis-cluster": Chain(redis, "find_cluster", "CLUSTER_ENV", "redis-cluster", "DOCKER_CLUSTER"),
}


class Recorder:
    """Stands in for a chain's probe, local server and Docker step, recording each use."""

    def __init__(self, chain: Chain, monkeypatch: pytest.MonkeyPatch, docker: Found | None):
        self.chain, self.docker = chain, docker
        self.probed: list[str] = []
        self.docker_asked: list[tuple[str, str]] = []
        monkeypatch.setattr(chain.module, "_probe", self.probe)
        monkeypatch.setattr(chain.module, "docker_found", self.docker_found)
        # The local step past the probe: a throwaway server (MongoDB), or the cluster's nodes.
        monkeypatch.setattr(mongodb, "start_throwaway", lambda: Found("throwaway", "local"))
        monkeypatch.setattr(redis, "_binary", lambda name: None)

    async def probe(self, url: str) -> None:
        self.probed.append(url)

    def docker_found(
        self, service: str, template: str, probe: Callable[[str], Awaitable[Any]]
    ) -> Found | None:
        self.docker_asked.append((service, template))
        return self.docker

    def find(self) -> Found | str:
        # Around the per-process cache, which other tests' real lookups fill.
        result: Found | str = getattr(self.chain.module, self.chain.finder).__wrapped__()
        return result


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_an_environment_url_wins_over_docker(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    chain = CHAINS[name]
    env_url = "scheme://from-the-environment:1/"
    monkeypatch.setenv(getattr(chain.module, chain.env), env_url)
    rec = Recorder(chain, monkeypatch, docker=Found("scheme://docker:2/", "docker"))
    found = rec.find()
    assert isinstance(found, Found) and found.url == env_url
    assert rec.docker_asked == []
    assert rec.probed == [env_url]


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_docker_wins_over_a_local_server(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    chain = CHAINS[name]
    monkeypatch.delenv(getattr(chain.module, chain.env), raising=False)
    docker = Found("scheme://docker:2/", "docker")
    rec = Recorder(chain, monkeypatch, docker=docker)
    assert rec.find() == docker
    assert rec.docker_asked == [(chain.service, getattr(chain.module, chain.template))]
    assert rec.probed == []  # no local server was even tried


@pytest.mark.usefixtures("fresh")
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_without_an_engine_discovery_goes_on_to_a_local_server(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chain = CHAINS[name]
    monkeypatch.delenv(getattr(chain.module, chain.env), raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker command at all
    rec = Recorder(chain, monkeypatch, docker=None)
    # The real Docker step this time: it must answer None, quickly.
    monkeypatch.setattr(chain.module, "docker_found", compose.docker_found)
    found, seconds = timed(rec.find)
    assert seconds < 2
    local = getattr(chain.module, "LOCAL", None)
    if name == "mongodb":
        assert found == Found("throwaway", "local")
    elif name == "redis-cluster":
        assert isinstance(found, str) and found.startswith("no redis-cli binary")
    else:
        assert isinstance(found, Found) and found.url == local == rec.probed[0]
