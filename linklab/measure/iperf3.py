"""iperf3: server and client argv, JSON result parsing, aggregation over client processes.

Facts about Debian's iperf3 3.12 this module relies on (see tests/data/tools/README.md):
- It exits 0 even when the test failed under -J; the failure is only the JSON "error" key.
- -t and -O are whole seconds (3.12 truncates 1.5 to 1 silently), so argv() refuses fractions.
- All -P streams run in one thread (3.16+ uses a thread per stream), so -P N shares one core.
  The alternative is N client processes against N servers on N ports; a 3.12 server runs one
  test at a time ("the server is busy running a test").
- In reverse mode (-R) the sender is the server: the client's JSON has retransmits but zero
  cwnd/RTT. With a -J server and --get-server-output, the sender's view arrives as
  "server_output_json" and the parser takes cwnd/RTT from there.
- cpu_utilization_percent is per iperf3 process, in percent of one core.
- A long-running 3.12 server keeps the -C of an earlier test and applies it to later tests
  that give none (captured: a reverse test sent with cubic though bbr is the default), so
  sweeps should always pass congestion=... or use one-off servers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

from linklab.measure.base import MeasurementError, Tool
from linklab.measure.stats import mean

DEFAULT_PORT = 5201


class Iperf3Error(MeasurementError):
    """iperf3 reported {"error": ...} or printed no usable JSON."""


def _whole_seconds(value: float, what: str) -> int:
    if value != int(value) or value < 0:
        raise ValueError(f"iperf3 3.12 takes whole seconds for {what}, got {value!r}")
    return int(value)


def _version_tuple(version: str | None) -> tuple[int, ...]:
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", version or "")
    return tuple(int(g) for g in m.groups() if g is not None) if m else ()


def sender_threads(version: str | None, streams: int) -> int:
    """Threads one iperf3 process sends -P streams with: 1 before 3.16, one per stream after."""
    v = _version_tuple(version)
    return streams if v and v >= (3, 16) else 1


class _Iperf3Tool(Tool):
    name: ClassVar[str] = "iperf3"
    binary: ClassVar[str] = "iperf3"
    version_pattern: ClassVar[str] = r"iperf\s+(\d+\.\d+(?:\.\d+)?\S*)"  # 'iperf 3.12 (cJSON 1.7.15)' -> '3.12'


@dataclass(frozen=True)
class Iperf3Server(_Iperf3Tool):
    """A foreground server for the caller to runner.start() and later kill.

    json_output=True makes clients' --get-server-output return the server's JSON ("server_output_json":
    the sender's view in reverse mode, the receiver's otherwise); its own stdout is not needed (send
    it to DEVNULL). one_off exits after one test. interval: the server's own -i, which its JSON
    intervals follow whatever the client's -i (1 s by default).
    """

    port: int = DEFAULT_PORT
    one_off: bool = False
    bind: str | None = None
    json_output: bool = True
    interval: float | None = None

    def argv(self) -> list[str]:
        argv = ["iperf3", "-s", "-p", str(self.port)]
        if self.one_off:
            argv.append("-1")
        if self.bind:
            argv += ["-B", self.bind]
        if self.json_output:
            argv.append("-J")
        if self.interval is not None:
            argv += ["-i", f"{self.interval:g}"]
        return argv

    @staticmethod
    def parse(text: str) -> list[Iperf3Result]:
        """A -J server's stdout: one JSON document per test, concatenated. Failed tests raise."""
        return [parse_doc(d) for d in split_json_stream(text)]

    @classmethod
    def fleet(cls, n: int, base_port: int = DEFAULT_PORT, **kw: Any) -> list[Iperf3Server]:
        """N servers on consecutive ports, for N separate client processes."""
        return [cls(port=base_port + i, **kw) for i in range(n)]


