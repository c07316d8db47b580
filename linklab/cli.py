"""linklab's command line. `linklab --help` and `linklab COMMAND --help` teach the tool."""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import sys
import time

from linklab import DEFAULT_TOPOLOGY, __version__, bundled
from linklab.console import say
from linklab.errors import EXIT_BROKEN_PIPE, EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE, LinklabError, UsageError

EPILOG = """\
typical session:
  linklab doctor                          what this machine offers, and what is missing
  linklab up topologies/bond2.yaml        build the lab (in a VM if this kernel lacks bonding/netem)
  linklab status                          nodes, links, bonds, MTU, qdiscs, read back live
  linklab exec h1 -- ping -c3 h2          run a command on a lab host (names resolve)
  linklab set 'links[bond].bond.mode=802.3ad'   change a running lab in place
  linklab sweep experiments/e1_bonding_mtu.yaml --quick
  linklab check exercises/mtu_path/checks.yaml   coursework checks: is the lab right, and why not
  linklab graph -o lab.html               the running lab drawn, with what the kernel reports marked
  linklab down                            remove everything the lab created

exit codes: one meaning each, in every command: docs/commands.md#exit-codes
"""


def warm() -> None:
    """Build what every command needs before its first use. The lab VM's zygote calls it once
    (linklab/vm/zygote.py), so a forked command does not build the parser: 0.25 s under TCG."""
    _parser()


@functools.cache
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="linklab", description="Declarative network-emulation labs: bonded, "
                                "impaired links between namespaces, natively or inside a VM.",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"linklab {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log every netlink step and command")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def cmd(name, help_, **kw):
        p = sub.add_parser(name, help=help_, description=help_, **kw)
        p.set_defaults(handler=COMMANDS[name])
        return p

    _lab_commands(cmd)
    _file_commands(cmd)
    _machine_commands(cmd)
    from linklab.sweep import cli as sweep_cli
    sweep_cli.add_commands(sub)
    from linklab.report import cli as report_cli
    report_cli.add_commands(sub)
    from linklab.interop import cli as interop_cli
    interop_cli.add_commands(sub)
    from linklab.ab import cli as ab_cli
    ab_cli.add_commands(sub)
    from linklab.check import cli as check_cli
    check_cli.add_commands(sub)
    from linklab.graph import cli as graph_cli
    graph_cli.add_commands(sub)
    return p



