"""tool.kind: command (linklab/measure/command.py, linklab/sweep/kinds/command.py): argv and
substitution, metrics read from a program's output, readiness waits against real local
processes, a client run for real; the experiment's checks of such a tool; its declared metrics
judged by the verdict as built-in ones; the build step; the JUnit form of a verdict."""

from __future__ import annotations

import math
import random
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest

from linklab import procs, verdict
from linklab.errors import ValidationFailed
from linklab.measure.command import CommandError, at_path, extract, read_metrics, substitute
from linklab.ready import NotReady, listening_ports, wait_ready
from linklab.results.runs import Run
from linklab.sweep import build
from linklab.sweep.experiment import Tool
from linklab.sweep.kinds import KINDS, kind_for
from linklab.sweep.kinds.command import CommandKind, CommandTraffic
from linklab.verdict.junit import junit_text
from linklab.verdict.metrics import declared

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


# -- argv and substitution -------------------------------------------------------------------

def test_a_string_is_split_as_a_shell_would_and_placeholders_filled_after_splitting():
    values = {"server": "10.0.0.2", "client": "10.0.0.1", "point.mtu": "1500", "h2": "10.0.0.2"}
    assert substitute("python3 app.py send ${server} 5001 'a b' --mtu=${point.mtu}", values) == \
        ["python3", "app.py", "send", "10.0.0.2", "5001", "a b", "--mtu=1500"]
    # a value with a space stays one argument: no shell ever sees it
    assert substitute(["echo", "${client}"], {"client": "x; rm -rf /"}) == ["echo", "x; rm -rf /"]
    assert substitute(["ping", "-c1", "${h2}"], values) == ["ping", "-c1", "10.0.0.2"]


def test_an_unknown_placeholder_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown placeholder \$\{nope\} \(valid: \$\{server\}, \$\{client\}\)"):
        substitute("x ${nope}", {"server": "a", "client": "b"})


# -- metrics from output ---------------------------------------------------------------------

OUT = 'requests=120 p50=1.250 ms p99=9.875 ms\n{"goodput_bps": 4.5e7, "streams": [{"rtt": 3}, {"rtt": 7}], "ok": true}\n'


def test_json_paths_through_objects_and_arrays_and_a_regex_group():
    assert extract("g", {"json": "goodput_bps"}, OUT) == 4.5e7
    assert extract("r", {"json": "streams.1.rtt"}, OUT) == 7.0  # the last line that is JSON, after a log line
    assert extract("p", {"regex": r"p99=([0-9.]+) ms"}, OUT) == 9.875
    assert at_path({"a": {"b": ["x", {"c": "2.5"}]}}, "a.b.1.c") == "2.5"
    assert extract("s", {"json": "a"}, '{"a": "2.5"}') == 2.5  # a number written as text is read


@pytest.mark.parametrize("spec, text, message", [
    ({"json": "goodput"}, OUT, r"no 'goodput' in the document \(it has: goodput_bps, streams, ok\)"),
    ({"json": "streams.5.rtt"}, OUT, r"streams has 2 items, no \[5\]"),
    ({"json": "ok"}, OUT, r"is true, not a number"),
    ({"json": "goodput_bps.x"}, OUT, r"goodput_bps is float, not an object"),
    ({"json": "a"}, "Traceback (most recent call last):\nKeyError: 'a'\n", r"holds no JSON document"),
    ({"regex": r"p95=([0-9.]+)"}, OUT, r"no match for regex"),
    ({"regex": r"requests=(\w+)"}, "requests=many\n", r"'many', not a number"),
    ({"json": "a"}, '{"a": NaN}', r"not a finite number"),
])
def test_output_that_does_not_hold_a_metric_says_why(spec, text, message):
    with pytest.raises(CommandError, match=message):
        extract("m", spec, text)


def test_every_unreadable_metric_is_named_with_the_outputs_tail():
    text = "\n".join(f"line {i}" for i in range(40))
    with pytest.raises(CommandError) as e:
        read_metrics({"a": {"json": "x"}, "b": {"regex": "b=(1)"}}, text)
    msg = str(e.value)
    assert "no JSON document" in msg and "b: no match" in msg
    assert msg.endswith("line 39") and "line 25" in msg and "line 24" not in msg  # the last 15 lines


