"""One document, two renderings: the report is built once as a list of blocks (headings,
paragraphs, lists, tables, figures), then written as markdown and as one self-contained HTML
page (figures inlined as data: URIs, CSS inline, no script, nothing fetched)."""

from __future__ import annotations

import base64
import html as h
import math
from dataclasses import dataclass
from typing import Any

from linklab import verdict
from linklab.measure.flags import row_flags
from linklab.published.findings import AGREES, DIFFERS, EXPLAINED
from linklab.report import columns
from linklab.report.contents import Report, RunReport
from linklab.results.points import Point
from linklab.verdict import metrics
from linklab.verdict.stats import describe


@dataclass
class Block:
    kind: str            # h1 h2 h3 p ul table figure details topology
    content: Any = None
    header: list[str] | None = None
    cls: str = ""


# -- the document ------------------------------------------------------------------------------

def document(rep: Report) -> list[Block]:
    b: list[Block] = []
    names = ", ".join(r.run.name for r in rep.runs)
    first = rep.runs[0].run.manifest
    title = (f"{first.get('experiment')}{' (quick)' if first.get('quick') else ''}: run {first.get('run')}"
             if len(rep.runs) == 1 else f"Runs {names}")
    b.append(Block("h1", title))
    if first.get("description"):
        b.append(Block("p", first["description"]))
    b += provenance(rep)
    b += rep.preface
    drawn = topologies(rep)
    if drawn:
        b.append(Block("h2", "Topology" if len(drawn) == 1 else "Topologies"))
        b += [Block("topology", d) for d in drawn]
    for run_report in rep.runs:
        if run_report.verdicts:
            b.append(Block("h2", f"Published findings, checked{_of(run_report, rep)}"))
            b.append(Block("table", [[_verdict(v.verdict), v.says, v.measured
                                      + (f"; expected {v.expected}" if v.expected else "")
                                      + (f" — mechanism: {v.mechanism}" if v.mechanism else "")]
                                     for v in run_report.verdicts], ["verdict", "published finding", "linklab measured"]))
    if rep.figures:
        b.append(Block("h2", "Figures"))
        if any(r.run.scale != 1 for r in rep.runs):
            b.append(Block("p", "Rates are shown as measured; where a lab ran at a scale, the other axis gives "
                                "them on the original links' scale (÷ scale)."))
        for f in rep.figures:
            b.append(Block("figure", f))
    for run_report in rep.runs:
        b += published_blocks(run_report, rep)
        b += cpu_model_blocks(run_report, rep)
    for run_report in rep.runs:
        b += point_tables(run_report, rep)
    return b


def verdict_blocks(res: verdict.Result) -> list[Block]:
    """An A/B verdict (docs/verdicts.md) as blocks: the result, its notes, the failed
    judgments, then every judgment (point x metric: A, B, B/A with its interval)."""
    b = [Block("h2", "Verdict: B against A"),
         Block("p", ("✘ " if res.failures else "? " if res.inconclusive else "✔ ") + res.words() + f" (A: {res.a.name}, B: {res.b.name})")]
    if res.notes:
        b.append(Block("ul", res.notes))
    header = ["verdict", "point", "what", "A", "B", "B/A [interval]"]

    def rows(judgments):
        return [[("✘ " if c.verdict == verdict.FAIL else "✔ " if c.verdict == verdict.WITHIN else "– ") + c.verdict,
                 *verdict.row_text(c)] for c in judgments]

    if res.failures or res.inconclusive:
        b.append(Block("table", rows(res.failures + res.inconclusive), header, "points"))
    b.append(Block("details", (f"every judgment ({len(res.judgments)})", Block("table", rows(res.judgments), header, "points"))))
    return b


def topologies(rep: Report) -> list[tuple[Any, str, list[str]]]:
    """Each distinct topology drawing of the report's runs, with its file name under figures/
    and the tags of the runs that measured it (runs that measured the same lab share one)."""
    out: list[tuple[Any, str, list[str]]] = []
    for run_report in rep.runs:
        d = run_report.topology
        if d is None:
            continue
        same = next((tags for seen, _, tags in out if seen.svg == d.svg), None)
        if same is not None:
            same.append(run_report.tag)
        else:
            out.append((d, "topology.svg" if not out else f"topology-{run_report.tag or len(out)}.svg", [run_report.tag]))
    return out


