"""Switched paths carry their link rate at every MTU: TCP goodput through chains of switches
against theory, as on a direct link.

The bottleneck of each path is the sender's own port: every switch port after it runs at the same
rate, so on a real network it never queues. Before switch ports held a burst of the shaper before
them (linklab/model/queues.py: switch_floor), three bridges at MTU 9000 gave 0.36-0.58 of theory
with hundreds of retransmits, the drops at the first switch port. Each point is judged by the best
of three repetitions (of six, when the first three fall short), two-sided: goodput can no more
exceed theory (a shaper that stopped shaping) than fall short. The best, because a stall of the
emulated CPU only ever subtracts: with the hypervisor stealing 14-26 % of the host's CPU, two of
three repetitions fell to 0.91-0.95 of theory and the third reached 0.995 (CI, 2026-11-26); a path
that loses packets loses them in every repetition. No repetition may fall below FLOOR either. A
repetition measured while the hypervisor took >= HOST_STEAL_PCT of the host's cores (flagged
host_stolen, its host_steal_pct recorded) may fall short of LOW and of FLOOR by that share, the
kernel tier's one steal allowance (tests/integration/steal.py, at most 10 %): under 29-39 % steal all three fell
to 0.952-0.962 at MTU 9000 (fresh-clone CI, 2026-11-26), and under 20-36 % three bridges at MTU 1500
gave 0.860, 0.883 and 0.763 (fresh-clone CI, 2026-11-26); on a quiet host the bounds are LOW and
FLOOR as they stand.

Every chain runs at 500 Mbit/s (50 at the lab VM's scale), not 1 Gbit/s: at 100 Mbit/s and MTU
1500 the emulated CPU, not the path, set the rate (OVS: 0.970-0.982 here, 0.884-0.954 on a slower
CI machine, its cores ~57 % busy here); at 50 Mbit/s 0.997-1.003, and the bug still shows
(0.51-0.78 at MTU 9000 with the switch ports' floor taken out, 2026-11-27). The LAG chain too: at
100 Mbit/s a slow lab VM gave 0.933-0.966 at MTU 9000 (fc28); at 50 it gives 1.000-1.002 with its
cores 42-49 % busy, and 0.39-0.64 with the floor taken out (2026-11-27).
"""

import csv
from pathlib import Path

import pytest

from linklab import lab, state
from linklab.model import load_topology
from linklab.model.paths import goodput_fraction
from tests.integration import steal
from linklab.sweep.engine import Options, run
from linklab.sweep.experiment import topology_path
from linklab.sweep.plan import load_experiment

DATA = Path(__file__).resolve().parents[1] / "data"
LOW, HIGH = 0.97, 1.01  # of theory: the best repetition
FLOOR = 0.85  # of theory: every repetition (the stalls above cost at most 9 %; the bug 42-64 %)


def theory(rate_bps: float, mtu: int) -> float:
    # TCP payload over the frame the shaper counts: the sweeps' own goodput theory.
    return rate_bps * goodput_fraction(mtu)


def _ratios(reps: list[dict], written_bps: float) -> tuple[list[float], list[float]]:
    """Each repetition's goodput / theory at the links' rate as written (run at the row's scale), and
    the room its hypervisor steal gives it."""
    ratios = [float(r["throughput_bps"]) / theory(written_bps * float(r["scale"]), int(r["mtu"])) for r in reps]
    return ratios, [steal.room(r) for r in reps]


def _reached_low(reps: list[dict], written_bps: float) -> bool:
    ratios, rooms = _ratios(reps, written_bps)
    return any(x >= LOW - room for x, room in zip(ratios, rooms))


def _by_mtu(rows: list[dict]) -> dict[int, list[dict]]:
    by_mtu: dict[int, list[dict]] = {}
    for r in rows:
        by_mtu.setdefault(int(r["mtu"]), []).append(r)
    return by_mtu


def _written_rate(experiment: Path) -> float:
    """The rate every link (and LAG member) of the experiment's topology is written with, run at
    the lab's scale: one rate, so that the sender's own port is the path's only bottleneck."""
    rates = {link.impair.rate for link in load_topology(topology_path(experiment, load_experiment(experiment))).links}
    assert len(rates) == 1 and None not in rates, f"{experiment}: its links' rates {rates}, want one"
    return rates.pop()


# The LAG chain in `make test` (an 802.3ad bond into a bridge's LACP port, a second bridge); the plain
# chains of three bridges and of three Open vSwitch switches in `make test-extended` (CI's time:
# 55 and 106 s in the lab VM): a second measurement of switches forwarding at the senders' rate,
# which the LAG chain's bridges and E3's sweep through an OVS switch (test_sdn.py) show.
@pytest.mark.parametrize("experiment,lab_name", [
    pytest.param("switched_chain3_bridge.yaml", "chain3br", marks=pytest.mark.extended),
    pytest.param("switched_chain3_ovs.yaml", "chain3ovs", marks=pytest.mark.extended),
    ("switched_lag_chain.yaml", "lagchain")])
def test_goodput_through_switches_matches_theory(tmp_path, experiment, lab_name):
    written_bps = _written_rate(DATA / experiment)
    # A second sweep of three repetitions only when a point's best of the first three fell short
    # of LOW: a stall subtracts from some repetitions (CI, 2026-11-27: 0.930-0.951 at MTU 9000
    # under 3-4 % steal, where this machine measured 0.996-0.999 the same day at the same CPU
    # level), a path that loses its rate loses it in all six.
    rows: list[dict] = []
    try:
        for sweep in (1, 2):
            store = run(DATA / experiment, Options(results=tmp_path / f"results{sweep}"), say=lambda *_: None)
            with open(store.path / "results.csv") as f:
                rows += list(csv.DictReader(f))
            if all(_reached_low(reps, written_bps) for reps in _by_mtu(rows).values()):
                break
    finally:
        if state.load(lab_name):
            lab.down(lab_name, say=lambda *_: None)
    for r in rows:
        assert r["preflight_ok"] == "true" and not r.get("error"), r.get("error")
    for mtu, reps in _by_mtu(rows).items():
        ratios, rooms = _ratios(reps, written_bps)
        shown = ", ".join(f"{x:.3f} (steal {r.get('host_steal_pct') or '-'} %)" for x, r in zip(ratios, reps))
        assert _reached_low(reps, written_bps), f"{experiment} MTU {mtu}: goodput / theory {shown}"
        assert max(ratios) <= HIGH, f"{experiment} MTU {mtu}: goodput / theory {shown}"
        assert all(x >= FLOOR - room for x, room in zip(ratios, rooms)), f"{experiment} MTU {mtu}: goodput / theory {shown}"
        # No port beyond the bottleneck dropped what the path sent (the emulator's bursts): at
        # most one repetition in three flagged.
        flagged = [r["flag_evidence"] for r in reps if "emulator_burst" in r["flags"]]
        assert len(flagged) <= len(reps) // 3, f"{experiment} MTU {mtu}: {flagged}"

