"""CLI commands for interop (linklab.cli adds them to its parser; each names its handler):
export, import, and the interactive cli.

export and import are pure: they read files and print, and never need (or boot) the lab VM.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from linklab import DEFAULT_TOPOLOGY, bundled

EXPORT_TARGETS = ("mininet", "containerlab", "flent")


def add_commands(sub) -> None:
    from linklab.interop import CLAB_DEFAULT_IMAGE as DEFAULT_IMAGE
    from linklab.interop import CLAB_FRR_IMAGE

    e = sub.add_parser(
        "export", help="write a topology as a runnable Mininet script or a containerlab topology, or a run's "
                       "repetitions as flent data files",
        description="Translate a topology, as linklab resolves it (addresses, MTUs, qdiscs, bond members), "
                    "into a self-contained Mininet 2.3 script or a containerlab .clab.yml, printed on stdout. "
                    "What the target cannot express is built by commands in the output or listed in its header. "
                    "--to flent reads a run instead: each repetition's time series (every flow's goodput, the "
                    "ping under load, the queues) as a flent data file (.flent.gz), one per repetition, in "
                    "RUN/flent or -o DIR.",
        epilog="examples:\n"
               "  linklab export --to mininet topologies/bond2.yaml > bond2_mn.py\n"
               "  sudo python3 bond2_mn.py            # Mininet's CLI on the same lab (--test: pingall, exit 1 on loss)\n"
               "  linklab export --to mininet --scale 0.1 topologies/bond2.yaml   # rates as linklab runs them under TCG\n"
               "  linklab export --to containerlab topologies/bond2.yaml > bond2.clab.yml\n"
               "  containerlab deploy -t bond2.clab.yml\n"
               "  linklab export --to containerlab ospf3 -o ospf3.clab.yml   # + ospf3-frr/<router>/{daemons,frr.conf}\n"
               "  linklab export --to flent results/bufferbloat/20261202-101500 -o flent/\n"
               "  flent -i flent/rrul_be-*.flent.gz -p all_scaled -o rrul.png   # flent's own RRUL plot",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("--to", required=True, choices=EXPORT_TARGETS, help="target: mininet, containerlab or flent")
    e.add_argument("topology", nargs="?", default=DEFAULT_TOPOLOGY, metavar="TOPOLOGY|RUN",
                   help=f"topology YAML, or a bundled topology's name (default {DEFAULT_TOPOLOGY}); "
                        "--to flent: a run directory (results/EXPERIMENT/RUN)")
    e.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                   help="override a topology setting first, as with `linklab up --set`")
    e.add_argument("--scale", type=float, help="multiply every link rate (default: the topology's scale; auto = 1 here)")
    e.add_argument("--image", default=DEFAULT_IMAGE, help=f"containerlab: image of every node (default {DEFAULT_IMAGE})")
    e.add_argument("--frr-image", default=CLAB_FRR_IMAGE,
                   help=f"containerlab: image of a routing: ospf lab's routers (default {CLAB_FRR_IMAGE})")
    e.add_argument("-o", "--output", help="write to this file instead of stdout (--to flent: into this directory, "
                                          "default RUN/flent; --to containerlab of a routing: ospf lab: needed, "
                                          "its routers' FRR files are written beside it)")
    e.set_defaults(handler=cmd_export)

    i = sub.add_parser(
        "import", help="read a containerlab topology into a linklab topology",
        description="Read a containerlab .clab.yml: linux nodes become hosts, bridge/ovs-bridge nodes switches, "
                    "veth links links (interface names, MTU, addresses). Everything that does not map is listed "
                    "on stderr and as comments in the output. The result is validated before it is printed.",
        epilog="examples:\n  linklab import containerlab lab.clab.yml > lab.yaml\n  linklab up lab.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    i.add_argument("source", choices=["containerlab"], help="format of FILE (containerlab)")
    i.add_argument("file", help="the .clab.yml to read")
    i.add_argument("-o", "--output", help="write to this file instead of stdout")
    i.set_defaults(handler=cmd_import)

    c = sub.add_parser(
        "cli", help="interactive prompt over a running lab, with Mininet's vocabulary",
        description="An interactive prompt over a running lab: pingall (loss matrix), ping A B, iperf A B, nodes, "
                    "links, dump, `NODE command…`, help, exit. Line editing and history (readline); Ctrl-C stops "
                    "the running command, not the prompt; Ctrl-D or exit leaves. A lab in the VM works the same "
                    "(each command is forwarded, ~0.2 s).",
        epilog="examples:\n  linklab cli\n  linklab cli --lab bond2\n  echo pingall | linklab cli   # scripted",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("--lab", help="lab name (default: the only lab up)")
    c.set_defaults(handler=cmd_cli)


def _write(text: str, output: str | None) -> None:
    if output:
        from linklab.fsutil import write_atomic
        write_atomic(Path(output), text)
    else:
        sys.stdout.write(text)


def cmd_export(args, argv) -> int:
    from linklab import lab
    from linklab.errors import UsageError
    from linklab.interop import clab_export, mininet_export
    from linklab.interop.common import resolved_lab

    if args.to == "flent":
        return _export_flent(args)
    try:
        args.topology = bundled.locate(args.topology, ("topologies",))
    except LookupError as e:
        raise UsageError(str(e)) from None

    res = resolved_lab(args.topology, lab.parse_overrides(args.overrides), scale=args.scale)
    if args.to == "mininet":
        from linklab import controllers
        from linklab.errors import EnvironmentProblem
        try:
            manager = controllers.manager()  # the venv's: os-ken pinned (the script runs it for its controllers)
        except EnvironmentProblem:
            manager = "osken-manager"
        text = mininet_export.export(res, args.topology, osken_manager=manager)
    else:
        text = clab_export.export(res, args.topology, image=args.image, frr_image=args.frr_image)
        files = clab_export.side_files(res)
        if files and not args.output:
            raise UsageError(f"lab {res.name} runs OSPF: its routers' FRR files (daemons, frr.conf) go beside the "
                             ".clab.yml, which containerlab binds by relative path, so it cannot go to stdout",
                             hint=f"linklab export --to containerlab {args.topology} -o {res.name}.clab.yml")
        if files:
            from linklab.fsutil import write_atomic
            for rel, content in files.items():
                dest = Path(args.output).parent / rel
                write_atomic(dest, content)
                print(f"linklab export: wrote {dest}", file=sys.stderr)
    _write(text, args.output)
    return 0


def _export_flent(args) -> int:
    from linklab.errors import UsageError
    from linklab.interop import flent_export
    if args.topology == DEFAULT_TOPOLOGY:
        raise UsageError("--to flent needs a run directory", hint="linklab export --to flent results/EXPERIMENT/RUN")
    written, skipped = flent_export.export(Path(args.topology), Path(args.output) if args.output else None)
    for why in skipped:
        print(f"linklab export: left out {why}", file=sys.stderr)
    if not written:
        raise UsageError(f"{args.topology}: no repetition with a time series to export",
                         hint="flent files are made from a run's raw iperf3 output (a sweep's run, not a baseline)")
    for path in written:
        print(path)
    print(f"linklab export: {len(written)} flent data files; plot one with: flent -i FILE -p all_scaled -o plot.png",
          file=sys.stderr)
    return 0


def cmd_import(args, argv) -> int:
    from linklab.errors import UsageError, ValidationFailed
    from linklab.interop.clab_import import import_clab
    from linklab.model import load_topology, resolve

    try:
        text = Path(args.file).read_text()
    except OSError as e:
        raise UsageError(f"{args.file}: {e.strerror}") from None
    # Relative binds are written from where the result is saved (-o), else absolute.
    dest_dir = Path(args.output).absolute().parent if args.output else None
    imported = import_clab(text, args.file, dest_dir=dest_dir)
    # What was renamed or dropped is said first: it often explains why the result does not validate.
    for old, new in imported.renamed.items():
        print(f"linklab import: renamed {old} -> {new}", file=sys.stderr)
    for item in imported.mapped:
        print(f"linklab import: mapped: {item}", file=sys.stderr)
    for item in imported.not_imported:
        print(f"linklab import: not imported: {item}", file=sys.stderr)
    out = imported.yaml_text(args.file)
    # What we print must be a valid linklab topology: check it like `linklab validate` would,
    # and say where each problem comes from in the containerlab file.
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(out)
        f.flush()
        try:
            resolve(load_topology(f.name, base_dir=dest_dir or Path.cwd()))
        except ValidationFailed as e:
            raise imported.relocate(e) from None
    _write(out, args.output)
    return 0


def cmd_cli(args, argv) -> int:
    from linklab.interop.shell import run_shell
    return run_shell(args.lab)