@dataclass(frozen=True)
class Iperf3Client(_Iperf3Tool):
    server: str
    port: int = DEFAULT_PORT
    duration: float = 10
    streams: int = 1
    protocol: Literal["tcp", "udp"] = "tcp"
    bitrate: float | None = None  # bit/s; -b. iperf3's UDP default is only 1 Mbit/s; 0 = unlimited
    mss: int | None = None  # -M, bytes
    length: int | None = None  # -l, bytes per write (UDP: datagram payload)
    congestion: str | None = None  # -C
    ipv6: bool = False
    omit: float = 0
    reverse: bool = False
    # None: ask for the server's output only when it carries what the client lacks (reverse TCP).
    get_server_output: bool | None = None
    connect_timeout_ms: int | None = 5000
    interval: float | None = None  # -i seconds (0.1 is iperf3's finest): a time series per run
    extra: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.protocol not in ("tcp", "udp"):
            raise ValueError(f"protocol must be tcp or udp, got {self.protocol!r}")
        if self.streams < 1:
            raise ValueError(f"streams must be >= 1, got {self.streams}")
        _whole_seconds(self.duration, "duration (-t)")
        _whole_seconds(self.omit, "omit (-O)")

    def wants_server_output(self) -> bool:
        if self.get_server_output is not None:
            return self.get_server_output
        return self.reverse and self.protocol == "tcp"

    def argv(self) -> list[str]:
        argv = ["iperf3", "-c", self.server, "-p", str(self.port), "-J",
                "-t", str(_whole_seconds(self.duration, "duration (-t)"))]
        if self.streams != 1:
            argv += ["-P", str(self.streams)]
        if self.protocol == "udp":
            argv.append("-u")
        if self.bitrate is not None:
            argv += ["-b", str(int(self.bitrate))]
        if self.mss is not None:
            argv += ["-M", str(self.mss)]
        if self.length is not None:
            argv += ["-l", str(self.length)]
        if self.congestion:
            argv += ["-C", self.congestion]
        if self.ipv6:
            argv.append("-6")
        if self.omit:
            argv += ["-O", str(_whole_seconds(self.omit, "omit (-O)"))]
        if self.reverse:
            argv.append("-R")
        if self.wants_server_output():
            argv.append("--get-server-output")
        if self.connect_timeout_ms is not None:
            argv += ["--connect-timeout", str(self.connect_timeout_ms)]
        if self.interval is not None:
            argv += ["-i", f"{self.interval:g}"]
        return argv + list(self.extra)

    @staticmethod
    def parse(text: str) -> Iperf3Result:
        return parse_result(text)

    def as_processes(self, n: int) -> list[Iperf3Client]:
        """N one-stream clients on consecutive ports: the alternative to -P N (see Iperf3Server.fleet)."""
        return [replace(self, streams=1, port=self.port + i) for i in range(n)]


@dataclass(frozen=True)
class StreamResult:
    """One TCP/UDP stream. cwnd in bytes, RTT in microseconds; None = not measured on this side."""

    socket: int
    sent_bytes: int
    received_bytes: int | None
    sent_bps: float
    received_bps: float | None
    retransmits: int | None = None
    cwnd_max: int | None = None  # iperf3's max_snd_cwnd (it includes --omit intervals)
    cwnd_mean: float | None = None  # mean of the non-omitted intervals' snd_cwnd
    rtt_mean_us: float | None = None
    rtt_min_us: float | None = None
    rtt_max_us: float | None = None
    jitter_ms: float | None = None
    lost_packets: int | None = None
    packets: int | None = None
    lost_percent: float | None = None
    out_of_order: int | None = None
    cwnd_samples: tuple[int, ...] = ()
    # The receiver's advertised window as the sender last saw it in each non-omitted interval
    # (3.12's snd_wnd): a window stuck small for a whole flow bounds it to window / RTT.
    snd_wnd_mean: float | None = None
    snd_wnd_min: int | None = None
    snd_wnd_max: int | None = None


