"""Two flows of different RTTs share one bottleneck as the congestion controls' models say
(`flows:` on the dumbbell): a CUBIC flow snd1 -> rcv1 with a 10 ms base RTT beside a CUBIC flow
snd2 -> rcv2 with 80 ms, both up through the bottleneck's FIFO, measured together in one window.

The bound, and why. Write R for the long flow's RTT over the short one's, s for the short flow's
share of the two flows' goodput, r = s / (1 - s) for their goodput ratio.
- The RTTs as measured include the bottleneck's queue, which both flows wait in: base 5 ms each
  way on the bottleneck (10 ms), the long flow's access link s2 35 ms each way more (80 ms), and
  a FIFO of 20 ms that adds 0..20 ms to both. So R lies between (80 + 20) / (10 + 20) = 3.3
  (queue full) and 80 / 10 = 8 (queue empty).
- CUBIC grows its window with the time since its last loss, not per RTT (W(t) = C (t - K)^3 +
  W_max, RFC 8312 section 4.1). Its mean window in that cubic region is ~1.054 (RTT / p)^3/4
  segments (RFC 8312 section 5.1), so its rate W / RTT goes as RTT^-1/4 for the same loss rate p:
  r = R^1/4, 1.35 .. 1.68, s = 0.57 .. 0.63. Where the two flows lose together (a drop-tail FIFO
  overflowing drops from both), both windows restart from the same epoch and reach about the
  same size: r = R, s = R / (1 + R) = 0.77 .. 0.89 (the 1/RTT of Reno's rate at an equal loss
  rate, Padhye et al. 1998; Reno itself, growing per RTT, goes as far as R^2 when synchronised).
  Ha, Rhee and Xu (2008) measured CUBIC's ratio between these, milder than Reno's.
So s lies between 0.57 and 0.89: the short flow gets more, never all. Bounds, with a tolerance of
0.07 below for one 15 s window's noise (CUBIC's epochs at these windows last seconds: a window
holds a few) and 0.03 above: 0.50 <= s <= 0.92. Jain's index for two flows, 1 / (2 (s^2 +
(1 - s)^2)), follows: >= 0.586 at s = 0.92; the test asserts the row's index is what the row's own
goodputs give, and within that range. The bottleneck runs at 1 Gbit/s written (100 Mbit/s at the
software-emulated VM's scale 0.1): windows of hundreds of segments, where CUBIC runs its cubic
curve rather than its Reno-emulating "TCP-friendly" region.

The share is the bottleneck's only where it was the bottleneck: the two flows together carried
at least 70 % of its goodput at the run's scale (else the emulator's CPU, not the queue, shared
them out). One lab, one repetition: a 15 s window after 2 s of warm-up, within the minute a
kernel-tier test of one window is given.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from linklab.cli import main
from linklab.model.paths import goodput_bps
from linklab.results.runs import Run

ROOT = Path(__file__).resolve().parents[3]
SHARE_LOW, SHARE_HIGH = 0.50, 0.92  # the short-RTT flow's share (the module's text)
LINK_BPS = 1e9  # the dumbbell's bottleneck, as written

EXPERIMENT = f"""\
name: rtt_fairness
topology: {ROOT / "topologies" / "dumbbell.yaml"}
client: snd1
server: rcv1
flows:
  - {{name: short, client: snd1, server: rcv1, cc: cubic}}
  - {{name: long, client: snd2, server: rcv2, cc: cubic}}
matrix:
  links[bottleneck].impair.delay: [5ms]
  links[bottleneck].impair.queue: [20ms]
  links[s2].impair.delay: [35ms]
repetitions: 1
settle: 1s
warmup: 2s
tool: {{duration: 15s, ping_count: 3}}
measure: [throughput]
"""


def jain(xs: list[float]) -> float:
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


@pytest.mark.timeout(300)
def test_two_cubic_flows_10_and_80_ms_apart_share_the_bottleneck_between_cubics_and_renos_ratio(tmp_path, capsys):
    exp = tmp_path / "rtt_fairness.yaml"
    exp.write_text(EXPERIMENT)
    rc = main(["sweep", str(exp), "--lab", "rttfair", "--results", str(tmp_path / "results")])
    out = capsys.readouterr().out
    try:
        assert rc == 0, out
        (run_dir,) = (tmp_path / "results" / "rtt_fairness").iterdir()
        run = Run.load(run_dir)
        (row,) = run.rows
        seen = json.dumps({k: v for k, v in row.items() if k.startswith(("flow_", "jain", "throughput", "error"))})
        assert not row.get("error"), seen
        short, long_ = row["flow_short_goodput_bps"], row["flow_long_goodput_bps"]
        # each flow's RTT as its sender measured it: the long one's at least the 70 ms more its path asks
        assert row["flow_long_rtt_ms"] - row["flow_short_rtt_ms"] >= 70 * 0.9, seen
        # the bottleneck's goodput at the run's scale was carried (its queue, not a CPU, shared it)
        assert short + long_ >= 0.7 * goodput_bps(LINK_BPS * run.scale, 1500), seen
        share = short / (short + long_)
        print(f"\nshort flow's share {share:.3f}, sender RTTs {row['flow_short_rtt_ms']:.1f} and "
              f"{row['flow_long_rtt_ms']:.1f} ms, {(short + long_) / 1e6:.1f} Mbit/s together")
        assert SHARE_LOW <= share <= SHARE_HIGH, f"short flow's share {share:.3f}: {seen}"
        assert row["jain_index"] == pytest.approx(jain([short, long_]), abs=1e-3), seen
        assert 1 / (2 * (SHARE_HIGH ** 2 + (1 - SHARE_HIGH) ** 2)) <= row["jain_index"] <= 1.0, seen
    finally:
        main(["down", "rttfair"])
