"""Resolved impairments -> tc qdiscs on an interface's egress, through pyroute2.

Layouts (chosen in the model, recorded in the state):
  htb + bfifo (default) root htb 1: default class 1:1 (rate), bfifo 10: as its leaf, limited to
                        the queue's bytes (linklab/model/queues.py). Packets stay charged to their
                        socket while queued, so TCP small queues hold a host's sender back, and the
                        byte limit holds whatever GSO packet sizes arrive (delay under load:
                        bench/README.md#queues-and-shapers).
  htb + netem + bfifo   when delay/loss/jitter is asked for at a port that forwards (a router's,
                        a switch's: Qdisc.forwards): netem 10: as htb's leaf, the bfifo 20: under
                        it (10:1), limited to the queue's bytes. netem hands a packet on once its
                        delay is over, so the queue for the shaper forms in the FIFO, in bytes
                        whatever sizes GSO gives packets (netem's own limit counts packets:
                        bounded by it, a router's 20 ms queue held ~110 ms of 11 kB GSO packets).
                        Its limit only covers what it holds, delay line and FIFO, counted in the
                        smallest frames (queues.py).
  htb + netem           the same at a host's own port, without the FIFO: netem orphans packets
                        (no back-pressure), and a byte bound there drops the bursts TCP small
                        queues would have held back; its limit is the queue in frames plus what
                        its delay line holds (Qdisc.queue_holder says why).
  netem only            root netem (rate, delay, ...; `shaper: netem`): limit in frames
  tbf [+ netem]         root tbf 1: (rate, burst, limit = queue bytes), netem 10: under class 1:1
                        and, at a port that forwards, the bfifo 20: under netem, as with htb
  ... + an AQM          (`aqm:`, linklab/model/aqm.py) the discipline takes the FIFO's place, as
                        the leaf 10: of the shaper's class; where netem is there, netem stays at
                        10: and the discipline is its child, 20: under 10:1 (netem hands a packet
                        on once its delay is over; the queue for the shaper then forms in the
                        discipline, where it can act on it)
  AQM only              no rate: the discipline as the root qdisc 1: (netem's child 10: under
                        1:1 where netem is there)
"""

from __future__ import annotations

from typing import Any

from pyroute2.netlink.rtnl.tcmsg.common import tick_in_usec

from linklab import runner
from linklab.linux import aqm
from linklab.model import queues
from linklab.model.resolved import Qdisc

U32_MAX = 2**32 - 1

# Building qdiscs shells out to tc (iproute2): pyroute2 0.9.7 encodes netem's rate wrongly
# (a string rate becomes a float that the kernel rejects with ERANGE; an integer one crashes
# inside pyroute2), and netem's rate is the shaper linklab relies on. Reading back stays on
# netlink (describe below).


def _bit(bps: float) -> str:
    return f"{int(round(bps))}bit"


def _us(seconds: float) -> str:
    return f"{int(round(seconds * 1e6))}us"


def _pct(p: float) -> str:
    return f"{p:g}%"


def netem_args(q: Qdisc, with_rate: bool) -> list[str]:
    args: list[str] = []
    if q.delay_s or q.jitter_s or q.reorder_pct:
        args += ["delay", _us(q.delay_s)]
        if q.jitter_s:
            args.append(_us(q.jitter_s))
    if q.loss_pct:
        args += ["loss", _pct(q.loss_pct)]
    if q.duplicate_pct:
        args += ["duplicate", _pct(q.duplicate_pct)]
    if q.corrupt_pct:
        args += ["corrupt", _pct(q.corrupt_pct)]
    if q.reorder_pct:
        args += ["reorder", _pct(q.reorder_pct)]
    if q.limit:
        args += ["limit", str(q.limit)]
    rate = (q.rate_bps if with_rate else None) or q.order_rate_bps
    if rate:
        args += ["rate", _bit(rate)]
        if q.overhead:
            args.append(str(q.overhead))
    return args


def burst_bytes(q: Qdisc, mtu: int) -> int:
    """The shaper's bucket: resolved into the model (linklab/model/queues.py); computed here for
    labs recorded before it was."""
    return q.burst or queues.bucket_bytes(q.shaper, q.rate_bps or 0.0, mtu)


