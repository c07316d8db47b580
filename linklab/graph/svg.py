"""A placed scene as SVG text: plain SVG 1.1 with inline styles, no script, nothing fetched, so
it opens the same in a browser, an editor or a report page. Every node and link is a group with
its name in data- attributes and a <title> (the tooltip) holding everything known of it."""

from __future__ import annotations

import math
from xml.sax.saxutils import escape, quoteattr

from linklab.graph.layout import (LABEL_FONT, LINE_H, MARGIN, MEMBER_GAP, NAME_FONT, TEXT_FONT, Box, Layout, LinkPlace,
                                  Path, text_width)
from linklab.graph.scene import GLink, GNode, Scene

SVG_NS = "http://www.w3.org/2000/svg"
FONT = "DejaVu Sans, Arial, Helvetica, sans-serif"

# How each node kind is drawn: (shape, fill, stroke). A kind not named here (a router, until it
# is given a line of its own) is drawn as GENERIC, with its kind name on it.
KIND_STYLES: dict[str, tuple[str, str, str]] = {
    "host": ("rounded", "#dbeafe", "#1d4ed8"),
    "container": ("rounded", "#cffafe", "#0e7490"),
    "bridge": ("square", "#dcfce7", "#15803d"),
    "ovs": ("square", "#ede9fe", "#6d28d9"),
}
GENERIC = ("hexagon", "#f3f4f6", "#374151")
BAD = "#b91c1c"  # what the kernel reports wrong
LINK, BOND = "#4b5563", "#b45309"
END_FONT = 9

# Every rule under the picture's own class: an SVG inlined in a page (linklab report) styles nothing else.
ROOT_CLASS = "linklab-graph"
RULES = [
    f"text{{font-family:{FONT};fill:#111827}}",
    f".name{{font-size:{NAME_FONT}px;font-weight:bold}}", f".detail{{font-size:{TEXT_FONT}px;fill:#374151}}",
    f".caption{{font-size:{TEXT_FONT}px;fill:#4b5563}}", f".lbl{{font-size:{LABEL_FONT}px}}",
    f".end{{font-size:{END_FONT}px;fill:#6b7280;stroke:#ffffff;stroke-width:3px;paint-order:stroke}}",
    f".bad{{fill:{BAD};font-weight:bold}}",
    f".member{{fill:none;stroke:{LINK};stroke-width:2}}", f".bond .member{{stroke:{BOND}}}",
    f".member.down{{stroke:{BAD};stroke-dasharray:6 4}}", f".link.mismatch .member{{stroke:{BAD}}}",
    ".label rect{fill:#ffffff;fill-opacity:.92;stroke:#d1d5db}", f".link.mismatch .label rect{{stroke:{BAD}}}",
    f".group{{fill:none;stroke:{BOND};stroke-width:1.5}}",
]
CSS = "\n".join(f"svg.{ROOT_CLASS} {rule}" for rule in RULES)