# -- readiness against real processes ---------------------------------------------------------

LISTEN = ("import socket, sys, time; time.sleep(float(sys.argv[2])); s = socket.socket(); "
          "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', int(sys.argv[1]))); "
          "s.listen(); print('up', flush=True); time.sleep(30)")


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(argv, log: Path | None = None) -> subprocess.Popen:
    out = open(log, "wb") if log else subprocess.DEVNULL
    return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def test_listening_ports_from_ss_output():
    out = ("tcp   LISTEN 0      128          0.0.0.0:5001      0.0.0.0:*\n"
           "udp   UNCONN 0      0      127.0.0.1%lo:5353       0.0.0.0:*\n"
           "tcp   LISTEN 0      4096            [::]:22           [::]:*\n")
    assert listening_ports(out) == {5001, 5353, 22}


def test_a_port_wait_returns_once_a_real_server_listens_on_127_0_0_1(tmp_path):
    port = _free_port()
    p = _start([PY, "-c", LISTEN, str(port), "0.4"])
    try:
        waited = wait_ready({"port": port, "timeout": 10}, p, netns=None, workdir=tmp_path, log=None)
        # it began listening 0.4 s after it started (plus Python's start, ~0.05-0.5 s here)
        assert 0.3 <= waited <= 5.0
    finally:
        procs.stop_popen([p])


def test_a_file_wait_and_a_log_wait(tmp_path):
    p = _start([PY, "-c", "import time, pathlib; time.sleep(0.3); pathlib.Path('ready.flag').write_text('1'); "
                "print('serving on 7', flush=True); time.sleep(30)"], log=tmp_path / "server.log")
    try:
        import os
        cwd = os.getcwd()
        # the file is relative to the experiment's directory: the server writes it in its own cwd here
        assert wait_ready({"file": str(Path(cwd) / "ready.flag"), "timeout": 10}, p, netns=None,
                          workdir=tmp_path, log=None) >= 0.2
        assert wait_ready({"log": r"serving on \d+", "timeout": 10}, p, netns=None, workdir=tmp_path,
                          log=tmp_path / "server.log") < 5
    finally:
        procs.stop_popen([p])
        Path("ready.flag").unlink(missing_ok=True)


def test_a_server_that_never_gets_ready_or_exits_first_fails_with_its_output(tmp_path):
    port = _free_port()
    p = _start([PY, "-c", "import time; print('warming up', flush=True); time.sleep(30)"], log=tmp_path / "a.log")
    try:
        while not (tmp_path / "a.log").read_text():  # it has started (slow on a loaded machine) and printed
            time.sleep(0.02)
        t0 = time.monotonic()
        with pytest.raises(NotReady, match=rf"not ready \(port {port}\) within 0.5 s; its output's last lines:\nwarming up"):
            wait_ready({"port": port, "timeout": 0.5}, p, netns=None, workdir=tmp_path, log=tmp_path / "a.log")
        assert 0.5 <= time.monotonic() - t0 <= 5.0  # its timeout, plus an `ss` poll that a loaded machine slows
    finally:
        procs.stop_popen([p])
    p = _start([PY, "-c", "import sys; print('bad port', flush=True); sys.exit(3)"], log=tmp_path / "b.log")
    with pytest.raises(NotReady, match=r"exited 3 before it was ready \(port .*\n.*bad port"):
        wait_ready({"port": port, "timeout": 10}, p, netns=None, workdir=tmp_path, log=tmp_path / "b.log")


# -- a client run for real, its row ------------------------------------------------------------

def _rep():
    return SimpleNamespace(client_ns=None, raw={})


def _metrics():
    return {"goodput_bps": {"json": "goodput_bps"}, "p99_ms": {"regex": r"p99=([0-9.]+) ms"}}


