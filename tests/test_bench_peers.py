"""``python -m bench.peers`` alternates the order the harness runs its peers in, so that neither
Mastra's peer nor ours is always the first (or the last) of a run, and its tables say which
order each run had. Pure functions: no harness is run here."""

from __future__ import annotations

from bench.peers import PEERS, Run, peer_order, rates_table, report


def test_rounds_alternate_which_peer_runs_first() -> None:
    for backend, peers in PEERS.items():
        orders = [peer_order(backend, round_) for round_ in range(4)]
        assert orders[0] == orders[2] == peers
        assert orders[1] == orders[3] == peers[::-1]
        assert orders[0][0].startswith("mastra-") and orders[1][0].startswith("project-")


def _run(order: tuple[str, ...], rates: dict[str, float]) -> Run:
    return Run("free", order, {peer: {"w5_persist": rate} for peer, rate in rates.items()})


def test_the_tables_show_each_runs_order_and_ratios_whatever_the_order() -> None:
    rates = {"mastra-pg": 1000.0, "raw-pg": 1500.0, "project-pg": 900.0}
    first = _run(peer_order("postgres", 0), rates)
    second = _run(peer_order("postgres", 1), {**rates, "project-pg": 1200.0})

    per_run = rates_table([first, second]).splitlines()
    peers_listed = [line.split(" | ")[1] for line in per_run[2:]]
    assert peers_listed == [*first.order, *second.order]
    assert peers_listed[3] == "project-pg"

    ratios = report([first, second], "postgres")
    # W5 save over Mastra: 0.90 and 1.20, median 1.05, minimum 0.90 (bold: below 1).
    assert "**1.05 (0.90)**" in ratios.splitlines()[2]
