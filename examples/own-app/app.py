#!/usr/bin/env python3
"""A small request/response transfer of its own, the program examples/own-app/ puts under test.

    python3 app.py serve PORT                  the receiver: answers every request once it is processed
    python3 app.py send HOST PORT SECONDS      the sender: requests of SIZE bytes, one at a time, for SECONDS

The sender prints one human line (requests, latency percentiles) and then its result as one line
of JSON: goodput_bps (request bytes acknowledged per second, in bits), requests, p50_ms, p99_ms.
Python's standard library only.

WORK_MS is how long the receiver spends on each request before it answers: a revision that
raises it is a slower program (README.md shows an A/B of two such revisions).
"""

from __future__ import annotations

import json
import socket
import socketserver
import struct
import sys
import time

SIZE = 64 * 1024  # bytes per request
WORK_MS = 0.0  # the receiver's processing per request
HEADER = struct.Struct("!I")  # a request's length
ACK = b"ok"


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("peer closed")
        buf += chunk
    return bytes(buf)


class Handler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                (length,) = HEADER.unpack(recv_exactly(sock, HEADER.size))
                recv_exactly(sock, length)
                if WORK_MS:
                    time.sleep(WORK_MS / 1000)
                sock.sendall(ACK)
        except ConnectionError:
            return


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def serve(port: int) -> None:
    with Server(("0.0.0.0", port), Handler) as srv:
        print(f"listening on {port}", flush=True)
        srv.serve_forever()


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else 0.0


def send(host: str, port: int, seconds: float) -> dict:
    payload = HEADER.pack(SIZE) + b"x" * SIZE
    latencies = []
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            t = time.monotonic()
            sock.sendall(payload)
            recv_exactly(sock, len(ACK))
            latencies.append((time.monotonic() - t) * 1000)
        elapsed = time.monotonic() - t0
    return {"goodput_bps": len(latencies) * SIZE * 8 / elapsed, "requests": len(latencies),
            "p50_ms": percentile(latencies, 0.50), "p99_ms": percentile(latencies, 0.99)}


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "serve":
        serve(int(argv[1]))
        return 0
    if len(argv) == 4 and argv[0] == "send":
        result = send(argv[1], int(argv[2]), float(argv[3]))
        print(f"requests={result['requests']} p50={result['p50_ms']:.3f} ms p99={result['p99_ms']:.3f} ms")
        print(json.dumps(result), flush=True)
        return 0
    print("usage: app.py serve PORT | app.py send HOST PORT SECONDS", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
