"""linklab's figures beside the published ones, in comparable units.

A published entry is matched to the run's points by its keys. Every key must name something
the run's rows have (an axis, or a setting recorded in every row such as `streams`), and at
least one key must be an axis of the run: an entry such as `{case: single link}` names nothing
the run varied, so it matches nothing (it is listed as not compared, with the reason). A
reference file may say that a published key is answered by another axis (`match_axes:
{mtu: [mtu, length]}`: E1's "MTU" was the application's write size).

Units: rates are put back on the original links' scale (÷ the run's scale) and also given as a
fraction of one link; retransmits are compared per GB sent (the published count over the
published rate × duration), cwnd as the time it takes to send one window at the measured rate
(cwnd ÷ rate, in ms) — both independent of the scale. Where a conversion lacks an input, the
entry says why instead of comparing raw numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linklab.model.loader import read_yaml
from linklab.results.points import axis_value, canonical
from linklab.results.runs import Run
from linklab.verdict import metrics
from linklab.verdict.stats import Stats, describe

META_KEYS = {"approx", "note"}
PUBLISHED_RATES = {"throughput_mbps": 1e6, "throughput_MBps": 8e6, "throughput_bps": 1.0}


@dataclass
class Comparison:
    point: dict[str, Any]
    quantity: str
    unit: str
    published: float
    linklab: Stats | None = None
    on_original_scale: float | None = None   # linklab's mean ÷ scale (rates), else the mean
    of_link: tuple[float, float] | None = None  # (linklab, published) as fractions of one link
    approx: bool = False
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.on_original_scale is None or not self.published:
            return None
        return self.on_original_scale / self.published


@dataclass
class Unmatched:
    point: dict[str, Any]
    reason: str


@dataclass
class Relative:
    point: dict[str, Any]
    what: str
    linklab: float
    published: float


@dataclass
class Published:
    reference: dict[str, Any]
    comparisons: list[Comparison] = field(default_factory=list)
    unmatched: list[Unmatched] = field(default_factory=list)
    relative: list[Relative] = field(default_factory=list)


def load_reference(path: Path) -> dict[str, Any]:
    """The reference file, read like every input: bounded in size, nesting and aliases; a bad
    file is exit 2 with its path."""
    return read_yaml(path)[0]


def resolve_keys(entry: dict[str, Any], run: Run, ref: dict[str, Any], skip: set[str]) -> tuple[dict[str, str], str | None]:
    """{row key: published key} for an entry, or the reason it names nothing in this run."""
    aliases = ref.get("match_axes") or {}
    keys = {k: v for k, v in entry.items() if k not in skip and k not in META_KEYS}
    rows = run.ok_rows()
    mapping: dict[str, str] = {}
    for k in keys:
        candidates = [a for a in aliases.get(k, [k]) if a in run.axes] or [k]
        col = candidates[0]
        # (an axis may take a null value, e.g. E3's port_mtu: null; a recorded setting may not)
        if not rows or (col not in run.axes and any(axis_value(r, col) is None for r in rows)):
            return {}, f"{k!r} is not an axis or recorded setting of this run"
        mapping[col] = k
    if not any(col in run.axes or col.partition("_")[0] in run.axes for col in mapping):
        return {}, "names no axis of this run (" + (", ".join(f"{k}={v}" for k, v in keys.items()) or "no keys") + ")"
    return mapping, None


def same(a: Any, b: Any) -> bool:
    if a in (None, "") or b in (None, ""):  # a null axis value is recorded as an empty CSV cell
        return a in (None, "") and b in (None, "")
    x, y = metrics.num(a), metrics.num(b)
    if x is not None and y is not None:
        return x == y
    return canonical(a) == canonical(b)


def select(rows: list[dict[str, Any]], mapping: dict[str, str], entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in rows if all(same(axis_value(r, col), entry[k]) for col, k in mapping.items())]


def compare(run: Run, ref: dict[str, Any]) -> Published:
    out = Published(ref)
    rows = run.ok_rows()
    # A reference whose figures no link bounded (E3: CPU and controller) compares rates as measured.
    scale = 1.0 if ref.get("rates_unscaled") else run.scale
    link = metrics.num(ref.get("link_rate_bps"))
    duration = metrics.num(ref.get("duration_s"))
    for section in ("throughput", "runs"):
        for entry in ref.get(section) or []:
            quantities = [q for q in ("throughput_mbps", "throughput_MBps", "throughput_bps", "retransmits", "cwnd_bytes")
                          if q in entry]
            # any other report metric by its key (e.g. E3's ping_rtt_ms, jitter_ms, ping_loss_pct)
            quantities += [q for q in entry if q in metrics.BY_KEY and q not in quantities]
            if not quantities:
                continue
            point = {k: v for k, v in entry.items() if k not in quantities and k not in META_KEYS}
            mapping, why = resolve_keys(entry, run, ref, set(quantities))
            if why:
                out.unmatched.append(Unmatched(point, why))
                continue
            mine = select(rows, mapping, entry)
            if not mine:
                out.unmatched.append(Unmatched(point, "no repetition of this run has these values"))
                continue
            pub_rate = next((float(entry[q]) * PUBLISHED_RATES[q] for q in PUBLISHED_RATES if entry.get(q) is not None), None)
            for q in quantities:
                if entry[q] is None:
                    continue  # the source shows it only in a figure
                c = _one(q, float(entry[q]), mine, point, scale, link, pub_rate, duration)
                c.approx = bool(entry.get("approx"))
                if entry.get("note"):
                    c.note = "; ".join(x for x in (str(entry["note"]), c.note) if x)
                out.comparisons.append(c)
    for entry in ref.get("cpu_highlights") or []:
        point = {k: v for k, v in entry.items() if k not in ("busy_pct", "core") and k not in META_KEYS}
        mapping, why = resolve_keys(point, run, ref, set())
        if why:
            out.unmatched.append(Unmatched(point, why))
            continue
        mine = select(rows, mapping, point)
        st = describe([v for r in mine if (v := metrics.get("busiest_core_pct", r)) is not None])
        if st:
            out.comparisons.append(Comparison(point, f"core {entry.get('core')} busy (linklab: busiest core)", "%",
                                              float(entry["busy_pct"]), st, st.mean,
                                              note="CPU % is not scaled: the lab's cores carried 1/scale less traffic"
                                              if scale != 1 else ""))
    drop = ref.get("udp_drop_pct")
    if isinstance(drop, dict) and drop.get("mean") is not None:
        udp = [r for r in rows if str(axis_value(r, "protocol")) == "udp"]
        st = describe([v for r in udp if (v := metrics.num(r.get("lost_percent"))) is not None])
        if st:
            out.comparisons.append(Comparison({"protocol": "udp"}, "UDP datagrams lost", "%", float(drop["mean"]), st,
                                              st.mean, note=f"published range {drop.get('min')}–{drop.get('max')} %; "
                                                            f"{drop.get('note', '')}".strip("; ")))
        else:
            out.unmatched.append(Unmatched({"protocol": "udp"}, "no UDP repetition in this run"))
    out.relative = _relative(run, ref, rows)
    return out


def _one(q: str, published: float, rows: list[dict[str, Any]], point: dict[str, Any], scale: float,
         link: float | None, pub_rate: float | None, duration: float | None) -> Comparison:
    if q in PUBLISHED_RATES:
        unit_bps = PUBLISHED_RATES[q]
        st = describe([v / unit_bps for r in rows if (v := metrics.num(r.get("throughput_bps"))) is not None])
        unit = {"throughput_mbps": "Mbit/s", "throughput_MBps": "MB/s", "throughput_bps": "bit/s"}[q]
        c = Comparison(point, "throughput", unit, published, st, st.mean / scale if st else None)
        if st and link:
            c.of_link = (st.mean * unit_bps / (link * scale), published * unit_bps / link)
        return c
    if q == "retransmits":
        st = describe([v for r in rows if (v := metrics.get("retrans_per_gb", r)) is not None])
        if pub_rate and duration:
            per_gb = published / (pub_rate * duration / 8 / 1e9)
            return Comparison(point, "retransmits per GB sent", "/GB", per_gb, st, st.mean if st else None,
                              note=f"published {published:.0f} over {duration:g} s at {pub_rate / 1e6:.0f} Mbit/s")
        return Comparison(point, "retransmits (raw count)", "segments", published, None, None,
                          note="not compared: the reference gives no duration to normalise the count by")
    if q == "cwnd_bytes":
        st = describe([v for r in rows if (v := metrics.get("cwnd_ms", r)) is not None])
        if pub_rate:
            return Comparison(point, "cwnd ÷ rate", "ms", published * 8 / pub_rate * 1e3, st, st.mean if st else None,
                              note=f"published cwnd {published / 1e3:.0f} kB at {pub_rate / 1e6:.0f} Mbit/s")
        return Comparison(point, "cwnd (raw)", "bytes", published, None, None,
                          note="not compared: no published rate to express the window in time")
    m = metrics.BY_KEY[q]
    st = describe([v for r in rows if (v := m.get(r)) is not None])
    return Comparison(point, m.label, m.unit, published, st, (st.mean / scale if m.scaled else st.mean) if st else None)


def _relative(run: Run, ref: dict[str, Any], rows: list[dict[str, Any]]) -> list[Relative]:
    """Published ratios such as jumbo_over_normal: the metric at the run's largest MTU over its
    smallest, within the entry's selection. Scale cancels out of a ratio."""
    out = []
    for entry in ref.get("relative") or []:
        if entry.get("metric") != "throughput" or "jumbo_over_normal" not in entry:
            continue
        point = {k: v for k, v in entry.items() if k not in ("metric", "jumbo_over_normal", "note")}
        mapping, why = resolve_keys(point, run, ref, set())
        if why:
            continue
        mine = [r for r in select(rows, mapping, point) if metrics.num(r.get("throughput_bps")) is not None]
        sizes = sorted({s for r in mine if (s := metrics.packet_size(r))})
        if len(sizes) < 2:
            continue

        def mean_at(size: float) -> float:
            vals = [float(r["throughput_bps"]) for r in mine if metrics.packet_size(r) == size]
            return sum(vals) / len(vals)

        out.append(Relative(point, f"throughput MTU {sizes[-1]:g} / MTU {sizes[0]:g}",
                            mean_at(sizes[-1]) / mean_at(sizes[0]), float(entry["jumbo_over_normal"])))
    return out
