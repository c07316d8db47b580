"""Figures as data (flent-style): each figure is a PlotSpec (a kind, a metric, options), drawn
by the one renderer for its kind. A reference file may list its own `plots:` (same fields);
otherwise DEFAULT_PLOTS apply, and each is drawn only when the runs have its data.

Rendering is deterministic: matplotlib's Agg backend, a fixed SVG hash salt, no dates or
software names in the files, text kept as text — two renders of the same data are
byte-identical, so reports can be diffed.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.ticker  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

from linklab.errors import UsageError  # noqa: E402
from linklab.fsutil import write_atomic  # noqa: E402
from linklab.published import cpu_model  # noqa: E402
from linklab.published.figures import same  # noqa: E402
from linklab.results import samples  # noqa: E402
from linklab.results.points import Point  # noqa: E402
from linklab.results.runs import Run  # noqa: E402
from linklab.verdict import metrics  # noqa: E402
from linklab.verdict.effect import min_effect  # noqa: E402
from linklab.verdict.model import Judgment  # noqa: E402
from linklab.verdict.stats import describe  # noqa: E402

STYLE = {
    "svg.hashsalt": "linklab", "svg.fonttype": "none", "path.simplify": False,
    "font.family": "DejaVu Sans", "font.size": 9, "axes.grid": True, "grid.alpha": 0.3,
    "figure.dpi": 100, "savefig.dpi": 100, "axes.spines.top": False, "axes.spines.right": False,
}
X_AXES = ("mtu", "length", "mss", "udp_rate")  # numeric axes a line plot can run along
MARKERS = "osD^vP*X"
LINESTYLES = ("-", "--", ":", "-.")


@dataclass(frozen=True)
class PlotSpec:
    id: str
    kind: str                 # lines | heatmap | cdf | shares | timeseries | window | cpu_fit
    metric: str | None = None
    title: str = ""
    x: str | None = None      # lines: the axis along x (default: the first varied of X_AXES; none -> bars)
    logy: bool = False
    max_points: int = 4       # timeseries, window: how many points to draw
    where: dict | None = None  # timeseries, window: draw the points with these axis values (default: chosen, see _chosen)


DEFAULT_PLOTS: tuple[PlotSpec, ...] = (
    PlotSpec("throughput", "lines", "throughput_mbps", "Throughput"),
    PlotSpec("retransmits", "lines", "retrans_per_gb", "TCP retransmits per GB sent"),
    PlotSpec("cwnd", "lines", "cwnd_ms", "Congestion window, as time at the measured rate"),
    PlotSpec("tcp_rtt", "lines", "tcp_rtt_ms", "TCP RTT under load (iperf3)"),
    PlotSpec("cpu_cores", "heatmap", None, "Per-core CPU busy % (core × point)"),
    PlotSpec("cpu_iperf3", "lines", "sender_cpu_pct", "Sender iperf3 CPU"),
    PlotSpec("cpu_iperf3_rx", "lines", "receiver_cpu_pct", "Receiver iperf3 CPU"),
    PlotSpec("cpu_fit", "cpu_fit", None, "Busiest core vs packet rate, with the fitted model"),
    PlotSpec("members", "shares", None, "Per-member share of the bond's transmitted bytes (sender)"),
    PlotSpec("ping_rtt", "cdf", None, "Ping RTT distribution"),
    PlotSpec("jitter", "lines", "jitter_ms", "UDP jitter"),
    PlotSpec("udp_loss", "lines", "lost_percent", "UDP loss"),
    PlotSpec("intervals", "timeseries", None, "Throughput over time (iperf3 intervals)"),
    PlotSpec("window", "window", None, "Latency under load and each flow's goodput over the window"),
)


@dataclass
class Source:
    """One run's points as the figures see them; tag tells runs apart on a multi-run page."""
    tag: str
    run: Run
    points: list[Point]
    link_bps: float | None = None


@dataclass
class Figure:
    id: str
    title: str
    svg: bytes
    png: bytes
    caption: str = ""