def test_a_client_run_gives_its_metrics_and_keeps_its_output(tmp_path):
    kind = CommandKind(tmp_path)
    kind.metrics = _metrics()
    (tmp_path / "c.py").write_text("print('p99=2.5 ms'); print('{\"goodput_bps\": 1000}')")
    t = CommandTraffic(kind, [PY, "c.py"], timeout=30)  # relative: it runs in the experiment's directory
    rep = _rep()
    t.prepare(rep), t.start(rep), t.wait(rep)
    assert t.row(rep) == {"goodput_bps": 1000.0, "p99_ms": 2.5, "client_exit": 0}
    assert rep.raw["client.out"] == 'p99=2.5 ms\n{"goodput_bps": 1000}\n'
    kind.close()


def test_a_client_that_fails_or_prints_no_metric_fails_the_repetition_with_its_tail(tmp_path):
    kind = CommandKind(tmp_path)
    kind.metrics = _metrics()
    t = CommandTraffic(kind, [PY, "-c", "import sys; print('connection refused', file=sys.stderr); sys.exit(1)"], 30)
    rep = _rep()
    t.start(rep), t.wait(rep)
    with pytest.raises(CommandError, match=r"the client exited 1; its output's last lines:\nconnection refused"):
        t.row(rep)
    assert rep.raw["client.err"] == "connection refused\n"
    t = CommandTraffic(kind, [PY, "-c", "print('p99=2 ms')"], 30)
    t.start(rep), t.wait(rep)
    with pytest.raises(CommandError, match=r"goodput_bps: the output holds no JSON document; .*\np99=2 ms"):
        t.row(rep)
    kind.close()


def test_a_client_past_its_timeout_is_killed_and_fails(tmp_path):
    kind = CommandKind(tmp_path)
    kind.metrics = _metrics()
    t = CommandTraffic(kind, [PY, "-c", "import time; print('started', flush=True); time.sleep(30)"], timeout=0.5)
    rep = _rep()
    t0 = time.monotonic()
    t.start(rep), t.wait(rep)
    assert time.monotonic() - t0 < 5
    with pytest.raises(CommandError, match=r"killed past its timeout.*\nstarted"):
        t.row(rep)


# -- the experiment's tool -------------------------------------------------------------------

def test_kinds_are_a_registry_and_an_unknown_one_lists_the_valid():
    # flows is chosen by an experiment's flows:, not by tool.kind (the schema's two)
    assert set(KINDS) == {"iperf3", "command", "flows"} and kind_for("command") is CommandKind
    with pytest.raises(Exception, match=r"unknown tool kind 'ns3' \(valid: iperf3, command, flows\)"):
        kind_for("ns3")
    with pytest.raises(ValueError, match=r"Input should be 'iperf3' or 'command'"):
        Tool(kind="ns3")


@pytest.mark.parametrize("tool, message", [
    ({"kind": "command", "client": "x"}, "kind command needs metrics"),
    ({"kind": "command", "metrics": {"g": {"json": "g", "min_effect": 0.05}}}, "kind command needs client"),
    ({"server": "x"}, r"server: settings of kind command \(this tool is kind iperf3\)"),
    ({"kind": "command", "client": "x", "ready": {"port": 1}, "metrics": {"g": {"json": "g", "min_effect": 0}}},
     "no server is given"),
    ({"kind": "command", "client": "x", "server": "y", "ready": {"port": 1, "file": "f"},
      "metrics": {"g": {"json": "g", "min_effect": 0}}}, "exactly one of port, file, log"),
    ({"kind": "command", "client": "x", "metrics": {"g": {"regex": "(a)(b)", "min_effect": 0}}}, "exactly 1 group"),
    ({"kind": "command", "client": "x", "metrics": {"g": {"json": "a", "regex": "(a)", "min_effect": 0}}},
     "exactly one of json, regex"),
    ({"kind": "command", "client": "x", "metrics": {"g": {"json": "a"}}}, "min_effect"),
    ({"kind": "command", "client": "x", "metrics": {"Bad-Name": {"json": "a", "min_effect": 0}}}, "pattern"),
    ({"kind": "command", "client": "x 'open", "metrics": {"g": {"json": "a", "min_effect": 0}}}, "cannot be split"),
])
def test_a_command_tool_refuses_what_it_cannot_run(tool, message):
    with pytest.raises(ValueError, match=message):
        Tool.model_validate(tool)