@dataclass(frozen=True)
class Iperf3Result:
    protocol: str  # "tcp" | "udp"
    reverse: bool
    parallel: str  # "streams": -P N in one process; "processes": N client processes (aggregate())
    processes: int
    streams: int
    sender_threads: int  # threads that sent, across all processes (3.12: one per process)
    version: str | None
    duration_s: float
    omit_s: float
    sent_bytes: int
    received_bytes: int
    sent_bps: float
    received_bps: float
    retransmits: int | None
    cwnd_mean: float | None
    cwnd_max: int | None
    rtt_mean_us: float | None
    rtt_min_us: float | None
    rtt_max_us: float | None
    jitter_ms: float | None
    lost_packets: int | None
    packets: int | None
    lost_percent: float | None
    out_of_order: int | None
    cpu_local_pct: float | None  # the client process(es), % of one core, summed over processes
    cpu_remote_pct: float | None  # the server process(es)
    sender_congestion: str | None
    receiver_congestion: str | None
    per_stream: tuple[StreamResult, ...] = field(default=(), repr=False)
    snd_wnd_mean: float | None = None  # mean over streams of each one's mean advertised window
    snd_wnd_min: int | None = None  # the smallest any stream saw in an interval
    snd_wnd_max: int | None = None

    @property
    def throughput_bps(self) -> float:
        """What arrived: the receiver's rate (the sender's rate includes what the path dropped)."""
        return self.received_bps

    @property
    def cpu_sender_pct(self) -> float | None:
        return self.cpu_remote_pct if self.reverse else self.cpu_local_pct

    @property
    def cpu_receiver_pct(self) -> float | None:
        return self.cpu_local_pct if self.reverse else self.cpu_remote_pct

    def row(self, prefix: str = "") -> dict[str, Any]:
        """Flat scalars for one CSV row; the same keys for TCP and UDP (None where not applicable)."""
        keys = ("protocol", "reverse", "parallel", "processes", "streams", "sender_threads", "version",
                "duration_s", "omit_s", "sent_bytes", "received_bytes", "sent_bps", "received_bps",
                "throughput_bps", "retransmits", "cwnd_mean", "cwnd_max", "rtt_mean_us", "rtt_min_us",
                "rtt_max_us", "jitter_ms", "lost_packets", "packets", "lost_percent", "out_of_order",
                "cpu_local_pct", "cpu_remote_pct", "cpu_sender_pct", "cpu_receiver_pct",
                "sender_congestion", "receiver_congestion", "snd_wnd_mean", "snd_wnd_min", "snd_wnd_max")
        return {prefix + k: getattr(self, k) for k in keys}


# --- parsing -------------------------------------------------------------------------------

_HINTS = (
    ("unable to connect", "is an iperf3 server listening on that address and port, in the server's namespace?"),
    ("server is busy", "an iperf3 3.12 server runs one test at a time: give each client process its own "
                       "server port (Iperf3Server.fleet / Iperf3Client.as_processes)"),
    ("unable to set TCP_CONGESTION", "is that congestion control module loaded? see "
                                     "/proc/sys/net/ipv4/tcp_available_congestion_control"),
)


def _load(text: str) -> dict:
    text = text.strip()
    if not text:
        raise Iperf3Error("iperf3 printed nothing (did it run with -J?)")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        # Not JSON: usually a usage error printed before -J took effect.
        first = text.splitlines()[0][:200]
        raise Iperf3Error(f"iperf3 output is not JSON ({e.msg}): {first!r}") from None
    if not isinstance(doc, dict):
        raise Iperf3Error("iperf3 JSON is not an object")
    return doc


def _check_error(doc: dict) -> None:
    err = doc.get("error")
    if err:
        hint = next((h for needle, h in _HINTS if needle.lower() in err.lower()), None)
        raise Iperf3Error(f"iperf3: {err}", hint=hint)


def _nz(value: Any) -> Any:
    # iperf3 writes 0 for "not measured" (cwnd/RTT on a non-sending side).
    return value if value else None


def _sender_views(end_streams: list[dict], intervals: list[dict], server_doc: dict | None) -> list[tuple[dict | None, list[dict]]]:
    """Per stream: the end-of-test 'sender' record written by the sending process, and that
    process's intervals; (None, []) where the sender's view is not in this output."""
    if all(s["sender"].get("sender", True) for s in end_streams):
        return [(s["sender"], intervals) for s in end_streams]
    if server_doc:
        # Reverse mode with a -J server: sockets differ between the two ends, order does not.
        theirs = [s.get("sender", {}) for s in server_doc.get("end", {}).get("streams", [])]
        ivs = server_doc.get("intervals", [])
        return [(theirs[i], ivs) if i < len(theirs) and theirs[i].get("sender") else (None, [])
                for i in range(len(end_streams))]
    return [(None, [])] * len(end_streams)


def _tcp_stream(end_stream: dict, sview: dict | None, sintervals: list[dict]) -> StreamResult:
    snd, rcv = end_stream["sender"], end_stream.get("receiver") or {}
    sv = sview or {}
    mine = [s for iv in sintervals for s in iv.get("streams", [])
            if s.get("socket") == sv.get("socket") and not s.get("omitted")]
    cwnds = tuple(s["snd_cwnd"] for s in mine if "snd_cwnd" in s)
    wnds = [s["snd_wnd"] for s in mine if s.get("snd_wnd")]
    return StreamResult(
        socket=snd["socket"],
        sent_bytes=snd["bytes"],
        received_bytes=rcv.get("bytes"),
        sent_bps=snd["bits_per_second"],
        received_bps=rcv.get("bits_per_second"),
        retransmits=snd.get("retransmits"),
        cwnd_max=_nz(sv.get("max_snd_cwnd")),
        cwnd_mean=mean(cwnds) if cwnds else None,
        rtt_mean_us=_nz(sv.get("mean_rtt")),
        rtt_min_us=_nz(sv.get("min_rtt")),
        rtt_max_us=_nz(sv.get("max_rtt")),
        cwnd_samples=cwnds,
        snd_wnd_mean=mean(wnds) if wnds else None,
        snd_wnd_min=min(wnds) if wnds else None,
        snd_wnd_max=_nz(sv.get("max_snd_wnd")),
    )