def specs_from(ref: dict[str, Any] | None) -> list[PlotSpec]:
    given = (ref or {}).get("plots")
    if not given:
        return list(DEFAULT_PLOTS)
    names = {f.name for f in fields(PlotSpec)}
    out = []
    for i, p in enumerate(given):
        bad = set(p) - names
        if bad or "id" not in p or "kind" not in p:
            raise UsageError(f"plots[{i}]: needs id and kind; unknown fields {sorted(bad)} (valid: {sorted(names)})")
        if p["kind"] not in RENDERERS:
            raise UsageError(f"plots[{i}]: unknown kind {p['kind']!r} (valid: {', '.join(RENDERERS)})")
        out.append(PlotSpec(**p))
    return out


def render_all(specs: list[PlotSpec], sources: list[Source]) -> list[Figure]:
    figs = []
    with matplotlib.rc_context(STYLE):
        for spec in specs:
            fig = RENDERERS[spec.kind](spec, sources)
            if fig is None:
                continue  # the runs have no data for it
            caption = getattr(fig, "_linklab_caption", "")
            figs.append(Figure(spec.id, spec.title, _save(fig, "svg"), _save(fig, "png"), caption))
            plt.close(fig)
    return figs


def _save(fig, fmt: str) -> bytes:
    buf = io.BytesIO()
    meta = {"Date": None, "Creator": None} if fmt == "svg" else {"Software": None}
    fig.savefig(buf, format=fmt, metadata=meta, bbox_inches="tight")
    return buf.getvalue()


# -- helpers ---------------------------------------------------------------------------------

def _x_axis(spec: PlotSpec, sources: list[Source]) -> str | None:
    if spec.x:
        return spec.x
    for a in X_AXES:
        for s in sources:
            vals = {str(p.axes.get(a)) for p in s.points if a in p.axes}
            if len(vals) > 1 and all(metrics.num(p.axes.get(a)) is not None for p in s.points):
                return a
    return None


def _dodge(k: int, n: int) -> float:
    """Series k of n side by side around each x (a log axis: a small factor), so error bars do not
    hide each other."""
    return 1 + 0.015 * (k - (n - 1) / 2)


def _series_label(p: Point, x: str | None) -> str:
    return " ".join(t for a, t in p.labels.items() if a != x) or "all"


def _tag(src: Source, label: str, many: bool) -> str:
    return f"{src.tag}: {label}" if many else label


def _scale_axis(ax, metric: metrics.Metric, sources: list[Source]) -> None:
    """A right-hand axis with the original links' scale, when the rate was scaled."""
    scales = {s.run.scale for s in sources}
    if metric.scaled and len(scales) == 1 and (scale := scales.pop()) not in (0, 1):
        sec = ax.secondary_yaxis("right", functions=(lambda v, k=scale: v / k, lambda v, k=scale: v * k))
        sec.set_ylabel(f"{metric.title} on the original links (÷ {scale:g})")


def _new(title: str, width: float = 7.0, height: float = 3.6):
    fig, ax = plt.subplots(figsize=(width, height))
    ax.set_title(title)
    return fig, ax


# -- renderers -------------------------------------------------------------------------------

