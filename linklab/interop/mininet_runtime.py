# ---- runtime: the same for every exported lab (copied from linklab/interop/mininet_runtime.py) ----
# This file is never imported by linklab: `linklab export --to mininet` pastes it, after the LAB
# table, into a self-contained script for Debian's Mininet 2.3 (`apt install mininet`).
import argparse
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time

# Mininet 2.3 imports distutils (for StrictVersion). Debian's setuptools answers that import with
# its own copy through a shim, which imports pkg_resources, which reads the metadata of every
# installed package: seconds under software emulation (bench/README.md#start-up-times). The
# standard library's distutils serves Mininet the same, where it is installed.
if os.path.isdir(os.path.join(sysconfig.get_paths()["stdlib"], "distutils")):
    try:
        import _distutils_hack
        _distutils_hack.remove_shim()
    except (ImportError, AttributeError):
        pass

# Debian's Mininet is a package of Debian's python3 (/usr/lib/python3/dist-packages): a python3
# that comes first on PATH (a virtualenv's, pyenv's: also what `linklab vm run -- python3 ...`
# finds, with the host's PATH) cannot import it. Then the script runs again under Debian's.
DEBIAN_PYTHON = "/usr/bin/python3"
try:
    import mininet  # noqa: F401
except ImportError:
    if os.path.exists(DEBIAN_PYTHON) and os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON):
        print("linklab-export: Mininet is not importable by %s: running under %s" % (sys.executable, DEBIAN_PYTHON),
              file=sys.stderr, flush=True)
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON, *sys.argv])
    raise SystemExit("linklab-export: Mininet is not importable by %s: apt install mininet" % sys.executable)

from mininet.cli import CLI
from mininet.link import Intf, Link, TCIntf
from mininet.log import info, setLogLevel
from mininet.net import Mininet
from mininet.node import Host, OVSSwitch, RemoteController
from mininet.nodelib import LinuxBridge

OK_MARK = "__linklab_rc="
CONTROLLER_LISTEN_S = 900  # os-ken imports for ~20 s on a quiet emulated machine, minutes on a loaded one
CONTROLLER_CONNECT_S = 60


class LinklabHost(Host):
    """A Mininet host whose default interface is the one linklab addresses (a bond, when the
    host's first link is bonded), so Mininet's pingall, iperf and `h1 ping h2` use it."""

    def defaultIntf(self):
        main = self.params.get("main_intf")
        if main and main in self.nameToIntf:
            return self.nameToIntf[main]
        return Host.defaultIntf(self)


class LinklabRouter(LinklabHost):
    """A Mininet host that forwards IPv4 and IPv6: a router, as Mininet's examples/linuxrouter.py
    makes one (forwarding on in config, off again in terminate); its routes are set in configure."""

    def config(self, **params):
        r = super(LinklabRouter, self).config(**params)
        self.cmd("sysctl -q -w net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1")
        return r

    def terminate(self):
        self.cmd("sysctl -q -w net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0")
        super(LinklabRouter, self).terminate()


class LinklabController(RemoteController):
    """A RemoteController for linklab's own os-ken app, which this script starts and waits for
    (wait_listening): Mininet's check, a telnet at construction, would only warn that an app still
    importing is not there yet."""

    def checkListening(self):
        return


class LinklabOVSSwitch(OVSSwitch):
    """An OVSSwitch connected to its own controller only: each switch's app is told that
    switch's port layout (Mininet would give every switch every controller)."""

    def start(self, controllers):
        return OVSSwitch.start(self, [c for c in controllers if c.name == self.params.get("controller_name")])


def warn(msg):
    print("linklab-export: " + msg, file=sys.stderr, flush=True)


def run(node, argv, check=True):
    """Run argv (quoted, never re-split) in the node's shell; Mininet's cmd() gives no exit status,
    so the command reports it after its output."""
    return run_nodes({node: [argv]}, check)[node]


