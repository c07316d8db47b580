"""Was a repetition measuring the link, or the emulator and its neighbours? Pure judgements.

Each flag comes with its evidence, so a report can mark the point and say why:
  core_saturated   the busiest core of the lab's kernel was >= CORE_BUSY_PCT busy during the
                   window: the emulator (softirq, iperf3) may be the bottleneck, not the link
  queue_dropped    a qdisc dropped >= QUEUE_DROP_PCT of the packets it handled during the window
                   and no `loss:` asked for it: a queue bound binding (by design for UDP overload
                   and switch ports, a sign of an emulator stall or too small a queue for a TCP
                   flow). A handful of drops as a TCP flow leaves slow start is what a real
                   host port does too (bench/README.md#measurement).
  host_disturbed   other work took >= HOST_OTHER_PCT of the host's cores during the window (the
                   host's /proc/stat minus the lab VM's QEMU process, recorded by the host side:
                   linklab/vm/hostcpu.py): the emulator was short of CPU, its neighbours were not
  host_stolen      the hypervisor under the host (the host is a VM, as CI machines are) took
                   >= HOST_STEAL_PCT of the host's cores away during the window (their steal time):
                   the emulator ran on a slower machine for a while. What sweeps, checks and the
                   verdict do with a repetition flagged about the host, and why only
                   host_disturbed is measured again: linklab/measure/flags.py
  emulator_burst   a port beyond the path's bottleneck (linklab/model/paths.py: reached only after
                   a port no faster than itself) dropped >= QUEUE_DROP_PCT of its packets: traffic
                   that left the bottleneck at its rate needs no queue there on a real network, so
                   the emulator delivered it in bursts (timer slack, batched forwarding) and the
                   row's throughput and retransmits carry the emulator's cost, not the link's.
                   Those ports then count here, not under queue_dropped.
  emulator_rtt     the idle RTT's median exceeds the round trip the topology asks for on the path
                   (linklab/model/paths.py) by >= EMULATOR_RTT_MS and at least doubles it: the
                   emulator's own latency dominates, so RTT, RTT under load and cwnd / rate
                   measure the emulator (only rows that measured an idle ping can carry it)
A TCP repetition whose goodput falls below THEORY_SHARE of what the path's links could deliver
(linklab/model/paths.py: tcp_goodput_bps) carries a flag naming what limited the flow, from what
the kernel reports about the sender (tcp_info through ss, sampled near the flow's end:
linklab/measure/ss.py; iperf3's snd_wnd, cwnd and RTT):
  rwnd_limited     the receiver's advertised window held the sender back for >= LIMITED_PCT of
                   the time it had data to send (or, without tcp_info, the smallest window
                   iperf3 saw over the RTT allowed less than THEORY_SHARE of the path): the
                   receiver's buffer, not the link
  sndbuf_limited   the sender's own send buffer did (or, with neither window full, the sender
                   kept less than INFLIGHT_PCT of its congestion window in flight)
  cwnd_limited     neither, no other flag names a cause, and the sender retransmitted: the
                   congestion window after loss did not fill the path
  below_theory     nothing the kernel reports, nor any other flag, explains the shortfall
Where neither window held the sender and another flag above is set (a saturated core, the
emulator's RTT or bursts, a queue's drops, a busy host), that flag names the cause.
Counters come from every qdisc before and after the repetition (netlink: counters.read_qdiscs; tc's
text of the same counters, `tc -s qdisc show`, is read by parse_qdisc_stats).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from linklab.measure.flags import HOST_DISTURBED, HOST_STOLEN, stored

# Each threshold sits between what quiet runs and disturbed ones reached (bench/README.md#measurement).
CORE_BUSY_PCT = 85.0  # where the emulator's softirq and iperf3 start to bind a many-stream point
HOST_OTHER_PCT = 25.0  # % of all host cores: on 2 cores, half a core of other work
HOST_STEAL_PCT = 10.0  # % of all host cores: above a quiet VM host's steal, below a noisy run's
QUEUE_DROP_PCT = 0.1  # % of a queue's packets: far above slow start's overshoot on quiet runs
# ms the lab may add to the asked round trip unflagged: above a native veth/bridge path's own
# latency, below what the lab VM adds under software emulation.
EMULATOR_RTT_MS = 0.2
# A TCP repetition below this share of its path's goodput gets a flag naming its limit; quiet TCP
# flows in the lab VM stay above it.
THEORY_SHARE = 0.9
# % of the sender's busy time a window or buffer held it back to be named the limit: between a
# link-bound flow's first round trips and a stuck window.
LIMITED_PCT = 20.0
# % of its congestion window a bulk sender keeps in flight when nothing above TCP holds it:
# between a link- or loss-bound sender (all of it) and one a small tcp_wmem holds back.
INFLIGHT_PCT = 50.0

# Every flag a row may carry, in the order flags() names them.
LIMIT_FLAGS = ("rwnd_limited", "sndbuf_limited", "cwnd_limited", "below_theory")
FLAGS = ("core_saturated", "queue_dropped", "emulator_burst", HOST_DISTURBED, HOST_STOLEN, "emulator_rtt",
         *LIMIT_FLAGS)

_QDISC = re.compile(r"^qdisc (?P<kind>\S+) (?P<handle>\S+:)\S* (?:dev (?P<dev>\S+) )?(?P<where>root|parent \S+)")
_SENT = re.compile(r"^\s*Sent (?P<bytes>\d+) bytes (?P<pkts>\d+) pkt \(dropped (?P<dropped>\d+), "
                   r"overlimits (?P<over>\d+) requeues (?P<requeues>\d+)\)")


def parse_qdisc_stats(text: str, dev: str | None = None) -> dict[str, dict[str, int]]:
    """`tc -s [-d] qdisc show [dev X]` -> {"eth1 bfifo 10:": {"sent_pkts":.., "dropped":..}}.
    Without `dev` in the output (show dev X), the caller's `dev` names the interface."""
    out: dict[str, dict[str, int]] = {}
    key = None
    for line in text.splitlines():
        m = _QDISC.match(line)
        if m:
            key = f"{m['dev'] or dev or '?'} {m['kind']} {m['handle']}"
            continue
        s = _SENT.match(line)
        if s and key:
            out[key] = {"sent_bytes": int(s["bytes"]), "sent_pkts": int(s["pkts"]), "dropped": int(s["dropped"]),
                        "overlimits": int(s["over"]), "requeues": int(s["requeues"])}
            key = None
    return out