def _lab_commands(cmd) -> None:
    """up, down, status, exec, ovs, set: a lab's life and reaching into it."""
    up = cmd("up", "build a lab from a topology file (idempotent: rerun to repair or apply edits)")
    up.add_argument("topology", nargs="?", default=DEFAULT_TOPOLOGY, type=bundled.argtype("topologies"),
                    help=f"topology YAML, or a bundled topology's name (default {DEFAULT_TOPOLOGY})")
    up.add_argument("--name", help="lab name (default: the topology's name); lets two copies coexist")
    up.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE",
                    help="override a topology setting, e.g. --set links[0].mtu=9000 (repeatable)")
    up.add_argument("--scale", type=float, help="multiply every link rate (default: the topology's scale; "
                    "'auto' = 0.1 in a software-emulated VM, 1 natively)")
    up.add_argument("--seed", metavar="ID", help="build the variant of a topology with vars: for this student id "
                    "(the same id gives the same values, here and in `linklab check`)")
    where = up.add_mutually_exclusive_group()
    where.add_argument("--vm", action="store_true", help="run the lab inside the lab VM even if this kernel could host it "
                       "(by default: natively when this kernel has the modules this lab uses, bonding for bonds, "
                       "sch_netem for impairments, openvswitch for OVS switches; in the lab VM otherwise)")
    where.add_argument("--native", action="store_true", help="run on this kernel even if it lacks a module the lab uses (fails where it does)")

    down = cmd("down", "remove everything a lab created (and stop the lab VM when no lab uses it)")
    down.add_argument("lab", nargs="?", help="lab name (default: the only lab up)")

    st = cmd("status", "show a lab as the kernel reports it now")
    st.add_argument("lab", nargs="?")
    st.add_argument("--json", action="store_true", help="machine-readable output")

    ex = cmd("exec", "run a command on a lab node: linklab exec h1 -- ping -c3 h2",
             epilog="host names of the lab resolve inside nodes; NAME-v6 gives a host's IPv6 address")
    ex.add_argument("--lab")
    ex.add_argument("node")
    ex.add_argument("argv", nargs=argparse.REMAINDER, help="the command, after --")

    o = cmd("ovs", "run an Open vSwitch tool against a lab switch's own OVS: linklab ovs s1 -- dump-flows",
             epilog="examples:\n  linklab ovs s1 -- dump-flows            ovs-ofctl -O OpenFlow13 dump-flows s1\n"
                    "  linklab ovs s1 -- dump-ports\n  linklab ovs s1 -- vsctl show\n"
                    "  linklab ovs s1 -- appctl dpctl/show      datapath hit/missed/lost\n"
                    "  linklab ovs s1 -- appctl bond/show       OVS bonds and LACP\n"
                    "the lab's switches run their own ovsdb-server/ovs-vswitchd; the host's OVS is never reached",
             formatter_class=argparse.RawDescriptionHelpFormatter)
    o.add_argument("--lab")
    o.add_argument("switch")
    o.add_argument("argv", nargs=argparse.REMAINDER, help="the OVS command, after --")

    s = cmd("set", "change settings of a running lab in place (MTU, bond mode, impairments, sysctls, link costs, "
            "services)",
            epilog="examples:\n  linklab set 'links[*].mtu=9000'\n  linklab set 'links[bond].bond.mode=802.3ad'\n"
                   "  linklab set 'links[0].impair.delay=10ms'\n"
                   "  linklab set 'links[core].cost=5'       a routed lab: only the routes that move change\n"
                   "  linklab set 'hosts.h1.sysctls.\"net.ipv4.tcp_reordering\"=127'\n"
                   "  linklab set 'hosts.h1.exec[web].run=python3 -m http.server 8080'   a service changed: restarted\n"
                   "  linklab set --restart h1/web           start a node's service again, nothing else changed",
            formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("--lab")
    s.add_argument("--restart", action="append", default=[], metavar="NODE/SERVICE",
                   help="stop and start this background service again (repeatable); `linklab status` lists them")
    s.add_argument("assignments", nargs="*", metavar="PATH=VALUE")


def _file_commands(cmd) -> None:
    """validate, show: files read, nothing built."""
    v = cmd("validate", "check topology or experiment files; prints every problem with its path")
    v.add_argument("files", nargs="+", type=bundled.argtype("topologies", "experiments"),
                   help="topology or experiment YAML files, or bundled ones' names (e.g. bond2, e1_bonding_mtu)")

    sc = cmd("schema", "print the JSON Schema of topology or experiment files, for editors that check YAML as you type",
             epilog="examples:\n  linklab schema topology > schemas/topology.schema.json\n"
                    "  linklab schema experiment\n"
                    "a file then names it on its first line (yaml-language-server, e.g. VS Code's YAML extension):\n"
                    "  # yaml-language-server: $schema=../schemas/topology.schema.json",
             formatter_class=argparse.RawDescriptionHelpFormatter)
    sc.add_argument("kind", choices=["topology", "experiment"])

    sh = cmd("show", "print the resolved lab (names, addresses, qdiscs) without building it")
    sh.add_argument("topology", nargs="?", default=DEFAULT_TOPOLOGY, type=bundled.argtype("topologies"))
    sh.add_argument("--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE")
    sh.add_argument("--scale", type=float)
    sh.add_argument("--seed", metavar="ID", help="the variant of a topology with vars: for this student id")
    sh.add_argument("--frr", metavar="ROUTER", help="print only this router's frr.conf (routing: ospf): the "
                    "generated one, a start for a router's own frr_config")


def _machine_commands(cmd) -> None:
    """init, doctor, clean, vm: a directory to work in, what this machine offers, what labs leave
    on it, and the lab VM."""
    i = cmd("init", "lay out the bundled topologies, experiments, exercises, baselines and a Makefile in a directory of your own",
            epilog="examples:\n  linklab init mylab            then: cd mylab && make sweep\n"
                   "  linklab init --force mylab    put back the bundled files (overwrites edits to them)\n"
                   "existing files are left alone unless --force (exit 2, each named; nothing written).\n"
                   "Commands also take a bundled file by name from anywhere: linklab sweep e1_bonding_mtu --quick",
            formatter_class=argparse.RawDescriptionHelpFormatter)
    i.add_argument("directory", help="where (created if missing)")
    i.add_argument("--force", action="store_true", help="overwrite files that exist (with the bundled ones)")

    cmd("doctor", "what this machine offers linklab, what is missing for which feature, and the command that fixes each",
        epilog="Looks only: changes nothing, boots nothing. Exit 0 when the main job (a sweep, natively or in\n"
               "the lab VM) can run here, 4 when it cannot. Marks: ok present; -- missing, the feature in []\n"
               "needs it; !! missing, and the main job needs it.",
        formatter_class=argparse.RawDescriptionHelpFormatter)

    c = cmd("clean", "remove what crashed labs left behind (found by ownership marks, never by name patterns)",
            epilog="Removes only what is provably abandoned: namespaces marked by this checkout but owned by no\n"
                   "live lab, and labs whose owner is gone (killed while building, their VM gone). Live labs,\n"
                   "labs another command is changing, and other checkouts' labs are left alone.\n"
                   "examples:\n  linklab clean --dry-run     what would go, and why\n"
                   "  linklab clean bond2         only lab bond2's leftovers\n"
                   "  linklab clean --all-checkouts   also labs marked by other checkouts of linklab",
            formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("lab", nargs="?", help="only this lab's leftovers (default: every abandoned lab of this checkout)")
    c.add_argument("--dry-run", action="store_true", help="say what would be removed, and why; change nothing")
    c.add_argument("--all-checkouts", action="store_true",
                   help="also remove namespaces marked by other checkouts' labs (they cannot be judged from here)")

    vm = cmd("vm", "the lab VM: status, start, stop, or run a command inside it",
             epilog="examples:\n  linklab vm status\n  linklab vm run -- uname -r\n"
                    "  linklab vm run --if-needed -- pytest tests/integration/kernel   (what `make test` does)",
             formatter_class=argparse.RawDescriptionHelpFormatter)
    vm.add_argument("action", choices=["status", "start", "stop", "run"])
    vm.add_argument("--if-needed", action="store_true",
                    help="run: natively when this kernel has bonding, netem and openvswitch; in the VM otherwise")
    vm.add_argument("--stop-after", action="store_true",
                    help="run: stop the VM afterwards unless something else uses it (a lab, another `vm run`, `vm start`)")
    vm.add_argument("argv", nargs=argparse.REMAINDER, help="run: the command, after --")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose or os.environ.get("LINKLAB_DEBUG") else logging.WARNING,
                        format="%(name)s: %(message)s")
    if not args.command:
        _parser().print_help()
        return EXIT_USAGE
    try:
        return args.handler(args, argv) or 0
    except LinklabError as e:
        print(e.render(), file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("linklab: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`linklab compare ... | head`): stop quietly, as a program killed
        # by SIGPIPE would, instead of a traceback. Python ignores SIGPIPE and raises this instead;
        # stdout goes to /dev/null so the flush at exit cannot raise it again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


# ---- commands -----------------------------------------------------------------------------

def _forwarded(lab_name: str | None, argv: list[str], exec_in: tuple[str, list[str]] | None = None) -> int | None:
    """If the lab lives in the VM and we are on the host, run the command there. exec_in
    (node, command): the guest's agent runs the command in the node's namespace directly, with
    no linklab in between (~0.15 s instead of ~0.4 s under software emulation)."""
    from linklab import kernel, placement, runner, state
    if kernel.in_lab_vm():
        return None
    if lab_name is None:
        labs = state.all_labs()
        lab_name = labs[0] if len(labs) == 1 else None
    if lab_name and placement.lab_is_in_vm(lab_name):
        netns = state.node_netns(lab_name, exec_in[0]) if exec_in else None
        if netns is not None and runner.container_pid(netns):
            # A container node: the guest runs nsenter into the container (the agent enters namespaces by name only).
            return placement.forward(runner.netns_argv(exec_in[1], netns), say=say, boot=False, raw=True)
        if netns is not None:
            return placement.forward(exec_in[1], say=say, boot=False, netns=netns)
        return placement.forward(argv, say=say, boot=False)
    return None


def cmd_up(args, argv) -> int:
    from linklab import kernel, lab, placement, provision
    overrides = lab.parse_overrides(args.overrides)
    # Validate on the host first: bad input must not cost a VM boot. The lab's optional parts
    # (the [sdn] extra; OVS, Docker, FRR) are installed, or named (exit 4), before anything is
    # built or booted.
    lab_obj = lab.build_lab(args.topology, overrides, name=args.name, scale=args.scale, seed=args.seed)
    provision.ensure(lab_obj, say=say)
    use_vm, why = placement.want_vm_for_up(args.vm, args.native, lab_obj)
    if use_vm:
        say(f"linklab: lab {lab_obj.name} runs in the lab VM ({why})")
        return placement.forward_booting(argv, say=say)
    if not kernel.in_lab_vm():  # forwarded: the host said where already
        say(f"linklab: lab {lab_obj.name} runs on this kernel ({why})")
    t0 = time.monotonic()
    rec = lab.up(args.topology, name=args.name, overrides=overrides, scale=args.scale, seed=args.seed, say=say)
    res = rec["resolved"]
    say(f"linklab: lab {rec['lab']} is up ({len(res['nodes'])} nodes, {len(res['links'])} links, "
        f"scale {res['scale']:g} — {res['scale_source']}) in {time.monotonic() - t0:.1f} s")
    for note in res.get("notes", []):
        say(f"  note: {note}")
    return 0


def cmd_down(args, argv) -> int:
    from linklab import kernel, lab, placement
    name = args.lab or lab.default_lab()
    if not kernel.in_lab_vm() and placement.lab_is_in_vm(name):
        # The VM (and the lab in it) may be gone already: then only its record is.
        rc = 0 if placement.forget_lab_gone_with_vm(name) else placement.forward(argv, say=say, boot=False)
        if rc == 0:
            placement.stop_vm_if_unused(say=say)
        return rc
    removed = lab.down(name, say=say)
    say(f"linklab: lab {name} is down ({len(removed)} objects removed)")
    return 0


def cmd_status(args, argv) -> int:
    from linklab import state
    name = args.lab or state.default_lab()
    fwd = _forwarded(name, argv)
    if fwd is not None:
        return fwd
    from linklab import lab  # only where the lab is: a forwarded command never needs it
    from linklab.status_view import render
    data = lab.status(name)
    if args.json:
        print(json.dumps(data, indent=1, default=str))
    else:
        print(render(data))
    return 0


def cmd_exec(args, argv) -> int:
    from linklab import state
    cmd = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not cmd:
        raise UsageError("no command given", hint="linklab exec h1 -- ping -c3 h2")
    name = args.lab or state.default_lab()
    fwd = _forwarded(name, argv, exec_in=(args.node, cmd))
    if fwd is not None:
        return fwd
    from linklab import lab  # only where the lab is: a forwarded command never needs it
    return _become(lab.exec_argv(name, args.node, cmd))


def _become(full: list[str]) -> int:
    """Replace this process with `full`: the user's command owns the terminal and its exit code."""
    sys.stdout.flush()
    try:
        os.execvp(full[0], full)
    except FileNotFoundError:
        raise UsageError(f"{full[0]}: not found") from None
    return EXIT_FAILURE


def cmd_ovs(args, argv) -> int:
    from linklab import state
    cmd = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    name = args.lab or state.default_lab()
    fwd = _forwarded(name, argv)
    if fwd is not None:
        return fwd
    from linklab import lab  # only where the lab is: a forwarded command never needs it
    return _become(lab.switch_tool_argv(name, args.switch, cmd))


def cmd_set(args, argv) -> int:
    from linklab import state
    if not args.assignments and not args.restart:
        raise UsageError("nothing to set", hint="give PATH=VALUE assignments or --restart NODE/SERVICE (see --help)")
    name = args.lab or state.default_lab()
    fwd = _forwarded(name, argv)
    if fwd is not None:
        return fwd
    from linklab import lab  # only where the lab is: a forwarded command never needs it
    t0 = time.monotonic()
    lab.set_params(name, lab.parse_overrides(args.assignments), say=say, restart=args.restart)
    say(f"linklab: lab {name} updated in {time.monotonic() - t0:.2f} s")
    return 0


def cmd_validate(args, argv) -> int:
    from linklab.validate import validate_file
    failed = 0
    for f in args.files:
        try:
            kind = validate_file(f)
            say(f"{f}: valid {kind}")
        except LinklabError as e:
            print(e.render(), file=sys.stderr)
            failed = e.exit_code
    return failed


def cmd_schema(args, argv) -> int:
    from linklab.schema import text
    sys.stdout.write(text(args.kind))
    return 0


def cmd_show(args, argv) -> int:
    import yaml
    from linklab import lab
    lab_obj = lab.build_lab(args.topology, lab.parse_overrides(args.overrides), scale=args.scale, seed=args.seed)
    from linklab.model import variables
    from linklab.model.loader import read_yaml
    declared, _ = variables.declared(read_yaml(args.topology)[0])
    if declared:  # which variant this is, as a comment: the rest stays the resolved lab's YAML
        values = variables.values(declared, args.seed)
        print(f"# {'seed ' + repr(args.seed) if args.seed is not None else 'no seed: defaults'}: "
              + ", ".join(f"{k}={v}" for k, v in values.items()))
    from linklab.model import frr
    routers = {n.name: n for n in lab_obj.nodes if n.frr}
    if args.frr is not None:
        if args.frr not in routers:
            from linklab.errors import UsageError
            raise UsageError(f"unknown FRR router {args.frr!r} (valid: {', '.join(routers) or 'none: routing is not ospf'})")
        print(frr.config(lab_obj, routers[args.frr]), end="")
        return 0
    print(yaml.safe_dump(lab_obj.model_dump(mode="json"), sort_keys=False, width=120), end="")
    for node in routers.values():  # as comments: the output stays the resolved lab's YAML
        source = node.frr.config_file or "generated"
        print(f"#\n# frr.conf of {node.name} ({source}):")
        print("\n".join(f"#   {line}" for line in frr.config(lab_obj, node).splitlines()))
    return 0


def cmd_init(args, argv) -> int:
    from pathlib import Path

    from linklab.init import init
    init(Path(args.directory), force=args.force, say=say)
    return 0


def cmd_doctor(args, argv) -> int:
    from linklab import doctor
    verdict = doctor.assess(doctor.probe())
    print(doctor.render(verdict))
    return verdict.exit_code


def cmd_clean(args, argv) -> int:
    from linklab import kernel, lab, placement, procs
    removed = []
    if not kernel.in_lab_vm():
        from linklab.vm.launcher import find_orphan_vms
        vm = placement.lab_vm()
        live_pid = (vm.info() or {}).get("pid") if vm.running() else None
        if live_pid:
            rc = placement.forward(argv, say=say, boot=False)  # the VM's own leftovers, judged there
            if rc:
                return rc
        # QEMUs with this checkout's mark that are not the lab VM vm.json knows: a crashed boot's.
        for pid in find_orphan_vms(placement.state.state_dir()):
            if pid != live_pid:
                removed.append(f"lab VM pid {pid} (not the lab VM this checkout runs)")
                if not args.dry_run:
                    procs.stop([pid], grace=5.0)
    removed += lab.clean(args.lab, say=say, dry_run=args.dry_run, other_checkouts=args.all_checkouts)
    if not kernel.in_lab_vm() and args.lab is None:
        from linklab.cluster import leftovers  # a killed local cluster's nodes: their own state directories
        removed += leftovers.clean(leftovers.cluster_dir(), say=say, dry_run=args.dry_run)
    if not kernel.in_lab_vm() and not args.dry_run and placement.stop_vm_if_unused(say=say):
        removed.append("lab VM (no lab uses it)")
    verb = "would remove" if args.dry_run else "removed"
    for r in removed:
        say(f"  {verb} {r}")
    say(f"linklab: clean: {len(removed)} objects {'would be removed' if args.dry_run else 'removed'}" + (" (dry run: nothing changed)" if args.dry_run else ""))
    return 0


def cmd_vm(args, argv) -> int:
    from linklab import kernel, placement
    vm = placement.lab_vm()
    if args.action == "stop":
        labs = placement.vm_labs() if vm.running() else []
        if labs:
            # Said, not refused: stopping is how a stuck VM is recovered. The state files stay.
            many = len(labs) > 1
            say(f"linklab: lab{'s' if many else ''} {', '.join(labs)} lived in the lab VM and "
                f"{'go' if many else 'goes'} with it (`linklab up` builds one again, `linklab down` forgets it)")
        vm.stop(say=say)
        return 0
    if args.action == "start":
        vm.ensure_running(say=say)
        placement.keep_vm()  # started on purpose: stays up with no lab until `linklab vm stop`
        return 0
    if args.action == "run":
        cmd = list(args.argv)
        # REMAINDER also swallows our own flags when they follow the action: take them back.
        while cmd and cmd[0] in ("--if-needed", "--stop-after", "-h", "--help"):
            flag = cmd.pop(0)
            if flag in ("-h", "--help"):  # ours (before any `--`): help, not a command for the VM
                _parser().parse_args(["vm", "--help"])
            setattr(args, flag[2:].replace("-", "_"), True)
        cmd = cmd[1:] if cmd[:1] == ["--"] else cmd
        if not cmd:
            raise UsageError("no command given", hint="linklab vm run -- uname -r")
        if args.if_needed and (kernel.in_lab_vm() or not kernel.missing_features()):
            import subprocess
            return subprocess.call(cmd)
        try:
            with vm.session():
                return placement.forward(cmd, say=say, raw=True)
        finally:
            if args.stop_after:
                placement.stop_vm_if_unused(say=say)
    info = vm.info() if vm.running() else None
    if not info:
        say("lab VM: not running")
        return 0
    say(f"lab VM: running, pid {info.get('pid')}, kernel {info.get('kernel_release')}, accel {info.get('accel')}, "
        f"{info.get('cpus')} vCPUs, {info.get('memory')}, labs: {', '.join(placement.vm_labs()) or 'none'}"
        + (f", `vm run` sessions: pid {', '.join(map(str, sessions))}" if (sessions := vm.sessions()) else ""))
    cached = (info.get("guest") or {}).get("cached_libs")
    if cached:
        say(f"  Python libraries read cached (as at boot; linklab/vm/pylibs.py): {', '.join(cached)}")
    return 0


COMMANDS = {"up": cmd_up, "down": cmd_down, "status": cmd_status, "exec": cmd_exec, "ovs": cmd_ovs, "set": cmd_set,
            "validate": cmd_validate, "show": cmd_show, "schema": cmd_schema, "init": cmd_init, "doctor": cmd_doctor,
            "clean": cmd_clean, "vm": cmd_vm}