def run_nodes(steps, check=True):
    """Each node's commands (steps: {node: [argv, ...]}) sent to every node's shell at once, then
    awaited: nodes are separate shells, their configurations independent (a round trip costs
    ~0.3 s under emulation). Returns {node: (rc, text)}."""
    lines = {node: shell_line(argvs) for node, argvs in steps.items()}
    for node, line in lines.items():
        node.sendCmd("( set -e; " + line + " ); echo " + OK_MARK + "$?")
    done = {}
    for node in lines:
        text, _, rc = node.waitOutput().rpartition(OK_MARK)
        done[node] = int(rc.strip() or 1), text
    failed = ["%s: exited %d in: %s\n%s" % (node.name, rc, lines[node], text.strip())
              for node, (rc, text) in done.items() if rc != 0]
    if check and failed:
        raise RuntimeError("\n".join(failed))
    return done


BATCHES = ("ip", "tc", "ovs-vsctl")


def shell_line(argvs):
    """argvs as one shell line (each word quoted, never re-split) that a `set -e` subshell stops
    at the first failure, in order, with consecutive `ip` (or `tc`) commands read by one
    `ip -batch -` (it too stops at the first failure) and consecutive `ovs-vsctl` commands as one
    transaction (`--` between them): each process started costs ~0.3 s under software emulation
    (bench/README.md#start-up-times), and each ovs-vsctl waits for the switch to apply it."""
    groups = []
    for argv in argvs:
        argv = [str(a) for a in argv]
        tool = argv[0] if argv[0] in BATCHES and len(argv) > 1 and not argv[1].startswith("-") else None
        if tool != "ovs-vsctl" and any(c.isspace() or c in "\"'#\\" for a in argv for c in a):
            tool = None  # a batch file's line is split at blanks: only plain words go there
        if tool and groups and groups[-1][0] == tool:
            groups[-1][1].append(argv[1:])
        else:
            groups.append((tool, [argv[1:] if tool else argv]))
    parts = []
    for tool, cmds in groups:
        if tool == "ovs-vsctl":
            words = ["ovs-vsctl"] + [w for i, c in enumerate(cmds) for w in (["--"] if i else []) + c]
            parts.append(" ".join(shlex.quote(w) for w in words))
        elif tool and len(cmds) > 1:
            lines = " ".join(shlex.quote(" ".join(c)) for c in cmds)
            parts.append("printf '%s\\n' " + lines + " | " + tool + " -batch -")
        else:
            parts.append(" ".join(shlex.quote(w) for w in ([tool] if tool else []) + cmds[0]))
    return "; ".join(parts)


def build(net, mininet_shaping):
    for name, h in LAB["hosts"].items():
        net.addHost(name, cls=LinklabHost, ip=None, main_intf=h["main_intf"])
    for name, r in LAB.get("routers", {}).items():
        net.addHost(name, cls=LinklabRouter, ip=None, main_intf=r["main_intf"])
    ctl = {o["switch"]: o["controller"] for o in LAB["ovs"] if o["controller"]}
    for i, (name, sw) in enumerate(LAB["switches"].items()):
        if "ovs" in sw:
            if name in ctl:
                net.addController("c_" + name, controller=LinklabController, ip="127.0.0.1", port=ctl[name]["port"])
            net.addSwitch(name, cls=LinklabOVSSwitch, controller_name="c_" + name, **sw["ovs"])
        else:
            net.addSwitch(name, cls=LinuxBridge, stp=sw["stp"], dpid="%016x" % (i + 1))
    for veth in LAB["veths"]:
        params = [veth["mininet_a"], veth["mininet_b"]] if mininet_shaping else [veth["tclink_a"], veth["tclink_b"]]
        net.addLink(veth["a"][0], veth["b"][0], cls=Link, intfName1=veth["a"][1], intfName2=veth["b"][1],
                    cls1=TCIntf if params[0] is not None else Intf, cls2=TCIntf if params[1] is not None else Intf,
                    params1=params[0] or {}, params2=params[1] or {})


