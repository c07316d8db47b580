"""`linklab cli`: an interactive prompt over a running lab, with Mininet's vocabulary.

pingall (with a loss matrix), ping A B, iperf A B, nodes, links, dump, `NODE command…`, help,
exit. readline gives line editing, completion of commands and node names, and a history kept in
the state directory. Ctrl-C stops the running command and returns to the prompt; at the prompt
it clears the line; Ctrl-D or `exit` leaves.

The prompt runs where it was started. For a lab inside the lab VM each command is sent to the VM
(the VM's command channel relays output live and forwards Ctrl-C, but not a terminal's input,
so an interactive program such as `h1 bash` is not possible there; non-interactive ones are).
"""

from __future__ import annotations

import cmd
import io
import ipaddress
import os
import shlex
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from linklab import kernel, lab, placement, runner, state
from linklab.errors import LinklabError, UsageError
from linklab.model.resolved import Lab

PING_TIMEOUT_S = 2
IPERF_SECONDS = 5


class NodeExec:
    """Runs commands on lab nodes: here, or inside the lab VM for a lab that lives there."""

    def __init__(self, lab_name: str):
        self.lab_name = lab_name
        self.in_vm = not kernel.in_lab_vm() and placement.lab_is_in_vm(lab_name)

    def argv(self, node: str, command: list[str]) -> list[str]:
        return lab.exec_argv(self.lab_name, node, command)

    def _in_vm(self, node: str, command: list[str]) -> tuple[list[str], str | None]:
        """(argv, namespace) for the VM's agent: the node's recorded namespace, which the agent
        enters itself (as `linklab exec` does), else `ip netns exec` for an older state file."""
        netns = state.node_netns(self.lab_name, node)
        if netns is not None and runner.container_pid(netns):  # a container node: nsenter in the guest
            return runner.netns_argv(command, netns), None
        return (command, netns) if netns is not None else (self.argv(node, command), None)

    def capture(self, node: str, command: list[str], timeout: float = 60) -> tuple[int, str]:
        if self.in_vm:
            argv, netns = self._in_vm(node, command)
            out = io.BytesIO()
            rc = placement.lab_vm().run(argv, cwd=str(Path.cwd()), stdout=out, stderr=out, timeout=timeout,
                                        netns=netns)
            return rc, out.getvalue().decode(errors="replace")
        res = runner.run(self.argv(node, command), check=False, timeout=timeout)
        return res.returncode, res.stdout + res.stderr

    def stream(self, node: str, command: list[str]) -> int:
        """Output straight to the terminal; Ctrl-C interrupts the command (then the prompt returns)."""
        if self.in_vm:
            argv, netns = self._in_vm(node, command)
            return placement.lab_vm().run(argv, cwd=str(Path.cwd()), netns=netns)  # forwards Ctrl-C itself
        sys.stdout.flush()
        proc = runner.start(self.argv(node, command), stdout=None, stderr=None)  # own session: Ctrl-C reaches us, we pass it on
        try:
            return proc.wait()
        except KeyboardInterrupt:
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                    proc.wait(timeout=2)
                    break
                except subprocess.TimeoutExpired:
                    continue
                except ProcessLookupError:
                    break
            raise


def loss_matrix(hosts: list[str], lost: dict[tuple[str, str], bool]) -> str:
    """Pure: the pingall table, rows sending, columns receiving, 0 or 100 (% lost), '-' on the diagonal."""
    w = max([len(h) for h in hosts] + [4])
    lines = [f"{'loss %':<{w}} " + " ".join(f"{h:>{w}}" for h in hosts)]
    for a in hosts:
        cells = ["-" if a == b else ("100" if lost[(a, b)] else "0") for b in hosts]
        lines.append(f"{a:<{w}} " + " ".join(f"{c:>{w}}" for c in cells))
    return "\n".join(lines)


def address_of(lab: Lab, src: str, dst: str) -> str:
    """dst's IPv4 address as src sees it (src's hosts entries), else dst's first address."""
    for addr, name in lab.node(src).hosts if lab.node(src).kind == "host" else []:
        if name == dst and ipaddress.ip_address(addr).version == 4:
            return addr
    for link in lab.links:
        for e in link.ends:
            if e.node == dst and e.ipv4:
                return str(ipaddress.ip_interface(e.ipv4).ip)
    raise UsageError(f"{dst} has no IPv4 address (switches have none)")


