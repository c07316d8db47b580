"""Where everything of a scene goes: deterministic (the same scene, the same coordinates; no
randomness, ties broken by the order the topology declares things), and no two node boxes
overlap by construction.

A component that is one ring is drawn as a circle; one chain snakes in rows; one hub with many
leaves (a star) has them round it. Any other is drawn in layers (as Graphviz's
dot does, much simplified): its centre node (the one nearest to every other; a pair of adjacent
centres, as a dumbbell's two switches or a back-to-back pair, share the top row) on top, then
each node one row below the nearest node above it, so every link joins the same or adjacent
rows. Rows are ordered and placed under their neighbours (down, up, down again), never closer
than a gap; a row of more than WRAP nodes (a star's leaves) wraps into staggered sub-rows.
Links are straight unless a node box is in the way (a link within a row, a ring's chord), or
another link joins the same two nodes: then a curve bends round. Each label slides along its
link to the first place where it covers no node and no other label.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from linklab.graph.scene import GLink, Scene

NAME_FONT, TEXT_FONT, LABEL_FONT = 13, 11, 10
LINE_H = 12  # label line height (LABEL_FONT)
GAP_X, GAP_Y, COMPONENT_GAP, MARGIN = 60, 150, 90, 24
LABEL_ROOM = 50  # beside a link's label, when its link joins two nodes of one row
NODE_H = 42
CTL_H, CTL_GAP = 22, 16  # an OVS switch's controller box, above it
WRAP = 10
SNAKE = 6  # nodes per row of a chain
MEMBER_GAP = 7  # between the lines of a bond's members
PARALLEL_GAP = 30  # between links joining the same two nodes
CAPTION_H = 26


def text_width(text: str, size: float) -> float:
    """An estimate (DejaVu Sans / Arial average advance ~0.6 em), generous so text stays inside."""
    return len(text) * size * 0.62


@dataclass(frozen=True)
class Box:
    x: float  # centre
    y: float
    w: float
    h: float

    def overlaps(self, o: Box, pad: float = 0.0) -> bool:
        return abs(self.x - o.x) * 2 < self.w + o.w + 2 * pad and abs(self.y - o.y) * 2 < self.h + o.h + 2 * pad

    def area_with(self, o: Box) -> float:
        dx = (self.w + o.w) / 2 - abs(self.x - o.x)
        dy = (self.h + o.h) / 2 - abs(self.y - o.y)
        return dx * dy if dx > 0 and dy > 0 else 0.0


@dataclass(frozen=True)
class Path:
    """A quadratic Bézier from p0 to p2 through control c (a straight link has c at the middle)."""

    p0: tuple[float, float]
    c: tuple[float, float]
    p2: tuple[float, float]

    def at(self, t: float) -> tuple[float, float]:
        u = 1 - t
        return (u * u * self.p0[0] + 2 * u * t * self.c[0] + t * t * self.p2[0],
                u * u * self.p0[1] + 2 * u * t * self.c[1] + t * t * self.p2[1])

    def tangent(self, t: float) -> tuple[float, float]:
        dx = 2 * (1 - t) * (self.c[0] - self.p0[0]) + 2 * t * (self.p2[0] - self.c[0])
        dy = 2 * (1 - t) * (self.c[1] - self.p0[1]) + 2 * t * (self.p2[1] - self.c[1])
        n = math.hypot(dx, dy) or 1.0
        return dx / n, dy / n

    def offset(self, d: float) -> Path:
        """The path moved sideways by d (a bond member beside its siblings)."""
        (tx0, ty0), (tx2, ty2) = self.tangent(0), self.tangent(1)
        tm = self.tangent(0.5)
        return Path((self.p0[0] - ty0 * d, self.p0[1] + tx0 * d), (self.c[0] - tm[1] * d, self.c[1] + tm[0] * d),
                    (self.p2[0] - ty2 * d, self.p2[1] + tx2 * d))


@dataclass
class LinkPlace:
    path: Path
    members: list[Path]
    label: Box
    ends: tuple[tuple[float, float], tuple[float, float]]  # where each end's group mark sits
    end_t: tuple[float, float]


@dataclass
class Layout:
    width: float
    height: float
    nodes: dict[str, Box]            # the node's own box
    footprints: dict[str, Box]       # the box with its controller above it
    controllers: dict[str, Box]
    links: list[LinkPlace] = field(default_factory=list)


def node_size(sc: Scene, name: str) -> tuple[float, float]:
    n = sc.node(name)
    lines = [(n.name, NAME_FONT), (n.detail, TEXT_FONT), *((m, TEXT_FONT) for m in n.marks)]
    return max(84.0, max(text_width(t, s) for t, s in lines) + 20), NODE_H + LINE_H * len(n.marks)


def controller_size(sc: Scene, name: str) -> tuple[float, float] | None:
    n = sc.node(name)
    if not n.controller:
        return None
    texts = [n.controller, *n.controller_marks]
    return max(text_width(t, TEXT_FONT) for t in texts) + 16, CTL_H + LINE_H * len(n.controller_marks)


def label_size(link: GLink) -> tuple[float, float]:
    texts = [*link.lines, *(m.label for m in link.members if m.label), *link.problem_lines()]
    return max(text_width(t, LABEL_FONT) for t in texts) + 10, LINE_H * len(texts) + 6


# -- the graph ----------------------------------------------------------------------------------

def _adjacency(sc: Scene) -> dict[str, list[str]]:
    adj: dict[str, list[str]] = {n.name: [] for n in sc.nodes}
    for link in sc.links:
        a, b = link.a.node, link.b.node
        if a != b and b not in adj[a]:
            adj[a].append(b)
            adj[b].append(a)
    order = {n.name: i for i, n in enumerate(sc.nodes)}
    return {k: sorted(v, key=order.__getitem__) for k, v in adj.items()}


def _distances(adj: dict[str, list[str]], sources: list[str]) -> dict[str, int]:
    dist = {s: 0 for s in sources}
    q = deque(sources)
    while q:
        v = q.popleft()
        for w in adj[v]:
            if w not in dist:
                dist[w] = dist[v] + 1
                q.append(w)
    return dist


def _components(adj: dict[str, list[str]]) -> list[list[str]]:
    seen: set[str] = set()
    out = []
    for v in adj:
        if v not in seen:
            comp = list(_distances(adj, [v]))
            seen.update(comp)
            out.append(sorted(comp, key=list(adj).index))
    return out


def _ring(adj: dict[str, list[str]], comp: list[str]) -> list[str] | None:
    """The component's nodes in ring order, if it is exactly one cycle of 4 or more."""
    if len(comp) < 4 or any(len(adj[v]) != 2 for v in comp):
        return None
    ring, prev = [comp[0]], None
    while True:
        nxt = next(w for w in adj[ring[-1]] if w != prev)
        if nxt == comp[0]:
            break
        prev = ring[-1]
        ring.append(nxt)
    return ring if len(ring) == len(comp) else None