def configure(net, mininet_shaping):
    """What Mininet has no API for, in linklab's order: bonds (members down before enslaving),
    switch LAGs, MTU on every interface of the path, addresses, qdiscs, interface settings, sysctls.
    One batch of commands per node, every node's at once."""
    steps = {}

    def add(node, argv):
        steps.setdefault(node, []).append(argv)

    for b in LAB["bonds"]:
        node = b["node"]
        if b["switch"]:  # the switch's side of a bond: its members leave the bridge for the LAG
            for m in b["members"]:
                add(node, ["ip", "link", "set", "dev", m, "nomaster"])
        add(node, ["ip", "link", "add", b["ifname"], "type", "bond", *b["create_args"]])
        for m in b["members"]:
            add(node, ["ip", "link", "set", "dev", m, "down"])
            add(node, ["ip", "link", "set", "dev", m, "master", b["ifname"]])
        if b["primary"]:
            add(node, ["ip", "link", "set", "dev", b["ifname"], "type", "bond", "primary", b["primary"]])
        if b["switch"]:
            add(node, ["ip", "link", "set", "dev", b["ifname"], "master", b["switch"]])
    for o in LAB["ovs"]:  # linklab's OVS settings, once OVSSwitch has added the ports
        for argv in o["vsctl"]:
            add(o["switch"], ["ovs-vsctl", *argv])
    for node, ifname, mtu in LAB["mtu"]:
        add(node, ["ip", "link", "set", "dev", ifname, "mtu", mtu])
    for node, ifname in LAB["up"]:
        add(node, ["ip", "link", "set", "dev", ifname, "up"])
    for a in LAB["addresses"]:
        add(a["node"], ["ip", "addr", "add", a["ipv4"], "dev", a["ifname"]])
        if a["ipv6"]:
            add(a["node"], ["ip", "-6", "addr", "add", a["ipv6"], "dev", a["ifname"], "nodad"])
    if not mininet_shaping:
        for q in LAB["qdiscs"]:  # on plain Intfs (no TCIntf qdisc to replace)
            for argv in q["tc"]:
                add(q["node"], argv)
    for s in LAB["iface_settings"]:
        add(s["node"], s["argv"])
    for name, h in list(LAB["hosts"].items()) + list(LAB.get("routers", {}).items()):
        for key, value in h["sysctls"].items():
            add(name, ["sysctl", "-q", "-w", "%s=%s" % (key, value)])
    for name, argvs in LAB.get("routes", {}).items():  # once the gateways' subnets are addressed
        for argv in argvs:
            add(name, argv)
    run_nodes({net[node]: argvs for node, argvs in steps.items()})
    for a in LAB["addresses"]:
        node = net[a["node"]]
        # Tell Mininet the address (its pingall and `h1 ping h2` use it); a bond is new to Mininet:
        # register it (it is already inside the host, nothing to move).
        intf = node.nameToIntf.get(a["ifname"]) or Intf(a["ifname"], node=node, moveIntfFn=lambda *_: True)
        intf.ip, intf.prefixLen = a["ipv4"].split("/")


def run_exec(net):
    """Each node's exec: commands, in the node, in order, each exit code checked (a failure stops
    the script naming the node, the command, its exit code and output), nodes one after another."""
    for name, cmds in LAB["exec"].items():
        for i, argv in enumerate(cmds):
            rc, out = run(net[name], argv, check=False)
            if rc != 0:
                raise RuntimeError("node %s: exec command %d of %d exited %d: %s\n%s"
                                   % (name, i + 1, len(cmds), rc, " ".join(shlex.quote(a) for a in argv), out.strip()))
    if LAB["exec"]:
        info("*** exec: commands ran in %s\n" % ", ".join(LAB["exec"]))


FRR_PROGRAMS = "/usr/lib/frr"  # Debian's frr puts its daemons here, off PATH
FRR_RUN = "/var/run/frr"  # FRR's compiled-in state directory: -N puts each instance under it
FRR_CRASH = "/var/tmp/frr"  # FRR's per-process crash log directory (<daemon>.<pid>)
FRR_DAEMONS = ("zebra", "ospfd", "ospf6d")
# What FRR 8.4's ospfd and ospf6d write to /var/run/frr itself, outside their -N directory
# (graceful-restart state): removed at the end where this script's daemons made them.
FRR_SHARED_STATE = ("ospfd-gr.json", "ospf6d-gr.json", "ospf6d-at-seq-no.dat")
FRR_START_S = 60
FRR_CONVERGE_S = 120  # OSPF's adjacencies form in seconds (1 s hellos): minutes mean something is wrong


