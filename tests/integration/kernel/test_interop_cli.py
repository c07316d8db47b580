"""`linklab cli` driven through a real terminal (tmux): pingall, iperf, a node command, Ctrl-C
stopping a command but not the prompt, Ctrl-C at the prompt, history, exit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from linklab import state

PROMPT = "linklab(itcli)> "


class Terminal:
    def __init__(self, sock: str, command: str):
        self.tmux = ["tmux", "-S", sock]
        subprocess.run([*self.tmux, "new-session", "-d", "-x", "160", "-y", "60", command], check=True)

    def screen(self) -> str:
        return subprocess.run([*self.tmux, "capture-pane", "-p", "-J", "-S", "-2000"], capture_output=True,
                              text=True).stdout

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", *keys], check=True)

    def line(self, text: str) -> None:
        self.keys("-l", text)
        self.keys("Enter")

    def wait(self, pattern: str, timeout: float = 60, after: int = 0) -> re.Match:
        """Wait for `pattern` to appear on the screen after character `after`."""
        deadline = time.monotonic() + timeout
        while True:
            m = re.compile(pattern, re.S).search(self.screen(), after)
            if m:
                return m
            if time.monotonic() > deadline:
                raise AssertionError(f"no {pattern!r} within {timeout} s; screen:\n{self.screen()[-3000:]}")
            time.sleep(0.3)

    def prompts(self) -> int:
        return self.screen().count(PROMPT)

    def alive(self) -> bool:
        return subprocess.run([*self.tmux, "has-session"], capture_output=True).returncode == 0

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


def test_cli_in_a_terminal(make_lab, tmp_path):
    make_lab("bond2.yaml", "itcli")
    env = f"LINKLAB_STATE_DIR={state.state_dir().resolve()}"
    term = Terminal(str(tmp_path / "tmux.sock"), f"cd {os.getcwd()} && env {env} {sys.executable} -m linklab cli --lab itcli")
    try:
        # A cold Python start under emulation: 12 s on a quiet machine, minutes on a loaded one.
        term.wait(re.escape(PROMPT), timeout=420)
        t0 = time.monotonic()

        term.line("pingall")
        m = term.wait(r"\*\*\* Results: 0% dropped \(2/2 received\)\s+loss %\s+h1\s+h2\s+h1\s+-\s+0\s+h2\s+0\s+-")

        term.line("iperf h1 h2 2")
        m = term.wait(r"\*\*\* Results: h1 -> h2 ([\d.]+) Mbit/s received", timeout=90, after=m.end())
        # The bond is 2 x 100 Mbit/s here (scale 0.1): a real stream, never above the bond's rate.
        assert 1 < float(m.group(1)) < 210, m.group(0)

        term.line("h1 ip -br addr show dev bond0")
        m = term.wait(r"bond0\s+UP\s+10\.77\.0\.1/24", after=m.end())

        # Ctrl-C stops a command that would run forever, and the prompt stays.
        before = term.prompts()
        term.line("h1 ping -i 0.2 h2")
        m = term.wait(r"icmp_seq=3 ", after=m.end())
        term.keys("C-c")
        m = term.wait(r"--- h2 ping statistics ---", after=m.end())
        term.wait(re.escape(PROMPT), after=m.end())
        assert term.prompts() == before + 1
        term.line("nodes")
        m = term.wait(r"available nodes are: \s*h1 h2", after=m.end())

        # Ctrl-C at the prompt clears the line, nothing runs.
        term.keys("-l", "pingall")
        term.keys("C-c")
        m = term.wait(r"\^C", after=m.end())
        term.line("exit")
        deadline = time.monotonic() + 30
        while term.alive() and time.monotonic() < deadline:
            time.sleep(0.3)
        assert not term.alive(), term.screen()[-1000:]
        print(f"\ncli session (pingall, iperf 2 s, node command, Ctrl-C, exit): {time.monotonic() - t0:.1f} s",
              file=sys.stderr)
        history = (state.state_dir() / "cli_history").read_text()
        assert "pingall" in history and "iperf h1 h2 2" in history
    finally:
        term.close()