def _topology_caption(drawing: Any, tags: list[str]) -> str:
    named = [t for t in tags if t]
    return (f"{', '.join(named)}: " if named else "") + drawing.caption


def _of(run_report: RunReport, rep: Report) -> str:
    return f" — {run_report.tag}: {run_report.run.name}" if len(rep.runs) > 1 else ""


def _verdict(v: str) -> str:
    return {AGREES: "✔ agrees", DIFFERS: "✘ differs", EXPLAINED: "◐ explained"}.get(v, "– " + v)


def provenance(rep: Report) -> list[Block]:
    rows: list[tuple[str, list[str]]] = []

    def add(label: str, fn) -> None:
        rows.append((label, [fn(run_report) for run_report in rep.runs]))

    def m(run_report, key, default="?"):
        v = run_report.run.manifest.get(key)
        return default if v in (None, "") else v

    add("experiment", lambda report: f"{m(report, 'experiment')}{' (quick variant)' if m(report, 'quick', False) else ''}")
    add("run", lambda report: f"{report.run.path}")
    add("kernel", lambda report: f"{m(report, 'kernel')} ({m(report, 'machine')})")
    add("where", lambda report: report.run.placement.replace("vm (tcg)", "lab VM, software emulation (TCG)")
        .replace("vm (kvm)", "lab VM, KVM"))
    add("scale", lambda report: f"{report.run.scale:g}"
        + (f" ({m(report, 'scale_source')})" if m(report, 'scale_source', '') else "")
        + (" — rates are 1/scale below the original links'" if report.run.scale != 1 else ""))
    add("tools", lambda report: ", ".join(f"{k} {v}" for k, v in (m(report, 'tool_versions', {}) or {}).items())
        + f"; linklab {m(report, 'linklab')}")
    add("experiment file",
        lambda report: f"{m(report, 'experiment_file')} sha256 {str(m(report, 'experiment_sha256'))[:12]}")
    add("topology file", lambda report: f"{m(report, 'topology_file')} sha256 {str(m(report, 'topology_sha256'))[:12]}")
    add("lab overrides", lambda report: ", ".join(map(str, m(report, 'lab_overrides', []) or [])) or "none")
    add("repetitions", lambda report: _reps(report))
    add("started / finished", lambda report: f"{m(report, 'created_at')} / {m(report, 'finished_at', 'not finished')}")
    add("iperf3 streams", lambda report: str(m(report, 'streams_note', '')))
    header = ["", *(run_report.tag or "run" for run_report in rep.runs)] if len(rep.runs) > 1 else ["provenance", ""]
    out = [Block("table", [[label, *vals] for label, vals in rows], header, cls="prov")]
    for run_report in rep.runs:
        fails = [r for p in run_report.points for r in p.rows if r not in p.ok]
        if fails:
            out.append(Block("p", f"Failed repetitions{_of(run_report, rep)}: " + "; ".join(
                f"{_point_of(run_report, r)} rep {r.get('rep')}: {r.get('error') or 'pre-flight failed'}" for r in fails[:10])
                + (f" … and {len(fails) - 10} more" if len(fails) > 10 else "")))
    return out


def _reps(run_report: RunReport) -> str:
    n, want = len(run_report.run.rows), run_report.run.expected_reps
    failed = sum(p.failed for p in run_report.points)
    manifest = run_report.run.manifest
    text = f"{n} of {want} recorded ({manifest.get('repetitions')} per point × {manifest.get('points')} points)"
    text += f", {failed} failed" if failed else ", none failed"
    if not run_report.run.manifest.get("complete"):
        text += " — run incomplete: `linklab sweep` with the same experiment resumes it"
    return text


def _point_of(run_report: RunReport, row: dict[str, Any]) -> str:
    return next((p.label for p in run_report.points if row in p.rows), str(row.get("point_id")))


def _fmt(v: float | None, fmt: str) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)


