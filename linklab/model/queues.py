"""How long an egress queue may grow: a bound in time, the same at every `scale`.

Why: a queue sized in bytes or packets drains in `size / rate`; scaling the rate by 0.1 makes
the same queue 10x longer in milliseconds, so every delay-under-load figure would depend on the
scale. linklab therefore turns every queue setting into a *time at the original rate* and sizes
the byte FIFO at the scaled rate from that time:

  queue: 5ms      -> 5 ms, whatever the scale
  queue: 256kb    -> 256 KiB at the rate as written (scaled with it: 25.6 KiB at scale 0.1)
  queue: 100p     -> 100 MTU-sized frames at the rate as written (scaled the same way)

With no setting, the port the sender transmits through decides (defaults below). The bound is
enforced by a byte FIFO (bfifo) under the shaper (linklab/linux/tc.py): packets keep
their socket until they leave it, so TCP small queues hold a host's sender back (back-pressure,
as on a real NIC); traffic forwarded by a switch has no socket, and a full port drops (tail
drop, as a real switch port does).

A switch port also holds at least the shaper's bucket plus two frames (`switch_floor`), because
the traffic it forwards was shaped before, by an emulator: a shaper sends in bursts of up to its
bucket whenever its timer fires late (the lab VM's virtual CPUs are descheduled for
milliseconds), where a real port at the same rate would send the same bytes evenly. A real
switch port fed at its own rate never queues; one whose queue is smaller than that burst drops
it, and a shaper that is late itself must be able to catch up too (bench/README.md#queues-and-shapers).
"""

from __future__ import annotations

from dataclasses import dataclass

from linklab.model.paths import frame_bytes  # a frame as the shapers count its length

# A host's NIC: Linux's default txqueuelen, 1000 frames, at the original rate (12.1 ms of
# 1500-byte frames at 1 Gbit/s), at most 10 ms (a slow or jumbo link would otherwise get a
# second of buffer). TCP small queues keep a bulk flow far below it while the byte FIFO holds
# the queue; it binds for traffic that does not back off (UDP) and where netem holds the queue.
HOST_PORT_PACKETS = 1000
HOST_PORT_MAX_S = 0.010
# A switch port: 256 KiB at the original rate (2.1 ms at 1 Gbit/s), the order of a shallow-
# buffered switch's per-port share. It drops when full.
SWITCH_PORT_BYTES = 256 * 1024


# The biggest GSO packet Linux hands a port by default (gso_max_size; GSO_LEGACY_MAX_SIZE).
GSO_MAX_BYTES = 65536