def test_the_example_experiment_is_valid_and_a_built_in_metric_name_is_refused(tmp_path):
    from linklab.validate import load_experiment
    exp = load_experiment(ROOT / "examples/own-app/experiment.yaml")
    assert exp.tool.kind == "command" and set(exp.tool.metrics) == {"goodput_bps", "p99_ms"}
    bad = tmp_path / "exp.yaml"
    bad.write_text((ROOT / "examples/own-app/experiment.yaml").read_text().replace("topology: lab.yaml", f"topology: {ROOT}/examples/own-app/lab.yaml").replace("goodput_bps: {json", "jitter_ms: {json"))
    with pytest.raises(ValidationFailed) as e:
        load_experiment(bad)
    assert e.value.problems == [f"tool.metrics.jitter_ms: a built-in metric's name (choose another; built-in: "
                                f"{', '.join(__import__('linklab.verdict.metrics', fromlist=['BY_KEY']).BY_KEY)})"]


# -- declared metrics judged as built-in ones -----------------------------------------------------

MANIFEST_TOOL = {"kind": "command", "metrics": {
    "goodput_bps": {"json": "goodput_bps", "scale": "rel", "min_effect": 0.05, "harmless": None, "unit": "bit/s"},
    "p99_ms": {"regex": "p99=([0-9.]+)", "scale": "log", "min_effect": 0.1, "harmless": "below", "unit": "ms"}}}


def _run(name, goodput, p99, reps=4, seed=0):
    rnd = random.Random(seed)
    rows = []
    for i, delay in enumerate(("5ms", "20ms")):
        for rep in range(1, reps + 1):
            rows.append({"point_id": f"p{i}", "point_index": i, "rep": rep, "delay": delay,
                         "goodput_bps": goodput[i] * math.exp(rnd.gauss(0, 0.01)),
                         "p99_ms": p99[i] * math.exp(rnd.gauss(0, 0.01))})
    return Run(Path(f"/runs/{name}"), {"experiment": "own_app", "run": name, "matrix": {"delay": ["5ms", "20ms"]},
                                       "tool": MANIFEST_TOOL}, rows)


def test_declared_metrics_are_rows_of_the_verdicts_table():
    g, p = declared({"tool": MANIFEST_TOOL})
    assert (g.key, g.unit, g.scale, g.min_effect, g.sides) == ("goodput_bps", "bit/s", "rel", 0.05, "both")
    assert (p.key, p.scale, p.min_effect, p.sides, p.better) == ("p99_ms", "log", 0.1, "upper", "lower")
    assert declared({"tool": {"kind": "iperf3"}}) == ()


def test_a_slower_b_fails_on_its_declared_metrics_and_a_faster_tail_is_harmless():
    a = _run("a", goodput=(40e6, 20e6), p99=(20.0, 50.0), seed=1)
    slower = verdict.judge(a, _run("b", goodput=(30e6, 15e6), p99=(28.0, 70.0), seed=2), paired=True)
    by = {(j.point, j.metric.key): j for j in slower.judgments if j.metric is not None}
    assert set(by) == {(pt, k) for pt in ("delay=5ms", "delay=20ms", "(every point)") for k in ("goodput_bps", "p99_ms")}
    assert all(j.verdict == verdict.FAIL for j in by.values())
    assert 0.72 <= by[("delay=5ms", "goodput_bps")].ratio <= 0.78  # x0.75 asked, 1 % noise a repetition
    assert slower.exit_code() == 1
    faster = verdict.judge(a, _run("b", goodput=(40e6, 20e6), p99=(10.0, 25.0), seed=3), paired=True)
    tails = [j for j in faster.judgments if j.metric is not None and j.metric.key == "p99_ms"]
    assert tails and all(j.verdict == verdict.HARMLESS for j in tails) and faster.exit_code() == 0
    same = verdict.judge(a, _run("b", goodput=(40e6, 20e6), p99=(20.0, 50.0), seed=4), paired=True)
    assert same.ok and same.exit_code() == 0


def test_the_report_table_shows_declared_metrics_as_columns():
    from linklab.report import columns
    from linklab.verdict.metrics import table_of
    a = _run("a", goodput=(40e6, 20e6), p99=(20.0, 50.0))
    shown = [m.key for m in columns.present(a.rows, table_of(a.manifest))]
    assert shown == ["goodput_bps", "p99_ms"]
    assert "goodput_bps" not in columns.present(a.rows)  # the built-in table alone does not know them