def drops_delta(before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """Packets each qdisc dropped between two snapshots (a qdisc rebuilt in between restarts its
    counters: its 'after' value is the delta then)."""
    out = {}
    for key, a in after.items():
        b = before.get(key, {})
        d = a["dropped"] - b.get("dropped", 0)
        if d < 0:
            d = a["dropped"]
        if d:
            out[key] = d
    return out


def sent_delta(before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """Packets each qdisc sent between two snapshots (same rebuilt-qdisc rule as drops_delta)."""
    out = {}
    for key, a in after.items():
        d = a["sent_pkts"] - before.get(key, {}).get("sent_pkts", 0)
        out[key] = d if d >= 0 else a["sent_pkts"]
    return out


def leaf_drops(drops: Mapping[str, int]) -> int:
    """Packets dropped, each once: a classful root (htb, tbf) also counts its child's drops."""
    devs = {}
    for key in drops:
        devs.setdefault(key.split(" ")[0], []).append(key)
    total = 0
    for keys in devs.values():
        leaves = [k for k in keys if k.split(" ")[1] not in ("htb", "tbf")] or keys
        total += sum(drops[k] for k in leaves)
    return total


def flags(row: Mapping[str, Any], drops: Mapping[str, int] | None = None,
          lossy_ifaces: set[str] | frozenset[str] = frozenset(), core_busy_pct: float = CORE_BUSY_PCT,
          sent: Mapping[str, int] | None = None, drop_pct: float = QUEUE_DROP_PCT,
          asked_rtt_ms: float | None = None, beyond: Mapping[str, str] | None = None,
          theory_bps: float | None = None) -> dict[str, str]:
    """{"flags": "core_saturated;queue_dropped", "flag_evidence": "..."} from a row's per-core CPU
    (cpu<N>_busy_pct) and the qdisc drop deltas; interfaces whose impairment asks for loss
    (`lossy_ifaces`, "node/ifname" or "ifname") do not count. With `sent` (packets each qdisc
    sent, sent_delta), a queue counts only when its drops reach `drop_pct` % of what it handled.
    With `asked_rtt_ms` (the path's delays, linklab/model/paths.py), a row's idle RTT
    (ping_rtt_p50_ms) is judged against it. With `beyond` ("node/ifname" -> the bottleneck port
    before it, paths.beyond_bottleneck), drops at those ports are the emulator's. With
    `theory_bps` (paths.tcp_goodput_bps), a TCP row below THEORY_SHARE of it gets its limit named
    (limit())."""
    names: list[str] = []
    evidence: list[str] = []
    cores = {k: v for k, v in row.items() if re.fullmatch(r"cpu\d+_busy_pct", k) and isinstance(v, (int, float))}
    if cores:
        busiest = max(cores, key=lambda k: cores[k])
        if cores[busiest] >= core_busy_pct:
            names.append("core_saturated")
            evidence.append(f"{busiest[:-9]} {cores[busiest]:.0f}% busy (>= {core_busy_pct:g}%)")
    unasked = {k: v for k, v in (drops or {}).items()
               if k.split(" ")[0] not in lossy_ifaces and k.split(" ")[0].split("/")[-1] not in lossy_ifaces}
    share = {k: 100.0 * v / (v + sent.get(k, 0)) for k, v in unasked.items()} if sent is not None else {}
    if sent is not None:
        unasked = {k: v for k, v in unasked.items() if share[k] >= drop_pct}
    def said(keys):
        return ", ".join(f"{k}: {unasked[k]}" + (f" ({share[k]:.2g}%)" if k in share else "") for k in sorted(keys))
    bursts = [k for k in unasked if k.split(" ")[0] in (beyond or {})]
    plain = [k for k in unasked if k not in bursts]
    if plain:
        names.append("queue_dropped")
        evidence.append("dropped " + said(plain))
    if bursts:
        names.append("emulator_burst")
        bottlenecks = sorted({beyond[k.split(" ")[0]] for k in bursts})
        evidence.append(f"dropped {said(bursts)} beyond the path's bottleneck ({', '.join(bottlenecks)}): traffic "
                        f"that left it at its rate needs no queue there, the emulator delivered it in bursts")
    other = row.get("host_other_pct")
    if isinstance(other, (int, float)) and other >= HOST_OTHER_PCT:
        names.append(HOST_DISTURBED)
        evidence.append(f"host {row.get('host_busy_pct')}% busy, lab VM {row.get('host_qemu_pct')}%, "
                        f"other work {other}% of {row.get('host_cpus')} cores (>= {HOST_OTHER_PCT:g}%)")
    steal = row.get("host_steal_pct")
    if isinstance(steal, (int, float)) and steal >= HOST_STEAL_PCT:
        names.append(HOST_STOLEN)
        # (no "; " inside: it separates one flag's evidence from the next, measure/flags.EVIDENCE_SEP)
        evidence.append(f"the hypervisor took {steal}% of the host's {row.get('host_cpus')} cores (steal, "
                        f">= {HOST_STEAL_PCT:g}%), lab VM {row.get('host_qemu_pct')}%")
    idle = row.get("ping_rtt_p50_ms")
    if asked_rtt_ms is not None and isinstance(idle, (int, float)):
        extra = idle - asked_rtt_ms
        if extra >= EMULATOR_RTT_MS and idle >= 2 * asked_rtt_ms:
            names.append("emulator_rtt")
            evidence.append(f"idle RTT {idle:.3g} ms, the path asks {asked_rtt_ms:.3g} ms: the emulator adds "
                            f"{extra:.2g} ms (>= {EMULATOR_RTT_MS:g} ms), so delay figures measure it")
    named = limit(row, theory_bps, names)
    if named:
        names.append(named[0])
        evidence.append(named[1])
    return stored(zip(names, evidence))


def _num(row: Mapping[str, Any], key: str) -> float | None:
    v = row.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _mbit(bps: float) -> str:
    mbit = bps / 1e6
    return f"{mbit:.0f} Mbit/s" if mbit >= 1000 else f"{mbit:.3g} Mbit/s"


def limit(row: Mapping[str, Any], theory_bps: float | None, other: list[str] | tuple[str, ...] = ()) -> tuple[str, str] | None:
    """(flag, evidence) naming what held a TCP flow below THEORY_SHARE of `theory_bps`, or None
    (not TCP, no theory, or at least that share). `other`: the flags the row already carries,
    which name the cause when neither window held the sender (see the module's docstring).
    Reads the row's goodput (throughput_bps), the sender's tcp_info (sender_tcp_*: ss.limits_row)
    and iperf3's figures (snd_wnd_mean/_min, cwnd_mean, rtt_mean_us, retransmits, streams)."""
    got = _num(row, "throughput_bps")
    if row.get("protocol") != "tcp" or not theory_bps or got is None or got >= THEORY_SHARE * theory_bps:
        return None
    said = [f"goodput {_mbit(got)}, {got / theory_bps:.2f} of the {_mbit(theory_bps)} the path carries"]
    streams = _num(row, "streams") or 1
    rtt_s = (_num(row, "rtt_mean_us") or 0) / 1e6
    wnd, least = _num(row, "snd_wnd_mean"), _num(row, "snd_wnd_min")
    wnd_bps = streams * wnd * 8 / rtt_s if wnd and rtt_s else None
    least_bps = streams * least * 8 / rtt_s if least and rtt_s else None
    if wnd:
        said.append(f"the receiver advertised {wnd / 1e3:.4g} kB on average (iperf3 snd_wnd)"
                    + (f" x {streams:g} streams" if streams > 1 else "")
                    + (f" = {_mbit(wnd_bps)} at RTT {rtt_s * 1e3:.3g} ms" if wnd_bps else "")
                    + (f", as little as {least / 1e3:.4g} kB" + (f" = {_mbit(least_bps)}" if least_bps else "")
                       if least and least < wnd else ""))
    busy = _num(row, "sender_tcp_busy_ms")
    held = {name: 100.0 * (_num(row, f"sender_tcp_{name}_ms") or 0) / busy
            for name in ("rwnd_limited", "sndbuf_limited")} if busy else {}
    inflight = _num(row, "sender_tcp_inflight_pct")
    if busy:
        said.append(f"tcp_info: busy {busy:.0f} ms, rwnd_limited {held['rwnd_limited']:.0f}%, sndbuf_limited "
                    f"{held['sndbuf_limited']:.0f}%" + (f", {inflight:.0f}% of cwnd in flight" if inflight is not None else ""))
    top = max(held, key=lambda k: held[k]) if held else None
    if top and held[top] >= LIMITED_PCT:
        what = "the receiver's window" if top == "rwnd_limited" else "the send buffer"
        return top, f"{what} held the sender: " + ", ".join(said)
    if not held and least_bps is not None and least_bps < THEORY_SHARE * theory_bps:
        # No tcp_info (read too late): the window iperf3 saw held the flow below the path's share
        # for at least one interval (a window stuck at its initial size for seconds, say).
        return "rwnd_limited", "the receiver's window bound the rate: " + ", ".join(said)
    if other:
        return None
    if inflight is not None and inflight < INFLIGHT_PCT:
        # A bulk sender (iperf3 writes as fast as it can) with neither window full: its send
        # buffer ran dry between its writes (tcp_info calls it app-limited, not sndbuf-limited).
        return "sndbuf_limited", "the sender had less in flight than its windows allowed: " + ", ".join(said)
    retrans, cwnd = _num(row, "retransmits"), _num(row, "cwnd_mean")
    if cwnd and rtt_s:
        said.append(f"mean cwnd {cwnd / 1e3:.4g} kB = {_mbit(streams * cwnd * 8 / rtt_s)} at RTT {rtt_s * 1e3:.3g} ms")
    if retrans:
        return "cwnd_limited", f"the congestion window after {retrans:.0f} retransmits: " + ", ".join(said)
    return "below_theory", "no window, buffer, loss or other flag explains it: " + ", ".join(said)