def _f(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def _d(p: Path) -> str:
    return f"M{_f(p.p0[0])},{_f(p.p0[1])} Q{_f(p.c[0])},{_f(p.c[1])} {_f(p.p2[0])},{_f(p.p2[1])}"


def _text(x: float, y: float, text: str, cls: str, anchor: str = "middle") -> str:
    return f'<text x="{_f(x)}" y="{_f(y)}" class="{cls}" text-anchor="{anchor}">{escape(text)}</text>'


def _shape(kind: str, b: Box, fill: str, stroke: str, bad: bool) -> str:
    shape = KIND_STYLES.get(kind, GENERIC)[0]
    style = f'fill="{fill}" stroke="{BAD if bad else stroke}" stroke-width="{2.5 if bad else 1.5}"' + (
        ' stroke-dasharray="6 3"' if bad else "")
    x0, y0 = b.x - b.w / 2, b.y - b.h / 2
    if shape == "hexagon":
        k = min(12.0, b.w / 6)
        pts = [(x0 + k, y0), (x0 + b.w - k, y0), (x0 + b.w, b.y), (x0 + b.w - k, y0 + b.h), (x0 + k, y0 + b.h), (x0, b.y)]
        return f'<polygon points="{" ".join(f"{_f(px)},{_f(py)}" for px, py in pts)}" {style}/>'
    rx = 9 if shape == "rounded" else 2
    return f'<rect x="{_f(x0)}" y="{_f(y0)}" width="{_f(b.w)}" height="{_f(b.h)}" rx="{rx}" {style}/>'


def _node(n: GNode, lay: Layout) -> list[str]:
    b = lay.nodes[n.name]
    _, fill, stroke = KIND_STYLES.get(n.kind, GENERIC)
    tip = [f"{n.name}: {n.detail}", *([n.controller] if n.controller else []), *n.marks, *n.controller_marks]
    out = [f'<g class="node kind-{escape(n.kind)}" data-node={quoteattr(n.name)} data-kind={quoteattr(n.kind)}>',
           f"<title>{escape(chr(10).join(tip))}</title>"]
    if n.name in lay.controllers:
        c = lay.controllers[n.name]
        bad = bool(n.controller_marks)
        out.append(f'<line x1="{_f(c.x)}" y1="{_f(c.y + c.h / 2)}" x2="{_f(b.x)}" y2="{_f(b.y - b.h / 2)}" '
                   f'stroke="{BAD if bad else stroke}" stroke-width="1.5" stroke-dasharray="4 3"/>')
        out.append(f'<g class="controller">{_shape("ovs", c, "#faf5ff", stroke, bad)}')
        out.append(_text(c.x, c.y - c.h / 2 + 15, n.controller or "", "detail"))
        out += [_text(c.x, c.y - c.h / 2 + 15 + LINE_H * (k + 1), m, "detail bad")
                for k, m in enumerate(n.controller_marks)]
        out.append("</g>")
    out.append(_shape(n.kind, b, fill, stroke, bool(n.marks)))
    top = b.y - b.h / 2
    out.append(_text(b.x, top + 17, n.name, "name"))
    out.append(_text(b.x, top + 32, n.detail, "detail"))
    out += [_text(b.x, top + 32 + LINE_H * (k + 1), m, "detail bad") for k, m in enumerate(n.marks)]
    out.append("</g>")
    return out


def _group(p: LinkPlace, end: int, k: int) -> tuple[str, tuple[float, float]]:
    """An ellipse round a bond's members at one end; returns it and where its words go."""
    (x, y) = p.ends[end]
    tx, ty = p.path.tangent(p.end_t[end])
    ry = (k - 1) * MEMBER_GAP / 2 + 6
    angle = math.degrees(math.atan2(ty, tx))
    ell = (f'<ellipse class="group" cx="{_f(x)}" cy="{_f(y)}" rx="5" ry="{_f(ry)}" '
           f'transform="rotate({_f(angle)} {_f(x)} {_f(y)})"/>')
    # Beside the ellipse, on the side away from the curve's bend (the label sits on the path).
    return ell, (x - ty * (ry + 10), y + tx * (ry + 10))


def _end_text(x: float, y: float, lines: list[tuple[str, str]], taken: list[Box]) -> list[str]:
    """Words beside a link's end (its interface, or its bond's name and mode), left out where they
    would cover a node, a label or other such words: the link's tooltip has them all the same."""
    box = Box(x, y + (len(lines) - 1) * 5, max(text_width(t, END_FONT) for t, _ in lines) + 2, 11 * len(lines))
    if any(box.overlaps(o) for o in taken):
        return []
    taken.append(box)
    return [_text(x, y + 3 + 10 * j, t, c) for j, (t, c) in enumerate(lines)]


def _link(i: int, link: GLink, p: LinkPlace, taken: list[Box]) -> list[str]:
    cls = "link" + (" bond" if link.bond else "") + (" mismatch" if link.marks else "")
    tip = [*link.lines, *(f"member {m.a} — {m.b}" + (f": {m.label}" if m.label else "")
                          + (f" ({', '.join(m.marks)})" if m.marks else "") for m in link.members),
           *(f"{e.node}: {e.ifname}" + (f" ({e.group})" if e.group else "") + (f" — {', '.join(e.marks)}" if e.marks else "")
             for e in (link.a, link.b)), *link.marks]
    out = [f'<g class="{cls}" id="link-{i}" data-link={quoteattr(link.name)} '
           f'data-ends={quoteattr(link.a.node + " " + link.b.node)}>', f"<title>{escape(chr(10).join(tip))}</title>"]
    for m, path in zip(link.members, p.members):
        out.append(f'<path class="member{" down" if m.marks else ""}" data-member={quoteattr(m.a + " " + m.b)} '
                   f'd="{_d(path)}"/>')
    for k, end in enumerate((link.a, link.b)):
        if end.group:
            ell, (gx, gy) = _group(p, k, len(link.members))
            out.append(ell)
            out += _end_text(gx, gy, [(end.group, "end bad" if end.marks else "end"),
                                      *((mk, "end bad") for mk in end.marks)], taken)
        else:
            (x, y) = p.ends[k]
            tx, ty = p.path.tangent(p.end_t[k])
            out += _end_text(x - ty * 12, y + tx * 12, [(end.ifname, "end")], taken)
    lb = p.label
    lines = [*((t, "lbl" + (" bad" if t.startswith("MTU") and link.marks else "")) for t in link.lines),
             *((m.label, "lbl") for m in link.members if m.label),
             *((mk, "lbl bad") for mk in link.problem_lines())]
    out.append(f'<g class="label"><rect x="{_f(lb.x - lb.w / 2)}" y="{_f(lb.y - lb.h / 2)}" width="{_f(lb.w)}" '
               f'height="{_f(lb.h)}" rx="3"/>')
    out += [_text(lb.x, lb.y - lb.h / 2 + 3 + LINE_H * (j + 1) - 2, t, c) for j, (t, c) in enumerate(lines)]
    out.append("</g></g>")
    return out


def render(sc: Scene, lay: Layout) -> str:
    taken = [*lay.footprints.values(), *(p.label for p in lay.links)]
    w, h = math.ceil(lay.width), math.ceil(lay.height)
    out = [f'<svg xmlns="{SVG_NS}" version="1.1" class="{ROOT_CLASS}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
           f'data-lab={quoteattr(sc.name)} data-live="{"yes" if sc.live else "no"}">',
           f"<title>{escape(sc.caption)}</title>", f"<style>{CSS}</style>",
           f'<rect width="{w}" height="{h}" fill="#ffffff"/>',
           _text(MARGIN, MARGIN, sc.caption, "caption", "start"), '<g class="links">']
    for i, (link, place) in enumerate(zip(sc.links, lay.links)):
        out += _link(i, link, place, taken)
    out.append('</g><g class="nodes">')
    for n in sc.nodes:
        out += _node(n, lay)
    out.append("</g></svg>")
    return "\n".join(out) + "\n"