def gso_cap(queue_bytes: int | None, mtu: int) -> int:
    """The biggest GSO packet a node's own port may be handed (its gso_max_size): half its byte
    FIFO, so that two fit, as a TCP segment pair must; at least one frame, at most Linux's
    default. Why: a sender's TCP hands its port 64 KiB GSO packets whenever it paces fast (BBR's
    first rounds at a veth's microsecond RTT), and a byte FIFO smaller than one drops it even when
    empty, every time: BBR moved 0.14 Mbit/s through a 20 Mbit/s link's 10 ms host port (25 kB)
    and 19.2 with the port's gso_max_size at 16384 (bench/README.md, "Queues and shapers"). Pure."""
    if not queue_bytes:
        return GSO_MAX_BYTES
    return max(int(frame_bytes(mtu)), min(GSO_MAX_BYTES, int(queue_bytes) // 2))


# A shaper's bucket: what it may send at once when its timer fires late, so that it still keeps
# its rate (htb's default of a few kB loses goodput to late timers: bench/README.md#queues-and-shapers).
# tbf needs at least one packet per bucket; htb's floor is 64 kB, room for a whole GSO packet
# (gso_max_size 64 KiB); above it, 1.6 ms at the rate.
HTB_BUCKET_FLOOR = 64000
TBF_BUCKET_FLOOR = 20000
BUCKET_S = 0.0016


def bucket_bytes(shaper: str | None, rate_bps: float, mtu: int, asked: int | None = None) -> int:
    """The bucket of an htb or tbf shaper at `rate_bps` (as it runs: scaled). Pure."""
    if asked:
        return int(asked)
    frame = frame_bytes(mtu)
    if shaper == "tbf":
        return max(2 * frame, int(rate_bps / 8 * BUCKET_S), TBF_BUCKET_FLOOR)
    return max(4 * frame, int(rate_bps / 8 * BUCKET_S), HTB_BUCKET_FLOOR)


def switch_floor(bucket: int, mtu: int) -> int:
    """The least a switch port queues: one burst of the shaper before it (taken as its own
    bucket: a chain's links share their rate, and a faster link before a slower port makes that
    port a real bottleneck anyway) plus a segment pair. Pure."""
    return bucket + 2 * frame_bytes(mtu)


@dataclass(frozen=True)
class QueueSize:
    bytes: int  # the FIFO's limit at the scaled rate
    seconds: float  # its drain time: the queueing delay it allows, the same at every scale
    source: str  # what decided it, for the state and the results


def size(spec: tuple[str, float] | None, rate_bps: float, scale: float, mtu: int, port: str,
         bucket: int | None = None) -> QueueSize:
    """The queue of a port shaped to `rate_bps` (as written; the lab runs it at rate*scale) by a
    shaper whose bucket is `bucket` bytes (None: bucket_bytes of the default shaper). Pure."""
    frame = frame_bytes(mtu)
    if spec is None:
        if port == "switch":
            spec, why = ("bytes", float(SWITCH_PORT_BYTES)), "default switch port: 256kb at the original rate, drops when full"
        else:
            t = min(HOST_PORT_PACKETS * frame * 8 / rate_bps, HOST_PORT_MAX_S)
            spec, why = ("time", t), "default host port: 1000 frames at the original rate, at most 10ms"
    else:
        why = "queue: " + {"time": f"{spec[1] * 1e3:g}ms", "bytes": f"{spec[1]:g}b", "packets": f"{spec[1]:g}p"}[spec[0]]
    kind, value = spec
    if kind == "time":
        seconds = value
    elif kind == "bytes":
        seconds = value * 8 / rate_bps
    else:
        seconds = value * frame * 8 / rate_bps
    nbytes = int(round(seconds * rate_bps * scale / 8))
    # The FIFO must hold a TCP segment pair (tcp_min_tso_segs): a smaller one drops every packet
    # bigger than itself even when empty. A switch port must also take a burst of the emulator's
    # shaper before it (module text).
    if port == "switch":
        if bucket is None:
            bucket = bucket_bytes("htb", rate_bps * scale, mtu)
        floor, floor_why = switch_floor(bucket, mtu), "a burst of the shaper before it (its bucket) and 2 frames"
    else:
        floor, floor_why = 2 * frame, "2 frames, the least that passes a TCP segment pair"
    if nbytes < floor:
        nbytes = floor
        seconds = nbytes * 8 / (rate_bps * scale)
        why += f" (raised to {nbytes} bytes: {floor_why})"
    return QueueSize(bytes=nbytes, seconds=round(seconds, 9), source=why)


def packets(q: QueueSize, mtu: int, rate_bps_scaled: float = 0.0, hold_s: float = 0.0) -> int:
    """The same bound in frames, for a qdisc that counts packets (netem), plus what its delay
    line holds in flight (netem's limit counts packets still being delayed)."""
    return frames(q.bytes, frame_bytes(mtu), rate_bps_scaled, hold_s)


def frames(queue_bytes: int, frame: int, rate_bps_scaled: float, hold_s: float) -> int:
    """A queue of `queue_bytes` and a delay line of `hold_s` at the rate, in frames of `frame`
    bytes. Pure."""
    in_flight = int(rate_bps_scaled * hold_s / 8 / frame) + 1 if hold_s and rate_bps_scaled else 0
    return max(1, -(-queue_bytes // frame)) + in_flight


# The smallest Ethernet frame: what netem's packet count is taken at where it must never bind.
MIN_FRAME_BYTES = 64


def delay_line_packets(queue_bytes: int, rate_bps_scaled: float, hold_s: float) -> int:
    """netem's limit where it sits under a shaper and a byte FIFO under it holds the queue
    (linklab/linux/tc.py): netem counts every packet it holds, those still being delayed and
    those in the FIFO under it, so its count must not bind before the FIFO's bytes do. Both are
    counted in the smallest frames (ACKs, small datagrams), the delay line at the shaper's rate:
    at worst packets sent faster than the link wait in the delay line past this and are dropped
    there, where the FIFO would have dropped them a delay later. Pure."""
    return frames(queue_bytes, MIN_FRAME_BYTES, rate_bps_scaled, hold_s)