def published_blocks(run_report: RunReport, rep: Report) -> list[Block]:
    if run_report.reference is None:
        name = run_report.run.manifest.get("reference")
        return [Block("p", f"(reference {name} not found at {run_report.reference_path}: no comparison)")] if name else []
    pub = run_report.published
    src = run_report.reference.get("source") or (run_report.reference_path.name if run_report.reference_path else "")
    out = [Block("h2", f"Beside the published figures ({src}){_of(run_report, rep)}")]
    unscaled = bool(run_report.reference.get("rates_unscaled"))
    scale = 1.0 if unscaled else run_report.run.scale
    if unscaled and run_report.run.scale != 1:
        out.append(Block("p", f"The published figures were bound by CPU and the controller, not by a link: rates are "
                              f"compared as measured, not divided by the lab's scale ({run_report.run.scale:g})."))
    if pub and pub.comparisons:
        rows = []
        for c in pub.comparisons:
            st = c.linklab
            rows.append([" ".join(f"{k}={v}" for k, v in c.point.items()), f"{c.quantity} ({c.unit})",
                         ("~" if c.approx else "") + f"{c.published:.4g}",
                         st.text(".4g") if st else "-", f"{st.n}" if st else "0",
                         _fmt(c.on_original_scale, ".4g") if st else "-",
                         f"{c.of_link[0]:.2f} / {c.of_link[1]:.2f}" if c.of_link else "",
                         _fmt(c.ratio, ".2f"), c.note])
        out.append(Block("table", rows, ["published point", "quantity", "published", "linklab (mean ±95 % CI)", "n",
                                         f"linklab on the original scale (÷{scale:g})" if scale != 1 else "linklab",
                                         "of one link: linklab / published", "ratio", "note"]))
        out.append(Block("p", "Ratio = linklab (on the original links' scale) ÷ published. Retransmits are compared "
                              "per GB sent and cwnd as the time one window takes at the measured rate, so the "
                              "scale and test duration cancel out."))
    if pub and pub.relative:
        out.append(Block("table", [[" ".join(f"{k}={v}" for k, v in r.point.items()), r.what, f"{r.linklab:.3f}",
                                    f"{r.published:.3f}", f"{r.linklab / r.published:.2f}"] for r in pub.relative],
                         ["selection", "ratio", "linklab", "published", "linklab ÷ published"]))
    if pub and pub.unmatched:
        out.append(Block("details", ("Published entries not compared with this run",
                                     Block("table", [[" ".join(f"{k}={v}" for k, v in u.point.items()) or "-", u.reason]
                                                     for u in pub.unmatched], ["published entry", "why not"]))))
    return out


def cpu_model_blocks(run_report: RunReport, rep: Report) -> list[Block]:
    model = (run_report.reference or {}).get("cpu_model")
    if not model:
        return []
    out = [Block("h3", f"CPU model: CPU% = α·R + β, R = throughput / (MTU·8){_of(run_report, rep)}")]
    pub = [["published", f"{model['alpha']:.4g}", "", f"{model['beta']:.4g}", "", "", ""]]
    f = run_report.fit
    if f is None:
        out.append(Block("p", "Not fitted: fewer than 3 repetitions with both a packet rate and per-core CPU."))
        out.append(Block("table", pub, ["", "α (% per pkt/s)", "α 95 % CI", "β (%)", "β 95 % CI", "R²", "n"]))
        return out
    rows = [["linklab (this run, rates as measured)", f"{f.alpha:.4g} ±{f.alpha_se:.2g} (se)",
             f"{f.alpha_ci[0]:.3g} … {f.alpha_ci[1]:.3g}", f"{f.beta:.4g} ±{f.beta_se:.2g} (se)",
             f"{f.beta_ci[0]:.3g} … {f.beta_ci[1]:.3g}", f"{f.r2:.3f}", str(f.n)]]
    if run_report.run.scale != 1:
        k = run_report.run.scale
        rows.append([f"linklab, α per original-scale pkt/s (α × {k:g})", f"{f.alpha * k:.4g}",
                     f"{f.alpha_ci[0] * k:.3g} … {f.alpha_ci[1] * k:.3g}", f"{f.beta:.4g}", "", "", ""])
    out.append(Block("table", rows + pub, ["", "α (% per pkt/s)", "α 95 % CI", "β (%)", "β 95 % CI", "R²", "n"]))
    ex = model.get("example") or {}
    if ex.get("packets_per_second"):
        r = float(ex["packets_per_second"]) * run_report.run.scale
        out.append(Block("p", f"Published example: MTU {ex.get('mtu')} at {ex.get('throughput_mbps')} Mbit/s = "
                              f"{ex['packets_per_second']} pkt/s → {ex.get('predicted_pct')} % predicted, "
                              f"{ex.get('measured_pct')} % measured. linklab's fit at the same packet rate scaled "
                              f"by {run_report.run.scale:g} ({r:.0f} pkt/s): {f.predict(r):.1f} %."))
    return out


