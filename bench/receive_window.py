#!/usr/bin/env python3
"""How long a receiver's advertised window stays at its first value, flow after flow (issue 37's
stuck receive window): one iperf3 server kept up on SERVER, as a sweep keeps it, and N one-stream
flows from CLIENT, each reporting every 0.1 s (iperf3's snd_wnd: the window as the sender saw it).
Run where the lab runs (inside the lab VM: `linklab vm run -- .venv/bin/python
bench/receive_window.py ...`), against a lab that is up. Prints one line per flow and a summary:
how many flows spent at least --stuck seconds at the receiver's first window (the smallest any
flow saw: every flow starts with it).

    .venv/bin/python bench/receive_window.py LAB h1 h2 --flows 40 --duration 4
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PORT = 5398  # above the sweep's servers (5201 + n)


def main() -> int:
    from linklab import procs, runner
    from linklab.backends.linux.names import netns_name
    from linklab.measure.iperf3 import Iperf3Client, Iperf3Server, parse_result
    from linklab.measure.traffic import wait_listening

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lab")
    ap.add_argument("client")
    ap.add_argument("server")
    ap.add_argument("--flows", type=int, default=40)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--stuck", type=float, default=1.0, help="seconds at the first window that count as stuck")
    a = ap.parse_args()
    cns, sns = netns_name(a.lab, a.client), netns_name(a.lab, a.server)
    server = runner.start(Iperf3Server(port=PORT, json_output=False).argv(), netns=sns)
    try:
        wait_listening(sns, [PORT])
        flows = []
        for i in range(1, a.flows + 1):
            client = Iperf3Client(a.server, port=PORT, duration=a.duration, interval=0.1, congestion="cubic")
            out = runner.run(client.argv(), netns=cns, timeout=a.duration + 30, check=False).stdout
            r = parse_result(out)
            wnds = [(iv["sum"]["seconds"], iv["streams"][0]["snd_wnd"]) for iv in json.loads(out)["intervals"]]
            flows.append((r, wnds))
            print(f"flow {i}: {r.throughput_bps / 1e6:.1f} Mbit/s, windows {r.snd_wnd_min}-{r.snd_wnd_max} B, "
                  f"retransmits {r.retransmits}", flush=True)
            time.sleep(0.5)
        # The smallest window any flow saw is the receiver's first: every flow starts with it.
        first = min(w for _, wnds in flows for _, w in wnds)
        held = [sum(s for s, w in wnds if w <= first) for _, wnds in flows]
        print(f"first window {first} B; seconds each flow spent at it: {', '.join(f'{h:.1f}' for h in held)}")
        print(f"{sum(h >= a.stuck for h in held)} of {a.flows} flows spent >= {a.stuck:g} s at it")
    finally:
        procs.stop_popen([server])
    return 0


if __name__ == "__main__":
    sys.exit(main())