def _star(adj: dict[str, list[str]], comp: list[str]) -> tuple[str, list[str]] | None:
    """(hub, leaves) if the component is one hub with more leaves than a row holds, and nothing else."""
    hub = max(comp, key=lambda v: (len(adj[v]), -comp.index(v)))
    leaves = [v for v in comp if v != hub]
    if len(leaves) <= WRAP or len(adj[hub]) != len(leaves) or any(len(adj[v]) != 1 for v in leaves):
        return None
    return hub, leaves


def _chain(adj: dict[str, list[str]], comp: list[str]) -> list[str] | None:
    """The component's nodes in order along it, if it is one chain (a path, no branches)."""
    ends = [v for v in comp if len(adj[v]) <= 1]
    if any(len(adj[v]) > 2 for v in comp) or not ends:
        return None
    chain, prev = [ends[0]], None
    while True:
        nxt = [w for w in adj[chain[-1]] if w != prev]
        if not nxt:
            return chain
        prev = chain[-1]
        chain.append(nxt[0])


def _snake(chain: list[str], sizes, label_w: dict[frozenset, float]) -> dict[str, tuple[float, float]]:
    """A chain left to right, SNAKE nodes a row, the next row back right to left."""
    pitch = max(max(sizes[v][0] for v in chain) + max(label_w[frozenset(p)] for p in zip(chain, chain[1:]))
                + 2 * LABEL_ROOM, 120)
    tallest = max(sizes[v][1] for v in chain)
    out = {}
    for k, v in enumerate(chain):
        r, c = divmod(k, SNAKE)
        # Bottom-aligned: the node boxes of a row line up, a controller above rises out of it.
        out[v] = ((SNAKE - 1 - c if r % 2 else c) * pitch, r * (tallest + GAP_Y) + tallest - sizes[v][1] / 2)
    return out


