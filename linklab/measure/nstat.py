"""nstat (iproute2): the kernel's SNMP/TCP counters of one network namespace.

nstat reads /proc/net/{snmp,netstat,snmp6}, which are per namespace: run it inside the lab
namespace (runner's netns=...) and you get that namespace's TCP stack, not the host's.

nstat normally keeps a history file and prints increments since the last call. We never
want that state: -a prints absolute values (ignores history), -s never writes the history,
and NSTAT_HISTORY points at a private temp path anyway so nothing of the user's is touched.
Deltas are taken here from two absolute snapshots. iproute2 6.1's nstat has --json.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from linklab import runner
from linklab.measure.base import MeasurementError, Tool

# The counters that tell reordering from loss, how the sender recovered, and where UDP
# datagrams were lost: a receiver whose socket buffer overflowed counts RcvbufErrors; a sender
# held back by its own queue counts nothing (it blocks), one refused by it counts SndbufErrors.
UDP_COUNTERS = (
    "UdpOutDatagrams",
    "UdpInDatagrams",
    "UdpRcvbufErrors",
    "UdpSndbufErrors",
    "Udp6OutDatagrams",
    "Udp6InDatagrams",
    "Udp6RcvbufErrors",
    "Udp6SndbufErrors",
)
KEY_COUNTERS = (
    "TcpOutSegs",
    "TcpRetransSegs",
    "TcpExtTCPSACKReorder",
    "TcpExtTCPTSReorder",
    "TcpExtTCPRenoReorder",
    "TcpExtTCPDSACKRecv",
    "TcpExtTCPDSACKOldSent",
    "TcpExtTCPDSACKOfoSent",
    "TcpExtTCPDSACKUndo",
    "TcpExtTCPSackRecovery",
    "TcpExtTCPFastRetrans",
    "TcpExtTCPLostRetransmit",
    "TcpExtTCPLossProbes",
    "TcpExtTCPTimeouts",
    "TcpExtTCPSpuriousRTOs",
    "TcpExtTCPOFOQueue",
    "TcpExtTCPOFODrop",
    "TcpExtTCPRcvQDrop",
    *UDP_COUNTERS,
)

_HISTORY = os.path.join(tempfile.gettempdir(), f"linklab-nstat-{os.getpid()}.hist")


@dataclass(frozen=True)
class Nstat(Tool):
    name: ClassVar[str] = "nstat"
    binary: ClassVar[str] = "nstat"
    version_flag: ClassVar[str] = "-V"
    version_pattern: ClassVar[str] = r"(iproute2-\S+)"  # 'nstat utility, iproute2-6.1.0' -> 'iproute2-6.1.0'
    needs_names: ClassVar[bool] = False  # counters only: entered with nsenter --net

    patterns: tuple[str, ...] = ()  # nstat's own name filters (shell-style, e.g. "Tcp*")

    def argv(self) -> list[str]:
        return ["nstat", "-a", "-s", "-z", "--json", *self.patterns]

    @staticmethod
    def parse(text: str) -> dict[str, int]:
        return parse_nstat(text)

    def run(self, *, netns: str | None = None, timeout: float | None = 10) -> dict[str, int]:
        res = runner.run(self.argv(), netns=netns, timeout=timeout, env={"NSTAT_HISTORY": _HISTORY})
        return parse_nstat(res.stdout)


# /proc/net files nstat reads, and the values in them that are gauges, not counters (nstat
# leaves them out: a delta of a TTL or of the open connection count means nothing).
PROC_NET_FILES = ("snmp", "netstat", "snmp6")
GAUGES = frozenset({"IpForwarding", "IpDefaultTTL", "TcpRtoAlgorithm", "TcpRtoMin", "TcpRtoMax", "TcpMaxConn",
                    "TcpCurrEstab"})


def read_counters(netns: str) -> dict[str, int]:
    """What `nstat -a -s -z --json` prints for a lab namespace, read from its /proc/net files in
    this process (no nstat process per snapshot: four of them cost ~0.8 s per repetition under
    software emulation). The kernel tier checks that both agree on a live namespace."""
    from linklab.linux import netlink  # /proc/net of another namespace: via setns(2)
    texts = netlink.read_proc_net(netns, list(PROC_NET_FILES))
    return parse_proc_net(texts.get("snmp", ""), texts.get("netstat", ""), texts.get("snmp6", ""))


def parse_proc_net(snmp: str, netstat: str, snmp6: str) -> dict[str, int]:
    """/proc/net/{snmp,netstat} (pairs of "Prefix: names" / "Prefix: values" lines) and
    /proc/net/snmp6 ("Name value" lines) -> {nstat's name: value}, e.g. TcpOutSegs,
    TcpExtTCPSACKReorder, Udp6InDatagrams."""
    out: dict[str, int] = {}
    for text in (snmp, netstat):
        lines = text.splitlines()
        for head, values in zip(lines[0::2], lines[1::2]):
            prefix, names = head.split(":", 1)
            vprefix, nums = values.split(":", 1)
            if prefix != vprefix:
                raise MeasurementError(f"/proc/net table out of step: {prefix!r} names, {vprefix!r} values")
            out.update((prefix + n, int(v)) for n, v in zip(names.split(), nums.split()))
    for line in snmp6.splitlines():
        parts = line.split()
        if len(parts) == 2:
            out[parts[0]] = int(parts[1])
    return {k: v for k, v in out.items() if k not in GAUGES}


def parse_nstat(text: str) -> dict[str, int]:
    """nstat --json -> {counter: value}. nstat nests everything under "kernel"."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise MeasurementError(f"nstat output is not JSON ({e.msg}); is this nstat without --json?") from None
    counters = doc.get("kernel") if isinstance(doc, dict) else None
    if not isinstance(counters, dict):
        raise MeasurementError("nstat JSON has no 'kernel' object")
    return {k: int(v) for k, v in counters.items()}


def delta(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """after - before for counters present in both (new counters count from zero)."""
    return {k: v - before.get(k, 0) for k, v in after.items()}


@dataclass(frozen=True)
class TcpCounters:
    """The KEY_COUNTERS of one namespace over a window, with the ratios a report needs."""

    counters: Mapping[str, int | None]

    @property
    def retrans_ratio(self) -> float | None:
        out, rtx = self.counters.get("TcpOutSegs"), self.counters.get("TcpRetransSegs")
        return rtx / out if out and rtx is not None else None

    def _sum_present(self, *names: str) -> int | None:
        """The sum of those counters this kernel has; None when it has none of them."""
        vals = [v for v in (self.counters.get(k) for k in names) if v is not None]
        return sum(vals) if vals else None

    @property
    def reorder_events(self) -> int | None:
        return self._sum_present("TcpExtTCPSACKReorder", "TcpExtTCPTSReorder", "TcpExtTCPRenoReorder")

    @property
    def udp_rcvbuf_errors(self) -> int | None:
        """Datagrams a full receive buffer dropped, IPv4 and IPv6 together."""
        return self._sum_present("UdpRcvbufErrors", "Udp6RcvbufErrors")

    def row(self, prefix: str = "nstat_") -> dict[str, int | float | None]:
        row = {prefix + k: v for k, v in self.counters.items()}
        row[prefix + "retrans_ratio"] = self.retrans_ratio
        row[prefix + "reorder_events"] = self.reorder_events
        row[prefix + "udp_rcvbuf_errors"] = self.udp_rcvbuf_errors
        return row


def pick(deltas: Mapping[str, int], names: Iterable[str] = KEY_COUNTERS) -> TcpCounters:
    """Keep the counters that matter; one the kernel lacks becomes None (not 0)."""
    return TcpCounters({k: deltas.get(k) for k in names})


def row(deltas: Mapping[str, int], prefix: str = "nstat_", names: Iterable[str] = KEY_COUNTERS) -> dict[str, int | float | None]:
    return pick(deltas, names).row(prefix)