def point_tables(run_report: RunReport, rep: Report) -> list[Block]:
    rows_all = [r for p in run_report.points for r in p.ok]
    present = [m for m in columns.present(rows_all, metrics.table_of(run_report.run.manifest)) if m.table]
    axes = run_report.run.axes
    out = [Block("h2", f"Per point{_of(run_report, rep)}"),
           Block("p", f"Mean over repetitions ± half-width of the 95 % confidence interval (Student's t); rates as "
                      f"measured (at scale {run_report.run.scale:g}).")]
    flagged = any(p.flags for p in run_report.points)
    if flagged:
        out.append(Block("p", "Points marked ⚑ carry a flag in some repetitions: a disturbance (the emulator's core "
                              "saturated, a queue dropped what no impairment asked for, or the host was busy with "
                              "other work), whose numbers may measure the emulator, not the link; or what held a TCP "
                              "flow below 0.9 of what its path carries (rwnd_limited: the receiver's window, "
                              "sndbuf_limited: the send buffer, cwnd_limited: the congestion window after loss, "
                              "below_theory: nothing the kernel reported). Evidence: the Flags table below; figures "
                              "ring them in red."))
    header = ["point", "reps", *(m.title for m in present), *(["flags"] if flagged else [])]
    body = []
    for p in run_report.points:
        reps = f"{len(p.rows)}" + (f" ({p.failed} failed)" if p.failed else "")
        cells = []
        for m in present:
            st = describe([v for r in p.ok if (v := m.get(r)) is not None])
            cells.append(st.text(m.fmt) if st else "-")
        body.append([("⚑ " if p.flags else "") + p.label, reps, *cells, *([flag_cell(p)] if flagged else [])])
    out.append(Block("table", body, header, cls="points"))
    # Every statistic for every metric in the tables.
    full = []
    for p in run_report.points:
        for m in present:
            st = describe([v for r in p.ok if (v := m.get(r)) is not None])
            if st:
                full.append([p.label, m.title, str(st.n), format(st.mean, m.fmt), _fmt(st.sd, ".3g"),
                             _fmt(st.variance, ".3g"), _fmt(st.ci_low, m.fmt), _fmt(st.ci_high, m.fmt)])
    out.append(Block("details", (f"Statistics: n, mean, sd, variance, 95 % CI per point and metric{_of(run_report, rep)}",
                                 Block("table", full, ["point", "metric", "n", "mean", "sd", "variance",
                                                       "95 % CI low", "95 % CI high"]))))
    others = [c for c in columns.other_columns(rows_all, axes) if c not in {m.key for m in present}]
    if others:
        orows = []
        for p in run_report.points:
            for c in others:
                st = describe([v for r in p.ok if (v := metrics.num(r.get(c))) is not None])
                if st:
                    orows.append([p.label, c, str(st.n), st.text(".4g"), _fmt(st.sd, ".3g")])
        out.append(Block("details", (f"Every other measured column{_of(run_report, rep)}",
                                     Block("table", orows, ["point", "column", "n", "mean ±95 % CI", "sd"]))))
    flags = _flags(run_report)
    if flags:
        out.append(Block("h3", f"Flags raised during measurement{_of(run_report, rep)}"))
        out.append(Block("table", flags, ["point", "rep", "flag", "evidence"]))
    return out


def _flags(run_report: RunReport) -> list[list[str]]:
    """One line per flagged repetition: its flags and their evidence, as the sweep recorded them."""
    out = []
    for p in run_report.points:
        for r in p.ok:
            found = row_flags(r)
            if found:
                out.append([p.label, str(r.get("rep")), ", ".join(found), "; ".join(e for e in found.values() if e)])
    return out


def flag_cell(p: Point) -> str:
    """'core_saturated 2/3' for the per-point table: how many measured repetitions carry a flag."""
    n = len(p.ok)
    return ", ".join(f"{name} {k}/{n}" for name, k in sorted(p.flags.items()))


# -- markdown ----------------------------------------------------------------------------------

def _md_cell(x: Any) -> str:
    return str(x).replace("|", "\\|").replace("\n", " ")


