"""`linklab graph`: a topology file, or a running lab as the kernel reports it, drawn as SVG (or
an HTML page with a legend). linklab.cli adds the command to its parser."""

from __future__ import annotations

import argparse
from pathlib import Path

from linklab.console import say
from linklab.errors import StateError, UsageError

GRAPH_HELP = """\
examples:
  linklab graph topologies/bond2.yaml               writes ./bond2.svg
  linklab graph topologies/e5_three_receivers.yaml -o e5.html   the picture in a page, with a legend
  linklab graph                                     the lab that is up, as the kernel reports it now
  linklab graph bond2 -o now.svg                    a running lab by name
  linklab graph topologies/bond2.yaml --set 'links[*].mtu=9000'

Nodes are drawn by kind (host, container, Linux bridge, Open vSwitch with its controller; a kind
without a shape of its own as a hexagon with its name); links with their MTU, rate and delay as
the topology writes them; a bond as its members side by side, ringed at each bonded end with its
name and mode. A running lab's picture marks what the kernel reports wrong, from the same data
as `linklab status`: a node's namespace missing, a member or link down, the two ends' MTUs
differing, LACP not aggregated, a controller not connected. Hover for everything known of a
node or link. The layout is deterministic: the same file gives the same SVG.
"""


def add_commands(sub) -> None:
    g = sub.add_parser("graph", help="draw a topology, or a running lab as the kernel reports it (SVG or HTML)",
                       description="Draw a lab: nodes by kind, links with MTU, rate and delay, bonds as their "
                                   "members with the mode; a running lab with what the kernel reports marked.",
                       epilog=GRAPH_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    g.add_argument("target", nargs="?", metavar="LAB|FILE",
                   help="a topology file, or the name of a lab that is up (default: the only lab up)")
    g.add_argument("-o", "--output", metavar="FILE.svg|FILE.html",
                   help="where to write it: .svg for the picture, .html for it in a page with a legend "
                        "(default: ./NAME.svg, NAME the lab's)")
    g.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="a topology file: override a setting first, as `linklab up --set` would (repeatable)")
    g.add_argument("--seed", metavar="ID", help="a topology file with vars: draw this student's variant")
    g.set_defaults(handler=cmd_graph)


def _output(args, name: str) -> Path:
    out = Path(args.output) if args.output else Path.cwd() / f"{name}.svg"
    if out.suffix.lower() not in (".svg", ".html", ".htm"):
        raise UsageError(f"-o {args.output}: write a .svg or an .html file",
                         hint="linklab graph topologies/bond2.yaml -o bond2.svg (or -o bond2.html for a page with a legend)")
    return out


def _target(args) -> tuple[str, str]:
    """("file", path) or ("lab", name) from what the user typed."""
    from linklab import state
    if args.target is None:
        try:
            return "lab", state.default_lab()
        except StateError as e:
            raise StateError(str(e), hint="draw a topology file instead: linklab graph topologies/bond2.yaml") from None
    if Path(args.target).is_file():
        return "file", args.target
    labs = state.all_labs()
    if args.target in labs:
        return "lab", args.target
    raise UsageError(f"{args.target!r} is neither a topology file nor a lab that is up "
                     f"(labs up: {', '.join(labs) or 'none'})",
                     hint="give a topology file (linklab graph topologies/bond2.yaml) or the name of a running lab")


def cmd_graph(args, argv) -> int:
    from linklab import fsutil, kernel, placement
    from linklab.graph import layout, render, scene
    from linklab.graph.page import page
    from linklab.graph.scene import count
    kind, what = _target(args)
    if kind == "lab" and (args.overrides or args.seed is not None):
        raise UsageError("--set and --seed apply to a topology file, not a running lab",
                         hint=f"`linklab set` changes lab {what} in place; then graph it again")
    if kind == "file":
        from linklab import lab
        lab_obj = lab.build_lab(what, lab.parse_overrides(args.overrides), seed=args.seed)
        live, caption = None, None
    else:
        out = _output(args, what)
        if not kernel.in_lab_vm() and placement.lab_is_in_vm(what):
            # The kernel that knows the lab is the VM's: the command runs there, writing where the host sees it.
            placement.require_shared_with_vm(out, "graph file")
            return placement.forward(argv, say=say, boot=False)
        from linklab import lab
        data = lab.status(what)
        from linklab.model.resolved import Lab
        lab_obj, live = Lab.model_validate(data["state"]["resolved"]), data["live"]
        caption = (f"lab {what} as the kernel reports it: {count(lab_obj.nodes, 'node')}, {count(lab_obj.links, 'link')}"
                   + (f"; rates as written, shaped at scale {lab_obj.scale:g}" if lab_obj.scale != 1 else ""))
    out = _output(args, lab_obj.name)
    sc = scene(lab_obj, live, caption)
    svg = render(sc, layout(sc))
    text = svg if out.suffix.lower() == ".svg" else page(sc, svg, f"linklab graph: lab {lab_obj.name}")
    existed = out.exists()
    fsutil.write_atomic(out, text)
    say(f"linklab: graph of lab {lab_obj.name} ({count(lab_obj.nodes, 'node')}, {count(lab_obj.links, 'link')}) "
        f"{'replaced' if existed else 'written to'} {out}")
    if live is not None:
        found = sc.problems()
        say(f"  the kernel reports {len(found)} problem{'s' if len(found) != 1 else ''}" + (" (marked in red):" if found else ""))
        for p in found:
            say(f"    {p}")
    return 0