def plan(q: Qdisc | None, mtu: int, dev: str) -> list[list[str]]:
    """The tc commands that build `q` on `dev` (after its root qdisc was removed). Pure."""
    if q is None:
        return []
    tc = ["tc", "qdisc", "add", "dev", dev]
    if q.shaper in (None, "netem"):
        if not q.aqm:
            return [[*tc, "root", "handle", "1:", "netem", *netem_args(q, with_rate=True)]]
        if not q.needs_netem:
            return [[*tc, "root", "handle", "1:", *aqm.args(q.aqm, q.aqm_params)]]
        return [[*tc, "root", "handle", "1:", "netem", *netem_args(q, with_rate=True)],
                [*tc, "parent", "1:1", "handle", "10:", *aqm.args(q.aqm, q.aqm_params)]]
    burst = str(burst_bytes(q, mtu))
    over = ["overhead", str(q.overhead)] if q.overhead else []
    if q.shaper == "tbf":
        bound = ["limit", str(q.queue_bytes)] if q.queue_bytes else ["latency", "50ms"]
        cmds = [[*tc, "root", "handle", "1:", "tbf", "rate", _bit(q.rate_bps), "burst", burst, *bound, *over]]
    else:
        cmds = [[*tc, "root", "handle", "1:", "htb", "default", "1"],
                ["tc", "class", "add", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", _bit(q.rate_bps),
                 "ceil", _bit(q.rate_bps), "burst", burst, "cburst", burst, *over]]
    # The queue's own stage: the discipline, or the byte FIFO; under netem when netem is there.
    if q.aqm:
        queue = aqm.args(q.aqm, q.aqm_params)
    elif _has_fifo(q):
        queue = ["bfifo", "limit", str(q.queue_bytes)]
    else:
        queue = []
    if q.needs_netem:
        cmds.append([*tc, "parent", "1:1", "handle", "10:", "netem", *netem_args(q, with_rate=False)])
        if queue:
            cmds.append([*tc, "parent", "10:1", "handle", "20:", *queue])
    elif queue:
        cmds.append([*tc, "parent", "1:1", "handle", "10:", *queue])
    return cmds


def _has_fifo(q: Qdisc) -> bool:
    """Whether a byte FIFO holds `q`'s queue under its shaper (htb's leaf, or netem's child
    under htb or tbf; tbf alone bounds its queue itself)."""
    return not q.aqm and bool(q.queue_bytes) and q.queue_holder == "bfifo"


def fifo_limit_change(old: Any, new: list[list[str]]) -> tuple[int, int, int] | None:
    """(handle, parent, limit) when the plan `new` differs from the plan `old` an interface was
    built from only in its byte FIFO's limit (E1's queue at MTU 450 against 1500): that FIFO is
    changed in place, nothing rebuilt. None for any other difference, or a signature of another
    form. Pure."""
    if not (isinstance(old, list) and len(old) == len(new) and new and all(isinstance(c, list) for c in old)):
        return None
    if old[:-1] != new[:-1] or old[-1][:-1] != new[-1][:-1] or old[-1] == new[-1]:
        return None
    last = new[-1]
    if "bfifo" not in last or last[-2] != "limit" or "handle" not in last or "parent" not in last:
        return None
    return (tc_handle(last[last.index("handle") + 1]), tc_handle(last[last.index("parent") + 1]), int(last[-1]))


# Words a discipline takes as a pair of opposites: either one, written out, sets the setting.
TOGGLES = {frozenset(pair) for pair in (("ecn", "noecn"), ("pacing", "nopacing"), ("bytemode", "nobytemode"),
                                        ("dq_rate_estimator", "no_dq_rate_estimator"), ("nat", "nonat"),
                                        ("wash", "nowash"), ("split-gso", "no-split-gso"))}
FIXED_ONCE_MADE = ("flows",)  # fq_codel's and fq_pie's flow table: `tc qdisc change` refuses a new size