def start_frr(net, started):
    """routing: ospf: each router's zebra, ospfd and ospf6d, started in its namespace as linklab
    starts them (linklab/backends/linux/frrd.py): FRR's path space option -N gives each router its
    own sockets and pid files in /var/run/frr/<name> (never the machine's own FRR's), no
    configuration file of their own (-f /dev/null), no TCP vty (-P 0); once listening, the
    router's frr.conf is loaded by `vtysh -N <name> -f`. What it starts is recorded in `started`
    as it goes (first its log directory, and which of FRR_SHARED_STATE it may create), for stop_frr."""
    if not LAB.get("frr"):
        return
    missing = [d for d in FRR_DAEMONS if not os.path.exists(os.path.join(FRR_PROGRAMS, d))]
    if missing or not shutil.which("vtysh"):
        raise SystemExit("linklab-export: FRR is not installed (%s missing): routing: ospf runs zebra, ospfd and "
                         "ospf6d in each router: apt install frr" % ", ".join(missing or ["vtysh"]))
    logs = tempfile.mkdtemp(prefix="linklab-frr-")
    if not os.path.isdir(FRR_RUN):  # where the package's own service never ran
        os.makedirs(FRR_RUN)
        shutil.chown(FRR_RUN, "frr", "frr")
    started.append({"logs": logs, "shared": [f for f in FRR_SHARED_STATE if not os.path.exists(os.path.join(FRR_RUN, f))]})
    routers = []
    for name, conf in LAB["frr"].items():
        ns = "mn%d-%s" % (os.getpid(), name)
        rundir = os.path.join(FRR_RUN, ns)
        os.makedirs(rundir)
        shutil.chown(rundir, "frr", "frr")
        with open(os.path.join(rundir, "frr.conf"), "w") as f:
            f.write(conf)
        r = {"node": name, "ns": ns, "dir": rundir, "procs": []}
        started.append(r)
        routers.append(r)
    for daemon in FRR_DAEMONS:  # every router's zebra first: the others connect to its socket
        for r in routers:
            log = open(os.path.join(logs, "%s-%s.log" % (r["node"], daemon)), "wb")
            argv = [os.path.join(FRR_PROGRAMS, daemon), "-N", r["ns"], "-f", "/dev/null", "-P", "0", "--log", "stdout"]
            r["procs"].append((daemon, net[r["node"]].popen(argv, stdout=log, stderr=subprocess.STDOUT)))
            log.close()
        wait_frr(routers, logs, ["zserv.api"] if daemon == "zebra" else [daemon + ".vty"])
    for r in routers:
        res = subprocess.run(["vtysh", "-N", r["ns"], "-f", os.path.join(r["dir"], "frr.conf")],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        if res.returncode != 0:
            raise RuntimeError("%s: FRR refused its configuration:\n%s" % (r["node"], res.stdout.strip()[-1500:]))
    info("*** FRR started in %s\n" % ", ".join(r["node"] for r in routers))


def wait_frr(routers, logs, sockets):
    """Until each router's FRR directory has the sockets; a daemon that exits fails the wait with its log."""
    end = time.monotonic() + FRR_START_S
    while True:
        for r in routers:
            for daemon, p in r["procs"]:
                if p.poll() is not None:
                    log = open(os.path.join(logs, "%s-%s.log" % (r["node"], daemon))).read()
                    raise RuntimeError("%s: FRR's %s exited at start:\n%s" % (r["node"], daemon, log[-1500:]))
        if all(os.path.exists(os.path.join(r["dir"], s)) for r in routers for s in sockets):
            return
        if time.monotonic() > end:
            raise RuntimeError("FRR's daemons did not listen within %d s (%s)" % (FRR_START_S, ", ".join(sockets)))
        time.sleep(0.05)


def json_lists(text):
    """Pure: the JSON lists of several `ip -j` outputs printed one after another."""
    out, pos, dec = [], 0, json.JSONDecoder()
    text = text.strip()
    while pos < len(text):
        value, pos = dec.raw_decode(text, pos)
        out.append(value)
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


def route_prefixes(text):
    """Pure: the destinations of `ip -j route` outputs, one JSON list after another."""
    return {r.get("dst") for routes in json_lists(text) for r in routes}


def wait_converged(net):
    """Until every OSPF router has a route to every subnet of the lab (linklab's own wait), or
    FRR_CONVERGE_S, naming what each router still lacks."""
    if not LAB.get("frr"):
        return
    t0 = time.monotonic()
    want = set(LAB["frr_subnets"])
    while True:
        done = run_nodes({net[r]: [["ip", "-j", "-4", "route"], ["ip", "-j", "-6", "route"]] for r in LAB["frr"]})
        missing = {node.name: sorted(want - route_prefixes(text)) for node, (_, text) in done.items()}
        missing = {k: v for k, v in missing.items() if v}
        if not missing:
            info("*** OSPF converged: %d routers, %d subnets, %.1f s\n" % (len(LAB["frr"]), len(want),
                                                                         time.monotonic() - t0))
            return
        if time.monotonic() - t0 > FRR_CONVERGE_S:
            raise RuntimeError("OSPF did not converge in %d s: %s" % (FRR_CONVERGE_S, "; ".join(
                "%s has no route to %s" % (k, ", ".join(v)) for k, v in sorted(missing.items()))))
        time.sleep(0.5)


LACP_WAIT_S = 30  # 802.3ad distributes ~2 s after its members join (linklab's pre-flight waits up to 15 s)


def lacp_unready(bond, members, count):
    """Pure: what keeps an 802.3ad bond from carrying traffic on all its members, by linklab's
    rule (backends/base.bond_summary), on `ip -j -d link show dev BOND` and `... master BOND`;
    None once aggregated. A member distributes only once its mux reaches COLLECTING_DISTRIBUTING,
    ~2 s after it joined: a ping sent before that is lost, or a flow starts on one member."""
    ad = ((bond[0] if bond else {}).get("linkinfo") or {}).get("info_data", {}).get("ad_info") or {}
    slaves = [(m.get("linkinfo") or {}).get("info_slave_data") or {} for m in members]
    active = sum(1 for s in slaves if s.get("state") == "ACTIVE")
    aggregators = {s.get("ad_aggregator_id") for s in slaves}
    partner = ad.get("partner_mac") or "00:00:00:00:00:00"
    if (len(slaves) == count and active == count and aggregators == {ad.get("aggregator")}
            and ad.get("num_ports") == count and partner != "00:00:00:00:00:00"):
        return None
    return "partner %s, %d/%d members distributing, aggregators %s" % (
        partner, active, count, ",".join(str(a) for a in sorted(aggregators, key=str)))


def wait_aggregated(net):
    """Until every 802.3ad bond has aggregated (linklab's pre-flight waits for it too), or
    LACP_WAIT_S; then a warning naming each that did not, and on: its pings show the rest."""
    bonds = [b for b in LAB["bonds"] if b["mode"] == "802.3ad"]
    t0 = time.monotonic()
    while bonds:
        asks = {}
        for b in bonds:
            asks.setdefault(b["node"], []).extend([["ip", "-j", "-d", "link", "show", "dev", b["ifname"]],
                                                   ["ip", "-j", "-d", "link", "show", "master", b["ifname"]]])
        done = run_nodes({net[node]: argvs for node, argvs in asks.items()}, check=False)
        unready = {}
        for node, (rc, text) in done.items():
            mine = [b for b in bonds if b["node"] == node.name]
            try:
                lists = json_lists(text) if rc == 0 else []
            except ValueError:
                lists = []
            for i, b in enumerate(mine):
                why = (lacp_unready(lists[2 * i], lists[2 * i + 1], len(b["members"]))
                       if len(lists) == 2 * len(mine) else "unreadable: %s" % text.strip()[-200:])
                if why:
                    unready["%s:%s" % (b["node"], b["ifname"])] = why
        if not unready:
            info("*** LACP aggregated: %d bonds, %.1f s\n" % (len(bonds), time.monotonic() - t0))
            return
        if time.monotonic() - t0 > LACP_WAIT_S:
            warn("LACP did not aggregate in %d s: %s" % (LACP_WAIT_S, "; ".join(
                "%s %s" % kv for kv in sorted(unready.items()))))
            return
        time.sleep(0.3)


def stop_frr(started):
    """Stop what start_frr started (in each router ospfd and ospf6d before zebra: on its way out
    zebra removes the routes the others gave it) and remove its directories."""
    if not started:
        return
    for r in started[1:]:
        procs = sorted(r["procs"], key=lambda dp: dp[0] == "zebra")
        for _, p in procs:
            stop_process(p)
        for daemon, p in procs:
            shutil.rmtree(os.path.join(FRR_CRASH, "%s.%d" % (daemon, p.pid)), ignore_errors=True)
        shutil.rmtree(r["dir"], ignore_errors=True)
    for name in started[0]["shared"]:
        try:
            os.remove(os.path.join(FRR_RUN, name))
        except FileNotFoundError:
            pass
    shutil.rmtree(started[0]["logs"], ignore_errors=True)


OVS_SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
OVS_STOP_S = 10


def ensure_ovs(started):
    """Open vSwitch for the OVS switches: the machine's own when its database socket is there;
    otherwise (installed but not started, as in linklab's lab VM) an ovsdb-server and ovs-vswitchd
    of this script's own, in a temporary directory, said on stderr, recorded in `started` for
    stop_ovs. OVS_RUNDIR names that directory to every ovs-* program the script, Mininet and the
    switches' shells run (they inherit the environment): the machine's OVS files are not touched."""
    if not LAB["ovs"]:
        return
    sock = os.path.join(os.environ.get("OVS_RUNDIR") or "/var/run/openvswitch", "db.sock")
    if os.path.exists(sock):
        return
    for tool in ("ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl"):
        if not (shutil.which(tool) or os.path.exists(os.path.join("/usr/sbin", tool))):
            raise SystemExit("linklab-export: %s not found, and no Open vSwitch runs (no %s): install Open vSwitch "
                             "(apt install openvswitch-switch)" % (tool, sock))
    d = tempfile.mkdtemp(prefix="linklab-ovs-")
    started.append(d)
    os.environ.update({"OVS_RUNDIR": d, "OVS_DBDIR": d, "OVS_LOGDIR": d, "OVS_SYSCONFDIR": d})
    os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + "/usr/sbin"
    if not os.path.isdir("/sys/module/openvswitch"):
        subprocess.call(["modprobe", "openvswitch"])
    db, pidfile = os.path.join(d, "conf.db"), lambda daemon: os.path.join(d, daemon + ".pid")
    subprocess.check_call(["ovsdb-tool", "create", db, OVS_SCHEMA])
    # -vconsole:off: their log goes to the directory's files, not between the script's lines
    subprocess.check_call(["ovsdb-server", db, "--remote=punix:" + os.path.join(d, "db.sock"),
                           "--pidfile=" + pidfile("ovsdb-server"), "--detach", "-vconsole:off",
                           "--log-file=" + os.path.join(d, "ovsdb-server.log")])
    started.append(int(open(pidfile("ovsdb-server")).read()))
    subprocess.check_call(["ovs-vsctl", "--no-wait", "init"])
    subprocess.check_call(["ovs-vswitchd", "unix:" + os.path.join(d, "db.sock"), "--pidfile=" + pidfile("ovs-vswitchd"),
                           "--detach", "-vconsole:off", "--log-file=" + os.path.join(d, "ovs-vswitchd.log")])
    started.append(int(open(pidfile("ovs-vswitchd")).read()))
    warn("no Open vSwitch running (no %s): started ovsdb-server (pid %d) and ovs-vswitchd (pid %d) of this "
         "script's own in %s; they are stopped at the end" % (sock, started[1], started[2], d))


def stop_ovs(started):
    """Stop what ensure_ovs started, ovs-vswitchd first (it removes its datapath), and remove its directory."""
    if not started:
        return
    d, pids = started[0], started[1:]
    if len(pids) == 2:
        subprocess.call(["ovs-appctl", "-t", os.path.join(d, "ovs-vswitchd.%d.ctl" % pids[1]), "exit", "--cleanup"],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for pid in reversed(pids):
        try:
            os.kill(pid, 15)
        except ProcessLookupError:
            continue
        end = time.monotonic() + OVS_STOP_S
        while os.path.exists("/proc/%d" % pid) and time.monotonic() < end:
            time.sleep(0.1)
        if os.path.exists("/proc/%d" % pid):
            os.kill(pid, 9)
    shutil.rmtree(d, ignore_errors=True)
    warn("stopped the Open vSwitch this script started (pids %s)" % ", ".join(map(str, pids)))


def start_controllers(manager, started):
    """Each OVS switch's os-ken app (CONTROLLER_APPS, written to a temporary directory), run by
    osken-manager on 127.0.0.1 as linklab runs it, without waiting: os-ken imports for ~20 s
    under emulation while the network is built (wait_listening). What it starts is recorded in
    `started` (the directory first) as it goes, for stop_controllers; returns what to wait for."""
    todo = [o for o in LAB["ovs"] if o["controller"]]
    if not todo:
        return []
    exe = manager if os.path.isfile(manager) else shutil.which(manager)
    if not exe:
        raise SystemExit("linklab-export: %s not found: install os-ken 3.1.1 (pip install os-ken==3.1.1) "
                         "or give --osken-manager PATH" % manager)
    appdir = tempfile.mkdtemp(prefix="linklab-controllers-")
    started.append(appdir)
    for name, text in CONTROLLER_APPS.items():
        with open(os.path.join(appdir, name), "w") as f:
            f.write(text)
    procs = []
    for o in todo:
        c = o["controller"]
        argv = [exe, *c["argv"][1:-1], os.path.join(appdir, c["argv"][-1])]
        env = dict(os.environ, **dict(kv.split("=", 1) for kv in c["env"]))
        log = open(os.path.join(appdir, o["switch"] + ".log"), "wb")
        proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        started.append(proc)
        procs.append((o["switch"], c["port"], log.name, proc))
    return procs


def wait_listening(procs):
    """Until every controller start_controllers started listens (it exits: its log says why)."""
    t0 = time.monotonic()
    for sw, port, log, proc in procs:
        while True:
            if proc.poll() is not None:
                raise SystemExit("linklab-export: the controller of %s exited:\n%s" % (sw, open(log).read()[-2000:]))
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() - t0 > CONTROLLER_LISTEN_S:
                    raise SystemExit("linklab-export: the controller of %s is not listening on port %d" % (sw, port))
                time.sleep(0.5)
    if procs:
        info("*** controllers listening %.0f s after the network was built\n" % (time.monotonic() - t0))


def wait_connected(net):
    """Every OVS switch with a controller connected to it, and the app's first flow (its table-miss
    entry) installed: until then a secure switch forwards nothing."""
    t0 = time.monotonic()
    for o in LAB["ovs"]:
        while o["controller"]:
            sw = net[o["switch"]]
            _, out = run(sw, ["ovs-vsctl", "get", "controller", o["switch"], "is_connected"], check=False)
            _, flows = run(sw, ["ovs-ofctl", "-O", "OpenFlow13", "dump-flows", o["switch"]], check=False)
            if out.strip() == "true" and "actions=" in flows:
                break
            if time.monotonic() - t0 > CONTROLLER_CONNECT_S:
                raise RuntimeError("switch %s did not connect to its controller" % o["switch"])
            time.sleep(0.3)


def stop_process(p):
    """The one way this script stops a process it started: SIGTERM, 10 s, then SIGKILL."""
    if p.poll() is None:
        p.terminate()
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def stop_controllers(started):
    for p in started[1:]:
        stop_process(p)
    if started:
        shutil.rmtree(started[0], ignore_errors=True)


def remove_root_bonds(net):
    # Switches live in the root namespace: Mininet deletes their ports, not the LAGs built here.
    for b in LAB["bonds"]:
        if b["switch"]:
            run(net[b["node"]], ["ip", "link", "del", b["ifname"]], check=False)


def checks(net):
    """Mininet's pingall, then a don't-fragment ping at the full path MTU across every link
    (every bond member path included: bonds spread or fail over; loss anywhere is a failure)."""
    failures = 0
    loss = net.pingAll(timeout=2)
    if loss > 0:
        print("*** pingall: %s%% dropped" % loss, flush=True)
        failures += 1
    for c in LAB["checks"]:
        rc, out = run(net[c["from"]], ["ping", "-c", "3", "-i", "0.05", "-W", "2", "-M", "do", "-s",
                                       c["size"], c["to_addr"]], check=False)
        ok = rc == 0 and " 0% packet loss" in out
        print("*** %s -> %s (%s) at MTU %d via %s: %s" % (c["from"], c["to"], c["to_addr"], c["mtu"],
                                                          c["via"], "ok" if ok else "FAILED"), flush=True)
        failures += 0 if ok else 1
    total = len(LAB["checks"]) + 1
    print("*** linklab checks: %d/%d passed" % (total - failures, total), flush=True)
    return failures == 0


def iperf3(net, client, server, seconds, streams):
    """TCP goodput client -> server with iperf3 (what linklab measures), printed as one JSON line."""
    srv, cli = net[server], net[client]
    addr = srv.defaultIntf().IP()
    srv.cmd("iperf3 -s -1 -D")
    time.sleep(1)
    # A stream that carries nothing (hosts' MTU over the switch's) must still end: iperf3 waits.
    _, out = run(cli, ["timeout", seconds + 30, "iperf3", "-c", addr, "-t", seconds, "-P", streams, "-J"])
    data = json.loads(out[out.index("{"):])
    bps = data["end"]["sum_received"]["bits_per_second"]
    print("LINKLAB-IPERF3 " + json.dumps({"client": client, "server": server, "bps": bps, "seconds": seconds,
                                          "streams": streams}), flush=True)


def main():
    p = argparse.ArgumentParser(description="linklab lab %r in Mininet (exported by `linklab export --to mininet`)"
                                % LAB["name"])
    p.add_argument("--test", action="store_true", help="run pingall and MTU pings, exit 1 on any loss")
    p.add_argument("--mininet-shaping", action="store_true",
                   help="shape with Mininet's TCLink (htb) where it can, instead of linklab's qdiscs")
    p.add_argument("--iperf3", nargs=2, metavar=("CLIENT", "SERVER"),
                   help="measure TCP goodput (after --test, if given), then exit")
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--streams", type=int, default=1)
    p.add_argument("--osken-manager", default=OSKEN_MANAGER,
                   help="osken-manager that runs the controller apps (default %(default)s, else on PATH)")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args()
    setLogLevel("info" if args.verbose else "warning")
    for note in LAB["notes"] + (LAB["mininet_shaping_notes"] if args.mininet_shaping else []):
        warn(note)
    net = Mininet(topo=None, build=False, controller=None, switch=LinuxBridge, host=LinklabHost,
                  link=Link, autoSetMacs=False)
    ok = True
    controllers = []
    own_ovs = []
    frr = []
    try:
        ensure_ovs(own_ovs)
        starting = start_controllers(args.osken_manager, controllers)
        build(net, args.mininet_shaping)
        net.build()
        net.start()
        configure(net, args.mininet_shaping)
        start_frr(net, frr)
        wait_aggregated(net)
        wait_listening(starting)
        wait_connected(net)
        wait_converged(net)
        run_exec(net)
        info("*** linklab lab %s ready\n" % LAB["name"])
        if args.test:
            ok = checks(net)
        if args.iperf3:
            iperf3(net, args.iperf3[0], args.iperf3[1], args.seconds, args.streams)
        if not (args.test or args.iperf3):
            CLI(net)
    finally:
        remove_root_bonds(net)
        stop_frr(frr)  # its daemons live in the routers' namespaces: stopped before Mininet's hosts
        net.stop()
        stop_controllers(controllers)
        stop_ovs(own_ovs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
