"""The probe a service check runs in a node: one python3 program given as `python3 -c`, its
arguments one JSON word, its answer one JSON line. Python's standard library because every node
has python3 (a lab's namespaces share the host's programs; the lab VM boots the host's root
filesystem), where curl, nc or dig are extra packages; and because one program answers all three
questions with one output format, read by one pure function (`read`), tested on captured runs.

    tcp   {"connected": true}                  a TCP connection was accepted
    http  {"status": 200, "body": "..."}       the response (an error status is one too)
    dns   {"addresses": [...], "rcode": 0}     the name's A or AAAA records: asked of `server` over
                                               UDP port 53 (a minimal query of the wire format), or,
                                               without a server, of the node's resolver (hosts file)
    any   {"error": "ConnectionRefusedError: ..."}  what stopped it
"""

from __future__ import annotations

import json
from typing import Any

SCRIPT = r"""
import json, socket, struct, sys, time
a = json.loads(sys.argv[1])
out = {}
t0 = time.monotonic()
try:
    if a["mode"] == "tcp":
        socket.create_connection((a["host"], a["port"]), timeout=a["timeout"]).close()
        out["connected"] = True
    elif a["mode"] == "http":
        import urllib.error, urllib.request
        try:
            r = urllib.request.urlopen(a["url"], timeout=a["timeout"])
        except urllib.error.HTTPError as e:
            r = e
        out["status"] = r.status
        out["body"] = r.read(65536).decode("utf-8", "replace")
    elif a.get("server") is None:
        fam = socket.AF_INET6 if a["family"] == 6 else socket.AF_INET
        out["addresses"] = sorted({i[4][0] for i in socket.getaddrinfo(a["name"], None, fam)})
    else:
        qtype = 28 if a["family"] == 6 else 1
        name = b"".join(bytes([len(p)]) + p.encode() for p in a["name"].rstrip(".").split("."))
        query = struct.pack(">6H", 0x4c4c, 0x0100, 1, 0, 0, 0) + name + b"\0" + struct.pack(">2H", qtype, 1)
        fam, kind, proto, _, addr = socket.getaddrinfo(a["server"], 53, 0, socket.SOCK_DGRAM)[0]
        s = socket.socket(fam, kind, proto)
        s.settimeout(a["timeout"])
        s.sendto(query, addr)
        m = s.recv(65535)
        ident, flags, qd, an = struct.unpack(">4H", m[:8])
        i = 12

        def skip(i):
            while m[i]:
                if m[i] >= 0xC0:
                    return i + 2
                i += m[i] + 1
            return i + 1
        for _ in range(qd):
            i = skip(i) + 4
        found = []
        for _ in range(an):
            i = skip(i)
            rtype, _, _, size = struct.unpack(">HHIH", m[i:i + 10])
            i += 10
            if rtype in (1, 28):
                found.append(socket.inet_ntop(socket.AF_INET if rtype == 1 else socket.AF_INET6, m[i:i + size]))
            i += size
        out["rcode"] = flags & 0xF
        out["addresses"] = found
except Exception as e:
    out["error"] = f"{type(e).__name__}: {e}"
out["seconds"] = round(time.monotonic() - t0, 4)
print(json.dumps(out))
"""


def argv(**question: Any) -> list[str]:
    """The probe's command line for one question (mode tcp/http/dns and its settings)."""
    return ["python3", "-c", SCRIPT, json.dumps(question, sort_keys=True)]


def read(stdout: str, stderr: str = "") -> dict[str, Any]:
    """The probe's answer; one it did not give (python3 missing, killed) is an error. Pure."""
    for line in reversed(stdout.splitlines()):
        try:
            got = json.loads(line)
        except ValueError:
            continue
        if isinstance(got, dict):
            return got
    return {"error": " ".join((stderr or stdout).split())[-300:] or "the probe printed nothing"}