# -- JUnit ---------------------------------------------------------------------------------

def test_junit_has_a_case_per_point_and_metric_and_per_point_and_structural_check():
    a = _run("a", goodput=(40e6, 20e6), p99=(20.0, 50.0), seed=1)
    b = _run("b", goodput=(30e6, 20e6), p99=(20.0, 50.0), seed=2)
    b.rows = [r for r in b.rows if not (r["point_index"] == 1 and r["rep"] == 4)]
    b.rows.append({**b.rows[-1], "rep": 4, "error": "the client exited 1"})
    res = verdict.judge(a, b, paired=True)
    root = ET.fromstring(junit_text(res, "own_app"))
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    metric_cases = [c for c in cases if not c.get("name").startswith(("structure:", "flag:"))]
    assert len(metric_cases) == len([j for j in res.judgments if j.metric is not None]) == 6
    structural = [c for c in cases if c.get("name").startswith("structure:")]
    assert len(structural) == 2 * 4  # 2 points x missing, preflight, failed, path MTU
    failed = {(c.get("classname"), c.get("name")) for c in cases if c.find("failure") is not None}
    assert ("own_app.delay=5ms", "goodput_bps (bit/s)") in failed
    assert ("own_app.delay=20ms", "structure: repetitions") in failed
    assert ("own_app.delay=20ms", "goodput_bps (bit/s)") not in failed
    f = next(c for c in cases if c.get("classname") == "own_app.delay=5ms" and c.get("name") == "goodput_bps (bit/s)")
    assert f.find("failure").get("type") == "differs" and "x0.7" in f.find("failure").get("message")
    assert suite.get("tests") == root.get("tests") == str(len(cases))
    assert suite.get("failures") == str(len(failed)) == str(len(res.failures))
    assert suite.get("skipped") == "0" and suite.get("errors") == "0"


def test_an_inconclusive_judgment_is_a_skipped_case():
    from linklab.verdict.model import INCONCLUSIVE, Judgment, Result
    a = _run("a", goodput=(40e6, 20e6), p99=(20.0, 50.0))
    m = declared({"tool": MANIFEST_TOOL})[0]
    res = Result(a, a, True, [Judgment("delay=5ms", "metric", m.title, INCONCLUSIVE, m, (1.0, 1.1), (2.0, 2.1),
                                       0.69, 0.1, 1.2)])
    root = ET.fromstring(junit_text(res, "own_app"))
    skipped = [c for c in root.iter("testcase") if c.find("skipped") is not None]
    assert len(skipped) == 1 and skipped[0].find("skipped").get("message").startswith("inconclusive")
    assert root.get("skipped") == "1" and root.get("failures") == "0"


# -- the build step --------------------------------------------------------------------------

def test_build_steps_run_in_order_in_the_tree_and_keep_their_output(tmp_path):
    said = []
    done = build.run(["python3 -c \"open('built', 'w').write('1'); print('compiled')\"",
                      [PY, "-c", "import os; print(os.path.exists('built'))"]], tmp_path, tmp_path / "logs", said.append)
    assert [d["exit"] for d in done] == [0, 0]
    assert (tmp_path / "logs/step-1.log").read_text() == "compiled\n"
    assert (tmp_path / "logs/step-2.log").read_text() == "True\n"  # the second ran after the first, in the tree
    assert said[0].startswith("linklab: build step 1/2: python3 -c")


def test_a_failed_build_step_fails_the_run_with_its_tail_and_runs_nothing_after(tmp_path):
    with pytest.raises(build.BuildFailed) as e:
        build.run([[PY, "-c", "import sys; [print(f'error {i}') for i in range(30)]; sys.exit(2)"],
                   [PY, "-c", "open('after', 'w')"]], tmp_path, tmp_path / "logs", lambda *_: None)
    assert e.value.exit_code == 1
    msg = str(e.value)
    assert msg.startswith("build step 1 (") and "exited 2; its last lines:\nerror 15\n" in msg and msg.endswith("error 29")
    assert "error 14" not in msg and str(tmp_path / "logs/step-1.log") in e.value.hint
    assert not (tmp_path / "after").exists()
    with pytest.raises(build.BuildFailed, match="could not start"):
        build.run(["no-such-compiler --version"], tmp_path, tmp_path / "logs", lambda *_: None)