def _udp_stream(end_stream: dict) -> StreamResult:
    u = end_stream["udp"]
    return StreamResult(
        socket=u["socket"],
        sent_bytes=u["bytes"],
        received_bytes=None,  # 3.12 reports the receiver's bytes only in the sums
        sent_bps=u["bits_per_second"],
        received_bps=None,
        jitter_ms=u.get("jitter_ms"),
        lost_packets=u.get("lost_packets"),
        packets=u.get("packets"),
        lost_percent=u.get("lost_percent"),
        out_of_order=u.get("out_of_order"),
    )


def _opt_sum(values: Sequence[Any]) -> Any:
    vals = [v for v in values if v is not None]
    return sum(vals) if vals else None


def _opt_mean(values: Sequence[Any]) -> float | None:
    vals = [v for v in values if v is not None]
    return mean(vals) if vals else None


def _opt(fn, values: Sequence[Any]) -> Any:
    vals = [v for v in values if v is not None]
    return fn(vals) if vals else None


def split_json_stream(text: str) -> list[dict]:
    """Concatenated JSON documents (a long-running -J server's stdout) -> list of objects."""
    dec, docs, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return docs
        try:
            doc, i = dec.raw_decode(text, i)
        except json.JSONDecodeError as e:
            raise Iperf3Error(f"iperf3 output is not JSON at char {i} ({e.msg})") from None
        docs.append(doc)


def parse_result(text: str) -> Iperf3Result:
    """iperf3 -J client output -> Iperf3Result. Raises Iperf3Error for iperf3's error JSON."""
    return parse_doc(_load(text))


def parse_doc(doc: dict) -> Iperf3Result:
    _check_error(doc)
    start, end = doc.get("start", {}), doc.get("end", {})
    ts = start.get("test_start", {})
    proto = ts.get("protocol", "").lower()
    if proto not in ("tcp", "udp") or not end:
        raise Iperf3Error(f"iperf3 JSON has no {'results' if not end else 'known protocol'} (protocol {proto!r})")
    reverse = bool(ts.get("reverse"))
    version = start.get("version", "").replace("iperf ", "") or None
    intervals = doc.get("intervals", [])
    sent, rcvd = end.get("sum_sent", {}), end.get("sum_received", {})
    cpu = end.get("cpu_utilization_percent", {})

    if proto == "tcp":
        ends = end.get("streams", [])
        views = _sender_views(ends, intervals, doc.get("server_output_json"))
        streams = tuple(_tcp_stream(s, sv, ivs) for s, (sv, ivs) in zip(ends, views))
        retrans = sent.get("retransmits")
        udp: dict[str, Any] = dict.fromkeys(("jitter_ms", "lost_packets", "packets", "lost_percent", "out_of_order"))
    else:
        streams = tuple(_udp_stream(s) for s in end.get("streams", []))
        total = end.get("sum", {})
        lost, pkts = total.get("lost_packets"), total.get("packets")
        lost_pct, jitter = total.get("lost_percent"), total.get("jitter_ms")
        if pkts and sent.get("bytes") and rcvd.get("bytes") == 0:
            # The receiver counts loss from gaps in the sequence numbers it saw: one that saw
            # nothing reports 0 % lost (3.12's sum_received even shows a wrapped packet count).
            # Nothing arrived, so every datagram sent was lost and there is no jitter to speak of.
            lost, lost_pct, jitter = pkts, 100.0, None
        udp = {
            "jitter_ms": jitter,
            "lost_packets": lost,
            "packets": pkts,
            "lost_percent": lost_pct,
            # 3.12 leaves out_of_order out of the sums; add up the streams.
            "out_of_order": _opt_sum([s.out_of_order for s in streams]),
        }
        retrans = None

    return Iperf3Result(
        protocol=proto,
        reverse=reverse,
        parallel="streams",
        processes=1,
        streams=ts.get("num_streams", len(streams)),
        sender_threads=sender_threads(version, ts.get("num_streams", len(streams))),
        version=version,
        duration_s=max(sent.get("seconds", 0.0), rcvd.get("seconds", 0.0)),
        omit_s=ts.get("omit", 0),
        sent_bytes=sent.get("bytes", 0),
        received_bytes=rcvd.get("bytes", 0),
        sent_bps=sent.get("bits_per_second", 0.0),
        received_bps=rcvd.get("bits_per_second", 0.0),
        retransmits=retrans,
        cwnd_mean=_opt_mean([s.cwnd_mean for s in streams]),
        cwnd_max=_opt(max, [s.cwnd_max for s in streams]),
        # iperf3's mean_rtt averages one sample per interval; streams have equal interval
        # counts, so the mean of stream means is the pooled mean.
        rtt_mean_us=_opt_mean([s.rtt_mean_us for s in streams]),
        rtt_min_us=_opt(min, [s.rtt_min_us for s in streams]),
        rtt_max_us=_opt(max, [s.rtt_max_us for s in streams]),
        cpu_local_pct=cpu.get("host_total"),
        cpu_remote_pct=cpu.get("remote_total"),
        sender_congestion=end.get("sender_tcp_congestion"),
        receiver_congestion=end.get("receiver_tcp_congestion"),
        per_stream=streams,
        snd_wnd_mean=_opt_mean([s.snd_wnd_mean for s in streams]),
        snd_wnd_min=_opt(min, [s.snd_wnd_min for s in streams]),
        snd_wnd_max=_opt(max, [s.snd_wnd_max for s in streams]),
        **udp,
    )