def _top_row(adj: dict[str, list[str]], comp: list[str]) -> list[str]:
    ecc = {v: max(_distances(adj, [v]).values()) for v in comp}
    least = min(ecc.values())
    centres = sorted((v for v in comp if ecc[v] == least), key=lambda v: (-len(adj[v]), comp.index(v)))
    first = centres[0]
    pair = [v for v in centres[1:] if v in adj[first]]
    top = [first, pair[0]] if pair and len(centres) == 2 else [first]
    return sorted(top, key=comp.index)


def _rows(adj: dict[str, list[str]], comp: list[str]) -> tuple[list[list[str]], list[int]]:
    """The rows, top first, and each one's place among its layer's sub-rows (0: not wrapped)."""
    dist = _distances(adj, _top_row(adj, comp))
    layers: list[list[str]] = [[] for _ in range(max(dist.values()) + 1)]
    for v in comp:
        layers[dist[v]].append(v)
    # Order each layer by its neighbours in the layer above (barycentre of their places).
    for i in range(1, len(layers)):
        place = {v: k for k, v in enumerate(layers[i - 1])}
        def key(v, place=place):
            up = [place[w] for w in adj[v] if w in place]
            return (sum(up) / len(up) if up else 0.0, comp.index(v))
        layers[i].sort(key=key)
    rows, sub = [], []
    for i, layer in enumerate(layers):
        chunks = _wrapped(layer, layers[i - 1] if i else [], adj)
        rows += chunks
        sub += range(len(chunks))
    return rows, sub


def _wrapped(layer: list[str], above: list[str], adj: dict[str, list[str]]) -> list[list[str]]:
    """A layer of more than WRAP nodes as sub-rows, each node's siblings (the nodes under the same
    first neighbour above) kept together: sub-row k holds the k-th part of every family, so each
    family stays under its parent as a block."""
    if len(layer) <= WRAP:
        return [layer]
    n_rows = math.ceil(len(layer) / WRAP)
    place = {v: k for k, v in enumerate(above)}
    families: list[list[str]] = []
    for v in layer:
        parent = min((place[w] for w in adj[v] if w in place), default=-1)
        if families and families[-1][0] == parent:
            families[-1][1].append(v)
        else:
            families.append((parent, [v]))
    out: list[list[str]] = [[] for _ in range(n_rows)]
    for _, fam in families:
        size = math.ceil(len(fam) / n_rows)
        for k in range(n_rows):
            out[k] += fam[k * size:(k + 1) * size]
    return [row for row in out if row]


def _place_row(row: list[str], want: dict[str, float], widths: dict[str, float], stagger: float,
               gap) -> dict[str, float]:
    """x of each node: as near its wanted x as the order and the gaps allow, the row moved as a
    whole so that it is, on average, where it is wanted."""
    xs: list[float] = []
    for i, v in enumerate(row):
        x = want[v]
        if i:
            x = max(x, xs[-1] + (widths[row[i - 1]] + widths[v]) / 2 + gap(row[i - 1], v))
        xs.append(x)
    shift = sum(x - want[v] for x, v in zip(xs, row)) / len(row)
    return {v: x - shift + stagger for v, x in zip(row, xs)}


def _layered(adj, comp, sizes, label_w: dict[frozenset, float]) -> dict[str, tuple[float, float]]:
    rows, sub = _rows(adj, comp)
    layer_of_row = [sum(1 for s in sub[:i + 1] if s == 0) - 1 for i in range(len(rows))]
    layer = {v: layer_of_row[i] for i, row in enumerate(rows) for v in row}
    # A node takes the room of the labels of its links up: they sit nearer it than its parent,
    # where its siblings' labels would otherwise cover them.
    widths = {v: max([sizes[v][0], *(label_w[frozenset((v, u))] + 12 for u in adj[v] if layer[u] == layer[v] - 1)])
              for v in comp}

    def gap(u: str, v: str) -> float:
        return max(GAP_X, label_w[frozenset((u, v))] + 2 * LABEL_ROOM) if v in adj[u] else GAP_X

    x: dict[str, float] = {}
    # Start: each row packed around 0; then pull every row under its neighbours, down, up, down.
    for row in rows:
        left = 0.0
        for i, v in enumerate(row):
            left += (widths[row[i - 1]] / 2 + gap(row[i - 1], v) + widths[v] / 2) if i else 0.0
            x[v] = left
        for v in row:
            x[v] -= left / 2
    for order in (range(1, len(rows)), range(len(rows) - 2, -1, -1), range(1, len(rows))):
        for i in order:
            row = rows[i]
            want = {}
            for v in row:
                ns = [x[w] for w in adj[v] if abs(layer[w] - layer[v]) == 1]
                want[v] = sum(ns) / len(ns) if ns else x[v]
            # A wrapped layer's odd sub-rows sit half a place aside: links to the row below pass between.
            x.update(_place_row(row, want, widths, (GAP_X / 2 + 20) if sub[i] % 2 else 0.0, gap))
    y, out = 0.0, {}
    for row in rows:
        h = max(sizes[v][1] for v in row)
        for v in row:
            out[v] = (x[v], y + h - sizes[v][1] / 2)  # bottom-aligned, as in _snake
        y += h + GAP_Y
    return out