# -- the kind end to end on this host (no lab: every node is 127.0.0.1) -----------------------------

class _Node:
    def __init__(self, name):
        self.name, self.sysctls = name, {}

    def address_of(self, name):
        return "127.0.0.1"


class _Lab:
    nodes = [_Node("h1"), _Node("h2")]

    def node(self, name):
        return next(n for n in self.nodes if n.name == name)


def test_the_example_program_served_measured_and_stopped_by_its_kind(tmp_path):
    from linklab.sweep import measure_rep
    from linklab.measure.probes.base import Repetition
    from linklab.sweep.phases import PhaseClock
    port = _free_port()
    tool = Tool.model_validate({"kind": "command", "server": f"python3 app.py serve {port}",
                                "client": f"python3 app.py send ${{server}} {port} ${{point.seconds}}",
                                "ready": {"log": "listening on", "timeout": "10s"},
                                "metrics": {"goodput_bps": {"json": "goodput_bps", "min_effect": 0.05},
                                            "p99_ms": {"regex": r"p99=([0-9.]+) ms", "min_effect": 0.1}}})
    plan = SimpleNamespace(tool=tool, client="h1", server="h2", axes={"seconds": "0.5"})
    handle = SimpleNamespace(name="t", lab=_Lab(), ns=lambda node: None)
    kind = CommandKind(ROOT / "examples/own-app")
    kind.serve(handle, plan, [])
    server = kind.proc
    try:
        assert server.poll() is None and kind.failed is None
        kind.serve(handle, plan, [])
        assert kind.proc is server  # the same command for the next point: kept up
        rows = []
        for _ in range(2):
            rep = Repetition(handle, "h1", "h2", 4, omit=0)
            raw, row = measure_rep.measure(rep, kind.traffic(handle, plan, 0, []), [], PhaseClock())
            rows.append((raw, row))
        (raw1, row1), (raw2, row2) = rows
        # over loopback a 64 KiB request takes tens of microseconds: far above 100 Mbit/s, a tail
        # under a second; 0.5 s each ("${point.seconds}")
        assert row1["goodput_bps"] > 1e8 and 0 < row1["p99_ms"] < 1000 and row1["client_exit"] == 0
        assert 0.45 <= row1["window_s"] <= 5.0
        assert raw1["server.log"] == f"listening on {port}\n" and "server.log" not in raw2  # only what is new
        assert '"requests"' in raw2["client.out"]
    finally:
        kind.close()
    assert server.poll() is not None  # stopped with the sweep


def test_a_server_a_killed_sweep_left_is_stopped_and_nothing_else(tmp_path):
    from linklab.sweep.kinds.command import same_command
    assert same_command(["python3", "app.py", "serve", "10.0.0.2"], ["python3", "app.py", "serve", "${server}"])
    assert not same_command(["python3", "app.py", "send", "x"], ["python3", "app.py", "serve", "${server}"])
    tool = Tool.model_validate({"kind": "command", "server": [PY, "-c", "import time; time.sleep(30)", "${h2}"],
                                "client": "x", "metrics": {"g": {"json": "g", "min_effect": 0}}})
    stale = _start([PY, "-c", "import time; time.sleep(30)", "10.0.0.2"])
    other = _start([PY, "-c", "import time; time.sleep(30)", "10.0.0.2", "more"])
    try:
        time.sleep(0.2)  # both exec'd
        backend = SimpleNamespace(node_pids=lambda lab, node: [stale.pid, other.pid] if node == "h2" else [])
        handle = SimpleNamespace(name="t", lab=_Lab(), backend=backend)
        said = CommandKind(tmp_path, tool).clean(handle)
        assert len(said) == 1 and said[0].endswith("on h2")
        assert stale.wait(timeout=5) is not None and other.poll() is None
    finally:
        procs.stop_popen([stale, other])