def _lines(spec: PlotSpec, sources: list[Source]):
    metric = metrics.BY_KEY.get(spec.metric or "")
    if metric is None:
        raise UsageError(f"plot {spec.id}: unknown metric {spec.metric!r} (valid: {', '.join(metrics.BY_KEY)})")
    if not any(metric.get(r) is not None for s in sources for p in s.points for r in p.ok):
        return None
    x = _x_axis(spec, sources)
    many = len(sources) > 1
    fig, ax = _new(spec.title or metric.label)
    if x:
        # Colours follow the matrix order of every series, drawn or not, so one series keeps its
        # colour across figures (retransmits has no UDP series, throughput does).
        # With several runs, a series keeps its colour and each run has its own line style.
        order: list[str] = []
        for src in sources:
            for p in src.points:
                if _series_label(p, x) not in order:
                    order.append(_series_label(p, x))
        for si, src in enumerate(sources):
            series: dict[str, list[tuple[float, float, float]]] = {}
            rings: list[tuple[float, float, str]] = []  # (x, mean, series) of flagged points
            for p in src.points:
                st = describe([v for r in p.ok if (v := metric.get(r)) is not None])
                xv = metrics.num(p.axes.get(x))
                if st is None or xv is None:
                    continue
                err = st.half_width if st.n > 1 and not math.isnan(st.half_width) else 0.0
                series.setdefault(_series_label(p, x), []).append((xv, st.mean, err))
                if p.flags:
                    rings.append((xv, st.mean, _series_label(p, x)))
            for label, pts in series.items():
                pts.sort()
                i = order.index(label)
                # Every metric here is non-negative: an interval is not drawn below zero.
                yerr = [[min(p[2], max(p[1], 0.0)) for p in pts], [p[2] for p in pts]]
                dodge = _dodge(i * len(sources) + si, len(order) * len(sources))
                ax.errorbar([p[0] * dodge for p in pts], [p[1] for p in pts], yerr=yerr, capsize=3, color=f"C{i % 10}",
                            marker=MARKERS[i % len(MARKERS)], linestyle=LINESTYLES[si % len(LINESTYLES)],
                            label=_tag(src, label, many))
            if rings:  # disturbed points (core saturated, unasked drops, busy host): a red ring
                xs = [xv * _dodge(order.index(lab) * len(sources) + si, len(order) * len(sources))
                      for xv, _, lab in rings]
                ax.scatter(xs, [m for _, m, _ in rings], s=160, facecolors="none", edgecolors="red", linewidths=1.5,
                           zorder=5, label="flagged (see Flags)" if si == 0 else None)
        ax.set_xscale("log")
        ticks = sorted({metrics.num(p.axes.get(x)) for s in sources for p in s.points if p.axes.get(x) is not None})
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{t:g}" for t in ticks])
        ax.minorticks_off()
        ax.set_xlabel({"mtu": "interface MTU (bytes)", "length": "iperf3 write length -l (bytes)",
                       "mss": "iperf3 MSS -M (bytes)"}.get(x, x))
    else:
        labels, means, errs, colors = [], [], [], []
        for si, src in enumerate(sources):
            for p in src.points:
                st = describe([v for r in p.ok if (v := metric.get(r)) is not None])
                if st is None:
                    continue
                labels.append(("⚑ " if p.flags else "") + _tag(src, p.label, many))
                means.append(st.mean)
                errs.append(st.half_width if st.n > 1 and not math.isnan(st.half_width) else 0.0)
                colors.append(f"C{si}")
        ax.barh(range(len(labels)), means, xerr=[[min(e, max(m, 0.0)) for e, m in zip(errs, means)], errs], capsize=3,
                color=colors)
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels)
        ax.invert_yaxis()
        ax.set_xlabel(metric.title)
        fig.set_size_inches(7.0, 1.2 + 0.28 * len(labels))
        if metric.scaled and len({s.run.scale for s in sources}) == 1 and (k := sources[0].run.scale) not in (0, 1):
            sec = ax.secondary_xaxis("top", functions=(lambda v, k=k: v / k, lambda v, k=k: v * k))
            sec.set_xlabel(f"on the original links (÷ {k:g})")
        fig._linklab_caption = "Mean over repetitions; error bars: 95 % confidence interval (Student's t)."
        return fig
    if spec.logy:
        # symlog, not log: a zero (E3's collapse to 0 bit/s) must stay on the figure
        lows = [y for line in ax.get_lines() for y in line.get_ydata() if y > 0]
        ax.set_yscale("symlog", linthresh=min(lows) if lows else 1.0)
    ax.set_ylim(bottom=0)
    ax.set_ylabel(metric.title)
    if not spec.logy:  # a linear secondary axis would misread a log one
        _scale_axis(ax, metric, sources)
    ax.legend(fontsize=7, loc="best")
    fig._linklab_caption = "Mean over repetitions; error bars: 95 % confidence interval (Student's t)."
    return fig


def _heatmap(spec: PlotSpec, sources: list[Source]):
    many = len(sources) > 1
    cols, cores = [], set()
    for src in sources:
        for p in src.points:
            per_core: dict[str, list[float]] = {}
            for r in p.ok:
                for c, v in metrics.core_busy(r).items():
                    per_core.setdefault(c, []).append(v)
            if per_core:
                cols.append((_tag(src, p.label, many), {c: sum(v) / len(v) for c, v in per_core.items()}))
                cores |= set(per_core)
    if not cols:
        return None
    core_list = sorted(cores, key=int)
    grid = [[col[1].get(c, float("nan")) for col in cols] for c in core_list]
    fig, ax = _new(spec.title, width=max(5.0, 1.0 + 0.55 * len(cols)), height=1.6 + 0.45 * len(core_list))
    im = ax.imshow(grid, aspect="auto", cmap="viridis", vmin=0, vmax=100)
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            if not math.isnan(v):
                ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=7, color="white" if v < 60 else "black")
    ax.set_yticks(range(len(core_list)))
    ax.set_yticklabels([f"core {c}" for c in core_list])
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels([c[0] for c in cols], rotation=60, ha="right", fontsize=7)
    ax.grid(False)
    fig.colorbar(im, ax=ax, label="busy % (mean over repetitions)")
    fig._linklab_caption = ("Each core's busy time during the measurement window. Sender and receiver share the "
                            "lab's kernel, so a core's load is both sides' (per-side iperf3 CPU is plotted separately).")
    return fig