def aggregate(results: Sequence[Iperf3Result]) -> Iperf3Result:
    """Combine N concurrent client processes (one test each) into one result.

    Sums: bytes, rates, retransmits, packets, lost, out-of-order, CPU (each process's % of one
    core, so the sum is cores' worth). Per-flow quantities (cwnd, RTT, jitter) are combined
    across all streams as the -P N parse does, so both modes give comparable columns.
    """
    if not results:
        raise ValueError("aggregate() of no results")
    protos = {r.protocol for r in results}
    if len(protos) != 1 or len({r.reverse for r in results}) != 1:
        raise ValueError("aggregate() needs results of one protocol and one direction")
    streams = tuple(s for r in results for s in r.per_stream)
    udp = results[0].protocol == "udp"
    lost = _opt_sum([r.lost_packets for r in results])
    pkts = _opt_sum([r.packets for r in results])
    return Iperf3Result(
        protocol=results[0].protocol,
        reverse=results[0].reverse,
        parallel="processes",
        processes=sum(r.processes for r in results),
        streams=sum(r.streams for r in results),
        sender_threads=sum(r.sender_threads for r in results),
        version=results[0].version,
        duration_s=max(r.duration_s for r in results),
        omit_s=max(r.omit_s for r in results),
        sent_bytes=sum(r.sent_bytes for r in results),
        received_bytes=sum(r.received_bytes for r in results),
        sent_bps=sum(r.sent_bps for r in results),
        received_bps=sum(r.received_bps for r in results),
        retransmits=_opt_sum([r.retransmits for r in results]),
        cwnd_mean=_opt_mean([s.cwnd_mean for s in streams]),
        cwnd_max=_opt(max, [s.cwnd_max for s in streams]),
        rtt_mean_us=_opt_mean([s.rtt_mean_us for s in streams]),
        rtt_min_us=_opt(min, [s.rtt_min_us for s in streams]),
        rtt_max_us=_opt(max, [s.rtt_max_us for s in streams]),
        jitter_ms=_opt_mean([r.jitter_ms for r in results]) if udp else None,
        lost_packets=lost,
        packets=pkts,
        lost_percent=(100.0 * lost / pkts if pkts else None) if udp else None,
        out_of_order=_opt_sum([r.out_of_order for r in results]),
        cpu_local_pct=_opt_sum([r.cpu_local_pct for r in results]),
        cpu_remote_pct=_opt_sum([r.cpu_remote_pct for r in results]),
        sender_congestion=results[0].sender_congestion,
        receiver_congestion=results[0].receiver_congestion,
        per_stream=streams,
        snd_wnd_mean=_opt_mean([s.snd_wnd_mean for s in streams]),
        snd_wnd_min=_opt(min, [s.snd_wnd_min for s in streams]),
        snd_wnd_max=_opt(max, [s.snd_wnd_max for s in streams]),
    )