def aqm_change(old: Any, new: list[list[str]]) -> list[str] | None:
    """The `tc qdisc change` command (without "tc") when the plan `new` differs from the plan
    `old` an interface was built from only in its queue discipline's parameters, each named in
    both (a value changed, or ecn turned on or off): the discipline is changed in place, nothing
    queued is lost. None for any other difference. Pure."""
    if not (isinstance(old, list) and len(old) == len(new) and new and all(isinstance(c, list) for c in old)):
        return None
    a, b = old[-1], new[-1]
    if old[:-1] != new[:-1] or a == b or len(a) != len(b) or "handle" not in b:
        return None
    kind_at = b.index("handle") + 2
    if b[kind_at] not in aqm.ARGS or a[:kind_at + 1] != b[:kind_at + 1]:
        return None
    for k in range(kind_at + 1, len(b)):
        if a[k] == b[k]:
            continue
        toggled = frozenset((a[k], b[k])) in TOGGLES
        valued = (a[k][:1].isdigit() and b[k][:1].isdigit() and a[k - 1] == b[k - 1]
                  and b[k - 1] not in FIXED_ONCE_MADE and k - 1 > kind_at)
        if not (toggled or valued):
            return None
    return ["qdisc", "change", *b[3:]]


def tc_handle(text: str) -> int:
    """tc's "major:minor" (hexadecimal, minor omitted = 0) as the kernel's 32-bit handle. Pure."""
    major, _, minor = text.partition(":")
    return (int(major or "0", 16) << 16) | int(minor or "0", 16)


def same_structure(old: Qdisc | None, new: Qdisc | None) -> bool:
    """Whether `new` is built of the same qdiscs and classes as `old` (same shaper, same netem
    and FIFO stages), so it can be changed in place. Pure."""
    if old is None or new is None:
        return False
    def stages(q: Qdisc) -> tuple:
        # A discipline is changed in place only with the same parameters named: `tc qdisc change`
        # keeps a parameter it is not given (it would not return to its default), and fq_codel's
        # and fq_pie's number of flows is fixed once made.
        params = tuple(sorted(q.aqm_params)), q.aqm_params.get("flows")
        return (q.shaper in (None, "netem"), q.shaper, q.needs_netem, _has_fifo(q), q.aqm, params if q.aqm else None)
    return stages(old) == stages(new)


def change_plan(old: Qdisc | None, new: Qdisc | None, mtu: int, dev: str) -> list[list[str]] | None:
    """The tc commands that turn `old` into `new` in place (`tc qdisc change` / `tc class change`:
    nothing queued is dropped, the flow keeps going), or None when the structure differs and the
    interface must be rebuilt. Pure."""
    if not same_structure(old, new):
        return None
    # htb's root qdisc has no change operation ("Change operation not supported", measured on
    # 6.1); its only parameter here, the default class, never changes: its class carries the rate.
    return [[*argv[:2], "change", *argv[3:]] for argv in plan(new, mtu, dev)
            if not (argv[1] == "qdisc" and "root" in argv and "htb" in argv)]


def change(netns: str, dev: str, old: Qdisc | None, new: Qdisc | None, mtu: int) -> str:
    """Apply `new` where `old` is, in place when the structure allows (an event mid-window); else
    rebuild (packets queued at that moment are lost: said in the returned text)."""
    cmds = change_plan(old, new, mtu, dev)
    if cmds is None:
        apply_many(netns, [(dev, new, mtu, old is not None)])
        return "rebuilt"
    _run_batch(netns, [" ".join(argv[1:]) for argv in cmds])
    return "changed in place"


def batch_lines(changes: list[tuple[str, Qdisc | None, int, bool]]) -> list[str]:
    """One `tc -batch` script for a namespace's changes (dev, qdisc, mtu, remove the root
    first?). Each line is a plan() command without its leading "tc". Pure."""
    lines = []
    for dev, q, mtu, remove_root in changes:
        if remove_root:
            lines.append(f"qdisc del dev {dev} root")
        lines += [" ".join(argv[1:]) for argv in plan(q, mtu, dev)]
    return lines