def _cdf(spec: PlotSpec, sources: list[Source]):
    many = len(sources) > 1
    fig, ax = _new(spec.title)
    drawn = 0
    for si, src in enumerate(sources):
        for p in src.points:
            rtts = sorted(samples.ping_rtts(src.run.path, p.ok))
            if not rtts:
                continue
            ys = [(i + 1) / len(rtts) for i in range(len(rtts))]
            ax.step(rtts, ys, where="post", linestyle=LINESTYLES[si % len(LINESTYLES)], label=_tag(src, p.label, many))
            drawn += 1
    if not drawn:
        plt.close(fig)
        return _rtt_box(spec, sources)
    ax.set_xscale("log")
    ax.set_xlabel("ping RTT (ms)")
    ax.set_ylabel("fraction of replies ≤ RTT")
    ax.legend(fontsize=7, loc="lower right")
    fig._linklab_caption = "Every ping reply of every repetition (idle path before the throughput test)."
    return fig


def _rtt_box(spec: PlotSpec, sources: list[Source]):
    """Without per-reply samples (a trimmed run): min / median / p95 / max per point."""
    many = len(sources) > 1
    stats, labels = [], []
    for src in sources:
        for p in src.points:
            def m(key: str) -> float | None:
                vals = [v for r in p.ok if (v := metrics.num(r.get(key))) is not None]
                return sum(vals) / len(vals) if vals else None
            q = [m("ping_rtt_min_ms"), m("ping_rtt_p50_ms"), m("ping_rtt_p95_ms"), m("ping_rtt_max_ms")]
            if None in q:
                continue
            stats.append({"whislo": q[0], "q1": q[1], "med": q[1], "q3": q[2], "whishi": q[3], "fliers": []})
            labels.append(_tag(src, p.label, many))
    if not stats:
        return None
    fig, ax = _new(spec.title + " (min, median, p95, max)")
    ax.bxp(stats, orientation="horizontal", showfliers=False)
    ax.set_yticks(range(1, len(labels) + 1))
    ax.set_yticklabels(labels)
    ax.set_xlabel("ping RTT (ms)")
    fig.set_size_inches(7.0, 1.2 + 0.3 * len(labels))
    return fig


