"""The picture in a small self-contained HTML page: the SVG inline (its tooltips work), a legend
drawn from the same styles, nothing fetched and no script (the report's page rules)."""

from __future__ import annotations

import html as h

from linklab.graph.scene import Scene
from linklab.graph.svg import BAD, BOND, GENERIC, KIND_STYLES, LINK

CSS = """
body{font-family:"DejaVu Sans",Arial,sans-serif;font-size:14px;margin:1.2em;color:#222}
h1{font-size:1.3em}.legend{display:flex;flex-wrap:wrap;gap:.4em 1.4em;margin:.8em 0;font-size:12px;color:#374151}
.legend span{display:inline-flex;align-items:center;gap:.4em}.graph{overflow:auto;border:1px solid #e5e7eb}
"""


def _swatch(inner: str) -> str:
    return f'<svg xmlns="http://www.w3.org/2000/svg" width="34" height="18" viewBox="0 0 34 18">{inner}</svg>'


def _kind(kind: str, words: str) -> str:
    shape, fill, stroke = KIND_STYLES.get(kind, GENERIC)
    if shape == "hexagon":
        body = f'<polygon points="5,1 29,1 33,9 29,17 5,17 1,9" fill="{fill}" stroke="{stroke}"/>'
    else:
        body = (f'<rect x="1" y="1" width="32" height="16" rx="{6 if shape == "rounded" else 1}" fill="{fill}" '
                f'stroke="{stroke}"/>')
    return f"<span>{_swatch(body)}{h.escape(words)}</span>"


def _line(color: str, words: str, dash: str = "", twin: bool = False) -> str:
    ys = (6, 12) if twin else (9,)
    lines = "".join(f'<line x1="1" y1="{y}" x2="33" y2="{y}" stroke="{color}" stroke-width="2"'
                    + (f' stroke-dasharray="{dash}"' if dash else "") + "/>" for y in ys)
    if twin:
        lines += f'<ellipse cx="9" cy="9" rx="3" ry="6" fill="none" stroke="{BOND}"/>'
    return f"<span>{_swatch(lines)}{h.escape(words)}</span>"


def legend(sc: Scene) -> str:
    kinds = [("host", "host (namespace)"), ("container", "container (Docker)"), ("bridge", "Linux bridge"),
             ("ovs", "Open vSwitch, its controller above it")]
    kinds += [(k, f"{k} (no shape of its own yet)") for k in sorted({n.kind for n in sc.nodes} - set(KIND_STYLES))]
    items = [_kind(k, words) for k, words in kinds]
    items += [_line(LINK, "link: name, MTU, rate and delay as written"),
              _line(BOND, "bond: its members, ringed at each bonded end with its name and mode", twin=True)]
    if sc.live:
        items += [_line(BAD, "member or link down / missing, as the kernel reports", "6 4"),
                  _line(BAD, "MTU mismatch between the ends (the label names each)"),
                  _kind("_bad", "node or controller the kernel reports wrong").replace(
                      f'stroke="{GENERIC[2]}"', f'stroke="{BAD}" stroke-dasharray="4 2"')]
    else:
        items.append(_line(BAD, "MTU differing between the ends (the label names each)"))
    return '<div class="legend">' + "".join(items) + "</div>"


def page(sc: Scene, svg: str, title: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; "
            "style-src 'unsafe-inline'\">"
            f"<title>{h.escape(title)}</title><style>{CSS}</style></head>\n<body>\n<h1>{h.escape(title)}</h1>\n"
            f"<p>{h.escape(sc.caption)}. Hover over a node or link for everything known of it.</p>\n"
            f"{legend(sc)}\n<div class=\"graph\">\n{svg}</div>\n</body></html>\n")