def _md(b: Block) -> str:
    if b.kind in ("h1", "h2", "h3"):
        return "#" * int(b.kind[1]) + " " + b.content
    if b.kind == "p":
        return b.content
    if b.kind == "ul":
        return "\n".join(f"- {x}" for x in b.content)
    if b.kind == "table":
        head = b.header or [""] * len(b.content[0])
        lines = ["| " + " | ".join(map(_md_cell, head)) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(map(_md_cell, r)) + " |" for r in b.content]
        return "\n".join(lines)
    if b.kind == "figure":
        f = b.content
        return f"![{f.title}](figures/{f.id}.svg)" + (f"\n\n*{f.caption}*" if f.caption else "")
    if b.kind == "details":
        summary, inner = b.content
        return f"<details><summary>{summary}</summary>\n\n{_md(inner)}\n\n</details>"
    if b.kind == "topology":
        drawing, name, tags = b.content
        return f"![topology](figures/{name})\n\n*{_topology_caption(drawing, tags)}*"
    raise ValueError(b.kind)


def markdown(rep: Report) -> str:
    return "\n\n".join(_md(b) for b in document(rep)) + "\n"


# -- html --------------------------------------------------------------------------------------

CSS = """
body{font-family:"DejaVu Sans",Arial,sans-serif;font-size:14px;margin:1.5em auto;max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid #ccc;margin-top:1.6em}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.6em 0;font-size:12px}td,th{border:1px solid #ddd;padding:3px 6px;vertical-align:top}
th{background:#f3f3f3;text-align:left}table.points td:first-child{white-space:nowrap}table.prov td:first-child{font-weight:bold}
figure{margin:1em 0;padding:.5em;border:1px solid #eee;display:inline-block;max-width:100%}
figure img,figure.topology svg{max-width:100%;height:auto}figcaption{font-size:12px;color:#555;max-width:700px}
.agrees{color:#176a1c;font-weight:bold}.differs{color:#a3171b;font-weight:bold}.explained{color:#7a5a00;font-weight:bold}.other{color:#666}
details{margin:.6em 0}summary{cursor:pointer;color:#245}
"""


def _html(b: Block) -> str:
    e = h.escape
    if b.kind in ("h1", "h2", "h3"):
        return f"<{b.kind}>{e(b.content)}</{b.kind}>"
    if b.kind == "p":
        return f"<p>{e(b.content)}</p>"
    if b.kind == "ul":
        return "<ul>" + "".join(f"<li>{e(str(x))}</li>" for x in b.content) + "</ul>"
    if b.kind == "table":
        head = "".join(f"<th>{e(str(x))}</th>" for x in b.header) if b.header else ""
        body = []
        for r in b.content:
            cells = []
            for x in r:
                s = str(x)
                cls = ' class="agrees"' if s.startswith("✔") else ' class="differs"' if s.startswith("✘") else \
                    ' class="explained"' if s.startswith("◐") else ' class="other"' if s.startswith("– ") else ""
                cells.append(f"<td{cls}>{e(s)}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        cls = f' class="{b.cls}"' if b.cls else ""
        return f"<table{cls}>" + (f"<thead><tr>{head}</tr></thead>" if head else "") + "<tbody>" + "".join(body) + \
            "</tbody></table>"
    if b.kind == "figure":
        f = b.content
        data = base64.b64encode(f.svg).decode()
        return (f'<figure id="fig-{e(f.id)}"><img alt="{e(f.title)}" src="data:image/svg+xml;base64,{data}">'
                + (f"<figcaption>{e(f.caption)}</figcaption>" if f.caption else "") + "</figure>")
    if b.kind == "details":
        summary, inner = b.content
        return f"<details><summary>{e(summary)}</summary>{_html(inner)}</details>"
    if b.kind == "topology":
        # Inline, not an <img>: its tooltips (everything known of a node or link) work on hover.
        drawing, name, tags = b.content
        return (f'<figure class="topology" id="fig-{e(name[:-4])}">{drawing.svg}'
                f"<figcaption>{e(_topology_caption(drawing, tags))}</figcaption></figure>")
    raise ValueError(b.kind)


def html(rep: Report) -> str:
    blocks = document(rep)
    title = next((b.content for b in blocks if b.kind == "h1"), "linklab report")
    body = "\n".join(_html(b) for b in blocks)
    # CSP: nothing may be fetched; images only from data: URIs inside the page.
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
            "style-src 'unsafe-inline'\">"
            f"<title>{h.escape(title)}</title><style>{CSS}</style></head>\n<body>\n{body}\n</body></html>\n")