def _shares(spec: PlotSpec, sources: list[Source]):
    many = len(sources) > 1
    bars = []
    members: list[str] = []
    prefix = "client_member_tx_share_"
    for src in sources:
        for p in src.points:
            acc: dict[str, list[float]] = {}
            for r in p.ok:
                for k, v in r.items():
                    if k.startswith(prefix) and (x := metrics.num(v)) is not None:
                        acc.setdefault(k[len(prefix):], []).append(x)
            if acc:
                bars.append((_tag(src, p.label, many), {m: sum(v) / len(v) for m, v in acc.items()}))
                members += [m for m in acc if m not in members]
    if not bars:
        return None
    fig, ax = _new(spec.title, height=1.2 + 0.28 * len(bars))
    left = [0.0] * len(bars)
    for i, m in enumerate(sorted(members)):
        vals = [b[1].get(m, 0.0) for b in bars]
        ax.barh(range(len(bars)), vals, left=left, label=m, color=f"C{i}")
        left = [a + b for a, b in zip(left, vals)]
    ax.set_yticks(range(len(bars)))
    ax.set_yticklabels([b[0] for b in bars])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.axvline(0.5, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xlabel("share of the bond's transmitted bytes (sender side)")
    ax.set_title(spec.title, pad=20)
    ax.legend(fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=len(members), frameon=False)
    fig._linklab_caption = "Every run's per-member split is shown: runs whose streams hashed onto one member are kept."
    return fig


def _timeseries(spec: PlotSpec, sources: list[Source]):
    many = len(sources) > 1
    fig, ax = _new(spec.title)
    drawn = 0
    for si, src in enumerate(sources):
        for p in _chosen(src.points, spec.max_points, spec.where):
            for k, series in enumerate(samples.intervals(src.run.path, p.ok)):
                ax.plot([t for t, _ in series], [v / 1e6 for _, v in series], marker=".",
                        linestyle=LINESTYLES[si % len(LINESTYLES)], color=f"C{drawn % 10}",
                        label=_tag(src, p.label, many) if k == 0 else None)
            drawn += 1
    if not ax.lines:
        plt.close(fig)
        return None
    ax.set_xlabel("time since the end of the warm-up (s)")
    ax.set_ylabel("throughput (Mbit/s)")
    ax.legend(fontsize=7, loc="best")
    fig._linklab_caption = ("Chosen points: the fastest and the slowest, the first and the last point of the "
                            "matrix; one line per repetition.")
    return fig


def _window(spec: PlotSpec, sources: list[Source]):
    """flent's view of a repetition (its all_scaled plot): per chosen point, each flow's goodput
    over the window (the receiver's series, up solid and down dashed) beside the latency under
    load (the ping through the window), one row of two panels per point, its first measured
    repetition. Drawn where the runs kept flows' series and a load ping (flows:, ping_load)."""
    many = len(sources) > 1
    panels = []
    for src in sources:
        for p in _chosen(src.points, spec.max_points, spec.where):
            win = next((w for r in p.ok if (w := samples.window(src.run.path, r)) is not None and w["ping"]), None)
            if win is not None:
                panels.append((_tag(src, p.label, many), win))
    if not panels:
        return None
    fig, axes = plt.subplots(len(panels), 2, figsize=(9.0, 2.4 * len(panels) + 0.6), squeeze=False)
    fig.suptitle(spec.title)
    for (label, win), (flows_ax, ping_ax) in zip(panels, axes):
        for i, (name, direction, pts, _) in enumerate(win["flows"]):
            flows_ax.plot([t for t, _ in pts], [v for _, v in pts], color=f"C{i % 10}", linewidth=1,
                          linestyle="-" if direction == "up" else "--", label=f"{name} ({direction})")
        flows_ax.set_ylim(bottom=0)
        flows_ax.set_ylabel("goodput (Mbit/s)")
        flows_ax.set_title(label, fontsize=8, loc="left")
        flows_ax.legend(fontsize=6, loc="lower right", ncol=2)
        ping_ax.plot([t for t, _ in win["ping"]], [v for _, v in win["ping"]], color="black", linewidth=1,
                     marker=".", markersize=2, label="ping (ICMP)")
        if win["udp"]:
            ping_ax.plot([t for t, _ in win["udp"]], [v for _, v in win["udp"]], color="C3", linewidth=1,
                         linestyle="--", label="UDP round trip (irtt)")
        ping_ax.set_ylim(bottom=0)
        ping_ax.set_ylabel("RTT (ms)")
        ping_ax.legend(fontsize=6, loc="lower right")
    for ax in axes[-1]:
        ax.set_xlabel("time since the flows started (s)")
    fig.tight_layout()
    fig._linklab_caption = ("Each chosen point's first measured repetition: every flow's goodput as its receiver "
                            "counted it (solid: up, dashed: down), and the round trips measured beside the flows "
                            "through the whole window, slow start included (the row's figures skip it).")
    return fig


def _chosen(points: list[Point], n: int, where: dict | None = None) -> list[Point]:
    have = [p for p in points if p.ok]
    if where:
        return [p for p in have if all(same(p.axes.get(k), v) for k, v in where.items())][:n]
    if not have:
        return []
    rate: Callable[[Point], float] = lambda p: sum(metrics.num(r.get("throughput_bps")) or 0 for r in p.ok) / len(p.ok)
    out: list[Point] = []
    for p in (max(have, key=rate), min(have, key=rate), have[0], have[-1]):
        if p not in out:
            out.append(p)
    return out[:n]


def _cpu_fit(spec: PlotSpec, sources: list[Source]):
    fig, ax = _new(spec.title)
    any_fit = False
    for si, src in enumerate(sources):
        rows = [r for p in src.points for r in p.ok]
        pts = cpu_model.points(rows)
        if len(pts) < 3:
            continue
        ax.scatter([x for x, _ in pts], [y for _, y in pts], s=14, color=f"C{si}", label=f"{src.tag}: repetitions"
                   if len(sources) > 1 else "repetitions")
        fit = cpu_model.fit_rows(rows)
        if fit:
            xs = [min(x for x, _ in pts), max(x for x, _ in pts)]
            ax.plot(xs, [fit.predict(x) for x in xs], color=f"C{si}",
                    label=f"fit: {fit.alpha:.3g}·R + {fit.beta:.3g} (R² {fit.r2:.2f})")
            any_fit = True
    if not any_fit:
        plt.close(fig)
        return None
    ax.set_xlabel("packets/s R = throughput / (MTU·8) (pkt/s, as measured)")
    ax.set_ylabel("busiest core (% busy)")
    ax.legend(fontsize=7, loc="best")
    return fig


RENDERERS: dict[str, Callable[[PlotSpec, list[Source]], Any]] = {
    "lines": _lines, "heatmap": _heatmap, "cdf": _cdf, "shares": _shares, "timeseries": _timeseries,
    "window": _window, "cpu_fit": _cpu_fit}


RATIO_METRICS = ("throughput_mbps", "tcp_rtt_ms", "retrans_per_gb", "busiest_core_pct", "ping_rtt_ms", "lost_percent")


def ratio_figure(judgments: list[Judgment], keys: tuple[str, ...] = RATIO_METRICS) -> Figure | None:
    """B against A per point, one panel per metric: the effect (B/A, or B - A for a metric in its
    unit) with its interval, the band of the metric's minimum effect shaded, failures in red
    (`judgments`: the verdict's, per point and metric)."""
    declared = [c.metric.key for c in judgments if c.metric is not None and c.metric.key not in metrics.BY_KEY]
    keys = tuple(keys) + tuple(dict.fromkeys(declared))  # an experiment's own metrics: a panel each
    panels = [(k, [c for c in judgments if c.metric is not None and c.metric.key == k]) for k in keys]
    panels = [(k, cs) for k, cs in panels if cs]
    if not panels:
        return None
    labels = list(dict.fromkeys(c.point for _, cs in panels for c in cs))
    with matplotlib.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(panels), figsize=(2.6 * len(panels) + 2.4, 0.32 * len(labels) + 1.4),
                                 sharey=True, squeeze=False)
        for ax, (key, cs) in zip(axes[0], panels):
            m = cs[0].metric
            log = m.scale != "abs"
            tf = math.exp if log else (lambda v: v)
            lim = min_effect(m)
            ax.axvspan(tf(-lim), tf(lim), color="#dddddd", zorder=0)
            ax.axvline(tf(0.0), color="#888888", lw=0.8)
            finite = [x for c in cs for x in (c.low, c.high, c.effect) if math.isfinite(x)]
            span = (min(finite + [-lim]), max(finite + [lim]))
            for c in cs:
                y = labels.index(c.point)
                color = {"FAIL": "#a3171b", "harmless": "#1f5fa8"}.get(c.verdict, "#333333")
                known = math.isfinite(c.low) and math.isfinite(c.high)
                low, high = (c.low, c.high) if known else span  # no interval: dotted across the panel
                ax.plot([tf(low), tf(high)], [y, y], color=color, lw=1.6 if known else 0.8, ls="-" if known else ":")
                ax.plot([tf(c.effect)], [y], "o", color=color, ms=4)
            if log:
                ax.set_xscale("log")
                ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
                ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_title(("B/A " if log else "B − A ") + m.label + ("" if log else f" ({m.unit})"), fontsize=9)
        axes[0][0].set_yticks(range(len(labels)), labels)
        axes[0][0].invert_yaxis()
        fig.tight_layout()
        out = Figure("ab_ratios", "B against A, per point", _save(fig, "svg"), _save(fig, "png"),
                     "Each bar: B/A (or B − A) with its interval; grey: within the metric's minimum effect; red: a "
                     "failed judgment, blue: beyond it on a harmless side; dotted: no interval (nothing in the runs "
                     "says how far the metric moves by chance).")
        plt.close(fig)
    return out


def write(figs: list[Figure], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in figs:
        for ext, data in (("svg", f.svg), ("png", f.png)):
            path = out_dir / f"{f.id}.{ext}"
            write_atomic(path, data)
            paths.append(path)
    return paths