class LabShell(cmd.Cmd):
    intro = "linklab cli: type help for commands, exit or Ctrl-D to leave"

    def __init__(self, lab_name: str, executor: NodeExec | None = None, stdout=None):
        super().__init__(stdout=stdout)
        _, self.lab = lab.load_lab(lab_name)
        self.lab_name = lab_name
        self.x = executor or NodeExec(lab_name)
        self.prompt = f"linklab({lab_name})> "
        self.hosts = [n.name for n in self.lab.nodes if n.kind == "host"]
        self.node_names = [n.name for n in self.lab.nodes]

    def say(self, text: str = "") -> None:
        self.stdout.write(text + "\n")
        self.stdout.flush()

    # ---- the loop: Ctrl-C stops a command, never the prompt ------------------------------
    def run(self) -> None:
        self.say(self.intro)
        while True:
            try:
                line = input(self.prompt)
            except EOFError:
                self.say()
                return
            except KeyboardInterrupt:
                self.say("^C")
                continue
            try:
                if self.onecmd(line):
                    return
            except KeyboardInterrupt:
                self.say("\n*** interrupted")
            except LinklabError as e:
                self.say(e.render())

    def emptyline(self) -> bool:
        return False  # not cmd's default of repeating the last command

    # ---- Mininet's vocabulary -------------------------------------------------------------
    def do_nodes(self, arg: str) -> None:
        """nodes: list the lab's nodes"""
        self.say("available nodes are: \n" + " ".join(self.node_names))

    def do_links(self, arg: str) -> None:
        """links: every link, its ends, MTU and (bonds) mode and members"""
        for link in self.lab.links:
            ends = " <-> ".join(f"{e.node}:{e.ifname}" for e in link.ends)
            extra = ""
            if link.bonds:
                b = link.bonds[0]
                extra = f" bond {b.mode} x{len(b.members)} ({', '.join(b.members)})"
            self.say(f"{link.name}: {ends} mtu {link.mtu}{extra}")

    def do_dump(self, arg: str) -> None:
        """dump: every node with its addressed interfaces"""
        for n in self.lab.nodes:
            ifaces = [f"{e.ifname}:{e.ipv4 or '-'}" for link in self.lab.links for e in link.ends if e.node == n.name]
            kind = n.kind if n.kind == "host" else f"{n.switch_kind} switch"
            self.say(f"<{kind} {n.name}: {' '.join(ifaces)} netns ll-{self.lab_name}-{n.name}>")

    def do_pingall(self, arg: str) -> None:
        """pingall: every host pings every other host once; prints who reached whom and a loss matrix"""
        self.say("*** Ping: testing ping reachability")
        pairs = [(a, b) for a in self.hosts for b in self.hosts if a != b]

        def one(pair):
            a, b = pair
            rc, _ = self.x.capture(a, ["ping", "-n", "-c", "1", "-W", str(PING_TIMEOUT_S),
                                       address_of(self.lab, a, b)], timeout=PING_TIMEOUT_S + 15)
            return pair, rc != 0

        with ThreadPoolExecutor(max_workers=4) as pool:
            lost = dict(pool.map(one, pairs))
        for a in self.hosts:
            self.say(f"{a} -> " + " ".join("X" if lost[(a, b)] else b for b in self.hosts if b != a))
        n_lost = sum(lost.values())
        pct = round(100 * n_lost / len(pairs)) if pairs else 0
        self.say(f"*** Results: {pct}% dropped ({len(pairs) - n_lost}/{len(pairs)} received)")
        self.say(loss_matrix(self.hosts, lost))

    def do_ping(self, arg: str) -> None:
        """ping A B [COUNT]: A pings B (COUNT times, default 3)"""
        words = arg.split()
        if len(words) not in (2, 3):
            raise UsageError("usage: ping A B [COUNT]")
        a, b = self._node(words[0]), self._node(words[1])
        count = words[2] if len(words) == 3 else "3"
        self.x.stream(a, ["ping", "-n", "-c", count, address_of(self.lab, a, b)])

    def do_iperf(self, arg: str) -> None:
        """iperf A B [SECONDS]: TCP goodput from A to B with iperf3 (default 5 s)"""
        from linklab.measure.iperf3 import Iperf3Client
        words = arg.split()
        if len(words) not in (2, 3):
            raise UsageError("usage: iperf A B [SECONDS]")
        a, b = self._node(words[0]), self._node(words[1])
        seconds = int(words[2]) if len(words) == 3 else IPERF_SECONDS
        addr = address_of(self.lab, a, b)
        self.say(f"*** Iperf: testing TCP bandwidth between {a} and {b} ({seconds} s)")
        # One-off server that gives up when no client comes (an interrupted test leaves nothing).
        rc, out = self.x.capture(b, ["iperf3", "-s", "-1", "-D", "--idle-timeout", str(seconds + 20)])
        if rc:
            raise LinklabError(f"iperf3 server on {b} failed: {out.strip()}")
        rc, out = self.x.capture(a, ["iperf3", "-c", addr, "-t", str(seconds), "-J", "--connect-timeout", "5000"],
                                 timeout=seconds + 30)
        if rc:
            raise LinklabError(f"iperf3 {a} -> {b} failed: {out.strip()[-300:]}")
        res = Iperf3Client.parse(out[out.index("{"):])
        self.say(f"*** Results: {a} -> {b} {res.received_bps / 1e6:.1f} Mbit/s received, "
                 f"{res.sent_bps / 1e6:.1f} Mbit/s sent, {res.retransmits} retransmits")

    def do_help(self, arg: str) -> None:
        """help [COMMAND]: what each command does"""
        if arg:
            return super().do_help(arg)
        self.say("commands:")
        for name in ("nodes", "links", "dump", "pingall", "ping", "iperf", "exit"):
            self.say("  " + (getattr(self, f"do_{name}").__doc__ or name))
        self.say("  NODE COMMAND...: run COMMAND on NODE, e.g. h1 ip addr, h1 ping -c2 h2 (lab names resolve)")
        self.say("Ctrl-C stops the running command; Ctrl-D or exit leaves.")

    def do_exit(self, arg: str) -> bool:
        """exit: leave (also quit, Ctrl-D)"""
        return True

    do_quit = do_exit
    do_EOF = do_exit

    def default(self, line: str) -> None:
        words = shlex.split(line)
        if words and words[0] in self.node_names:
            if len(words) == 1:
                raise UsageError(f"{words[0]}: give a command to run there, e.g. {words[0]} ip addr")
            rc = self.x.stream(words[0], words[1:])
            if rc:
                self.say(f"*** exit status {rc}")
            return
        raise UsageError(f"unknown command {words[0]!r}: type help (nodes: {', '.join(self.node_names)})")

    def _node(self, name: str) -> str:
        if name not in self.node_names:
            raise UsageError(f"unknown node {name!r} (valid: {', '.join(self.node_names)})")
        return name

    # ---- completion: commands and node names ------------------------------------------------
    def completenames(self, text, *ignored):
        return super().completenames(text, *ignored) + [n for n in self.node_names if n.startswith(text)]

    def completedefault(self, text, line, begidx, endidx):
        return [n for n in self.node_names if n.startswith(text)]

    complete_ping = complete_iperf = completedefault


def run_shell(lab_name: str | None) -> int:
    name = lab_name or lab.default_lab()
    shell = LabShell(name)
    history = state.state_dir() / "cli_history"
    try:
        import readline
        readline.set_completer_delims(" \t")
        readline.set_completer(shell.complete)
        readline.parse_and_bind("tab: complete")
        try:
            readline.read_history_file(history)
        except OSError:
            pass
    except ImportError:  # no readline: plain input() still works
        readline = None
    try:
        shell.run()
    finally:
        if readline is not None:
            history.parent.mkdir(parents=True, exist_ok=True)
            readline.set_history_length(1000)
            readline.write_history_file(history)
    return 0