def _radial(hub: str, leaves: list[str], sizes) -> dict[str, tuple[float, float]]:
    """A hub in the middle of its leaves: its links fan out evenly, none crossing another."""
    return {hub: (0.0, 0.0), **_circle(leaves, sizes)}


def _circle(ring: list[str], sizes) -> dict[str, tuple[float, float]]:
    # Neighbours a chord apart that clears their boxes: a label too long for it goes beside it.
    r = max((max(max(sizes[v]) for v in ring) + 50) / (2 * math.sin(math.pi / len(ring))), 110.0)
    return {v: (r * math.cos(-math.pi / 2 + 2 * math.pi * i / len(ring)),
                r * math.sin(-math.pi / 2 + 2 * math.pi * i / len(ring))) for i, v in enumerate(ring)}


# -- everything placed ----------------------------------------------------------------------------

def layout(sc: Scene) -> Layout:
    adj = _adjacency(sc)
    sizes, ctl = {}, {}
    for n in sc.nodes:
        w, h = node_size(sc, n.name)
        c = controller_size(sc, n.name)
        ctl[n.name] = c
        sizes[n.name] = (max(w, c[0]) if c else w, h + (c[1] + CTL_GAP if c else 0))
    label_w: dict[frozenset, float] = {}
    for link in sc.links:
        pair = frozenset((link.a.node, link.b.node))
        label_w[pair] = max(label_w.get(pair, 0.0), label_size(link)[0])
    placed: dict[str, tuple[float, float]] = {}
    left = MARGIN
    for comp in _components(adj):
        ring = _ring(adj, comp)
        chain = None if ring or len(comp) < 2 else _chain(adj, comp)
        star = None if ring or chain else _star(adj, comp)
        pos = (_circle(ring, sizes) if ring else _snake(chain, sizes, label_w) if chain
               else _radial(*star, sizes) if star else _layered(adj, comp, sizes, label_w))
        x0 = min(p[0] - sizes[v][0] / 2 for v, p in pos.items())
        y0 = min(p[1] - sizes[v][1] / 2 for v, p in pos.items())
        for v, (px, py) in pos.items():
            placed[v] = (px - x0 + left, py - y0 + MARGIN + CAPTION_H)
        left = max(placed[v][0] + sizes[v][0] / 2 for v in comp) + COMPONENT_GAP
    feet = {v: Box(x, y, *sizes[v]) for v, (x, y) in placed.items()}
    nodes, controllers = {}, {}
    for v, f in feet.items():
        w, h = node_size(sc, v)
        nodes[v] = Box(f.x, f.y + f.h / 2 - h / 2, w, h)
        if ctl[v]:
            controllers[v] = Box(f.x, f.y - f.h / 2 + ctl[v][1] / 2, *ctl[v])
    lay = Layout(0, 0, nodes, feet, controllers)
    _route(sc, lay)
    _shift_inside(lay)
    boxes = [*feet.values(), *(p.label for p in lay.links)]
    lay.width = max([b.x + b.w / 2 for b in boxes] + [text_width(sc.caption, TEXT_FONT) + MARGIN]) + MARGIN
    lay.height = max(b.y + b.h / 2 for b in boxes) + MARGIN
    return lay


def _shift_inside(lay: Layout) -> None:
    """Move everything right and down so that no label sticks out past the margin."""
    boxes = [*lay.footprints.values(), *(p.label for p in lay.links)]
    dx = max(0.0, MARGIN - min(b.x - b.w / 2 for b in boxes))
    dy = max(0.0, MARGIN + CAPTION_H - min(b.y - b.h / 2 for b in boxes))
    if not (dx or dy):
        return

    def box(b: Box) -> Box:
        return Box(b.x + dx, b.y + dy, b.w, b.h)

    def pt(p: tuple[float, float]) -> tuple[float, float]:
        return p[0] + dx, p[1] + dy

    def path(p: Path) -> Path:
        return Path(pt(p.p0), pt(p.c), pt(p.p2))

    for d in (lay.nodes, lay.footprints, lay.controllers):
        d.update({k: box(b) for k, b in d.items()})
    lay.links = [LinkPlace(path(p.path), [path(m) for m in p.members], box(p.label), (pt(p.ends[0]), pt(p.ends[1])),
                           p.end_t) for p in lay.links]