def apply_many(netns: str, changes: list[tuple[str, Qdisc | None, int, bool]]) -> None:
    """Every root-qdisc change of one namespace in one tc process (`tc -n NS -batch -`): a
    process costs ~50-100 ms under software emulation, and a lab has several interfaces per
    namespace. tc's own -n enters the namespace (no `ip netns exec`: no /etc/hosts needed).

    A root qdisc is only removed where the caller saw one of ours (`remove_root`): removing the
    kernel's default fails, and a failure must mean something. Without -force, tc stops at the
    first failing line and exits non-zero: the error is raised."""
    _run_batch(netns, batch_lines(changes))


def run_lines(netns: str, lines: list[str]) -> None:
    """Commands built here (without their "tc"), in one tc process in `netns`."""
    _run_batch(netns, lines)


def _run_batch(netns: str, lines: list[str]) -> None:
    """One `tc -n NS -batch -` process for `lines` (plan() commands without their "tc")."""
    if lines:
        runner.run(["tc", "-n", netns, "-batch", "-"], input="\n".join(lines) + "\n", timeout=15 + 2 * len(lines))


def fifo_limit(opts: Any) -> int | None:
    """bfifo's options (struct tc_fifo_qopt: one u32, the limit): pyroute2 0.9.7 does not decode
    them and hands over the raw bytes as a hex string ("e8:03:00:00"). Pure."""
    if hasattr(opts, "get"):
        return opts.get("limit")
    try:
        raw = bytes.fromhex(str(opts).replace(":", "").replace(" ", ""))
    except ValueError:
        return None
    return int.from_bytes(raw[:4], "little") if len(raw) >= 4 else None


def _htb_rate(ipr, index: int) -> dict[str, Any]:
    """htb's rate lives on its class, not the qdisc; reading it is a courtesy for `status`,
    never a reason for inspection to fail."""
    try:
        for cl in ipr.get_classes(index=index):
            copts = cl.get_attr("TCA_OPTIONS")
            parms = copts.get_attr("TCA_HTB_PARMS") if hasattr(copts, "get_attr") else None
            if parms:
                return {"rate_bps": parms["rate"] * 8}
    except Exception:
        pass
    return {}


def describe(ipr, index: int, dump: list | None = None) -> list[dict[str, Any]]:
    """Live qdiscs of an interface, decoded into the units users wrote. `dump`: the namespace's
    qdiscs already dumped once (pyroute2 dumps them all for every `get_qdiscs(index=)`)."""
    out = []
    for qd in (ipr.get_qdiscs(index=index) if dump is None else [q for q in dump if q["index"] == index]):
        kind = qd.get_attr("TCA_KIND")
        item: dict[str, Any] = {"kind": kind, "handle": f"{qd['handle'] >> 16:x}:",
                                "parent": "root" if qd["parent"] == 0xFFFFFFFF else f"{qd['parent'] >> 16:x}:"}
        opts = qd.get_attr("TCA_OPTIONS")
        if kind == "netem" and opts is not None:
            item["delay_ms"] = round(opts["delay"] / tick_in_usec / 1000, 3)
            item["jitter_ms"] = round(opts["jitter"] / tick_in_usec / 1000, 3)
            item["loss_pct"] = round(opts["loss"] / U32_MAX * 100, 4)
            item["limit"] = opts["limit"]
            rate = opts.get_attr("TCA_NETEM_RATE")
            if rate:
                item["rate_bps"] = rate["rate"] * 8
            reorder = opts.get_attr("TCA_NETEM_REORDER")
            if reorder:
                item["reorder_pct"] = round(reorder["prob_reorder"] / U32_MAX * 100, 4)
        elif kind == "tbf" and opts is not None:
            parms = opts.get_attr("TCA_TBF_PARMS")
            if parms:
                item["rate_bps"] = parms["rate"] * 8
                item["limit_bytes"] = parms["limit"]
        elif kind == "bfifo" and opts is not None:
            limit = fifo_limit(opts)
            if limit is not None:
                item["limit_bytes"] = limit
        elif kind == "htb":
            item.update(_htb_rate(ipr, index))
        out.append(item)
    return out
