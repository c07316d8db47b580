#!/usr/bin/env python3
"""Anchor for bench/sweep_overhead.py: how long iperf3 itself takes beyond its -t and -O, run
bare between two nodes of a running lab, where the lab runs (inside the lab VM: run this file
with `linklab vm run -- .venv/bin/python bench/iperf_anchor.py ...`).

Bare means what a hand-written script around Mininet pays for the same measurement: one server
already listening, the client entered into its namespace the cheapest way (`nsenter --net`, the
server's address instead of its name, so no /etc/hosts bind mount), nothing else running. What
remains beyond -t + -O is iperf3's own start (exec, control connection, parameter exchange) and
its end (the results exchange, -J's JSON). Prints one JSON object:
{"streams": {"1": {"walls_s": [...], "beyond_s": median wall - asked}, ...}, "asked_s": ...}

    .venv/bin/python bench/iperf_anchor.py LAB CLIENT SERVER --duration 5 --omit 1 --streams 1 20
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PORT = 5399  # above the sweep's servers (5201 + n): the anchor never shares a port with them


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("lab")
    p.add_argument("client")
    p.add_argument("server")
    p.add_argument("--duration", type=int, required=True, help="iperf3 -t, whole seconds")
    p.add_argument("--omit", type=int, default=0, help="iperf3 -O, whole seconds")
    p.add_argument("--streams", type=int, nargs="+", default=[1])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    from linklab import procs, runner, state
    from linklab.handle import LabHandle
    from linklab.measure.iperf3 import Iperf3Client, Iperf3Server
    from linklab.measure.traffic import wait_listening

    h = LabHandle.from_record(state.require(args.lab))
    cns, sns = h.ns(args.client), h.ns(args.server)
    addr = h.lab.address(args.server, 4)
    server = runner.start(Iperf3Server(port=PORT).argv(), netns=sns)
    asked = args.duration + args.omit
    out: dict = {"asked_s": asked, "address": addr, "streams": {}}
    try:
        wait_listening(sns, [PORT])
        for n in args.streams:
            # The sweep's own client settings (linklab/measure/iperf3.py), to the address.
            argv = Iperf3Client(server=addr, port=PORT, duration=args.duration, streams=n, omit=args.omit).argv()
            walls = []
            for _ in range(args.repeats):
                t0 = time.monotonic()
                runner.run(argv, netns=cns, names=False, timeout=asked + 60)
                walls.append(round(time.monotonic() - t0, 3))
            out["streams"][str(n)] = {"walls_s": walls, "beyond_s": round(statistics.median(walls) - asked, 3)}
    finally:
        procs.stop_popen([server])
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