def _crosses(path: Path, box: Box, pad: float = 6.0) -> bool:
    for k in range(1, 20):
        px, py = path.at(k / 20)
        if abs(px - box.x) * 2 < box.w + 2 * pad and abs(py - box.y) * 2 < box.h + 2 * pad:
            return True
    return False


def _bent(a: Box, b: Box, bulge: float) -> Path:
    mx, my = (a.x + b.x) / 2, (a.y + b.y) / 2
    dx, dy = b.x - a.x, b.y - a.y
    n = math.hypot(dx, dy) or 1.0
    # Twice the bulge at the control point puts the curve's middle `bulge` away from the chord.
    return Path((a.x, a.y), (mx - dy / n * 2 * bulge, my + dx / n * 2 * bulge), (b.x, b.y))


def _exit_t(path: Path, box: Box, from_start: bool) -> float:
    """The t at which the path leaves `box` (entering it, from the end)."""
    ts = [k / 100 for k in range(101)]
    for t in (ts if from_start else reversed(ts)):
        px, py = path.at(t)
        inside = abs(px - box.x) * 2 < box.w and abs(py - box.y) * 2 < box.h
        if not inside:
            return t
    return 0.5


def _route(sc: Scene, lay: Layout) -> None:
    by_pair: dict[frozenset, list[int]] = {}
    for i, link in enumerate(sc.links):
        by_pair.setdefault(frozenset((link.a.node, link.b.node)), []).append(i)
    labels: list[Box] = []
    obstacles = list(lay.footprints.values())
    for i, link in enumerate(sc.links):
        a, b = lay.nodes[link.a.node], lay.nodes[link.b.node]
        twins = by_pair[frozenset((link.a.node, link.b.node))]
        base = (twins.index(i) - (len(twins) - 1) / 2) * PARALLEL_GAP
        if link.a.node > link.b.node:
            base = -base  # the same side whichever end a link names first
        others = [f for v, f in lay.footprints.items() if v not in (link.a.node, link.b.node)]
        others += [c for v, c in lay.controllers.items() if v in (link.a.node, link.b.node)]
        path = _bent(a, b, base)
        if any(_crosses(path, o) for o in others):
            for bulge in (40, -40, 80, -80, 130, -130, 190, -190, 260, -260):
                cand = _bent(a, b, base + bulge)
                if not any(_crosses(cand, o) for o in others):
                    path = cand
                    break
        k = len(link.members)
        members = [path.offset((j - (k - 1) / 2) * MEMBER_GAP) for j in range(k)] if k > 1 else [path]
        t0, t1 = _exit_t(path, a, True), _exit_t(path, b, False)
        # A bond's ring sits just outside each end's box: ~20 px along, never past a quarter of the way.
        step = min(20 / max(math.dist(path.p0, path.p2), 1.0), (t1 - t0) / 4)
        end_t = (t0 + step, t1 - step)
        w, h = label_size(link)
        best: tuple[float, Box] | None = None
        # On the link first, nearest its middle; then beside it, on either side.
        # (t along the link, side of it: 0 on it, +1 or -1 beside it, then `far` px further out)
        spots = [(t, 0, 0.0) for t in (0.5, 0.4, 0.6, 0.32, 0.68, 0.25, 0.75)]
        spots += [(t, side, far) for far in (0.0, 30.0, 60.0) for t in (0.5, 0.35, 0.65) for side in (1, -1)]
        for t, side, far in spots:
            t = t0 + (t1 - t0) * t
            px, py = path.at(t)
            if side:
                tx, ty = path.tangent(t)
                # Far enough along the normal that the box clears the line, whatever its slope.
                d = (abs(ty) * w + abs(tx) * h) / 2 + 4 + far
                px, py = px - ty * d * side, py + tx * d * side
            box = Box(px, py, w, h)
            cost = sum(box.area_with(o) for o in obstacles) + sum(box.area_with(o) for o in labels)
            if best is None or cost < best[0]:
                best = (cost, box)
            if cost == 0:
                break
        assert best is not None
        labels.append(best[1])
        lay.links.append(LinkPlace(path, members, best[1], (path.at(end_t[0]), path.at(end_t[1])), end_t))
