"""A local cluster's driver killed with -9: `linklab clean` stops each node's unit sweep and takes
its lab down in the node's own state directory, and leaves everything while the driver runs."""

import subprocess

import pytest

from linklab import fsutil, procs
from linklab.cluster import leftovers
from linklab.cluster.worker import CHILD_FILE


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    calls = []

    class Res:
        returncode, stdout, stderr = 0, "", ""

    def run(argv, check=False, timeout=None, env=None):
        calls.append((argv[3:], env["LINKLAB_STATE_DIR"]))
        return Res()

    monkeypatch.setattr(leftovers.runner, "run", run)
    monkeypatch.setattr(leftovers, "_vm_running", lambda node: node.name == "node-b")
    root = tmp_path / "cluster"
    a, b, c = root / "node-a", root / "node-b", root / "node-c"
    (a / "labs").mkdir(parents=True)
    (a / "labs" / "bond2.json").write_text("{}")
    b.mkdir()   # no lab left, its VM still running
    c.mkdir()   # nothing left: not touched
    sweep = subprocess.Popen(["sleep", "60"])  # stands in for a unit's `linklab sweep`
    fsutil.write_json_atomic(a / CHILD_FILE, procs.identity(sweep.pid))
    yield root, calls, sweep
    sweep.kill()
    sweep.wait()


def test_nothing_is_touched_while_the_driver_runs(cluster):
    root, calls, sweep = cluster
    with leftovers.driver_recorded(root):
        assert leftovers.abandoned_nodes(root) == []
        assert leftovers.clean(root) == [] and calls == [] and sweep.poll() is None
    assert not (root / leftovers.DRIVER_FILE).exists()


def test_a_killed_driver_s_nodes_are_stopped_taken_down_and_their_vms_stopped(cluster):
    root, calls, sweep = cluster
    # The driver's record names a process that no longer runs (its pid now someone else's).
    fsutil.write_json_atomic(root / leftovers.DRIVER_FILE, {"pid": sweep.pid, "start": 1, "comm": "python"})
    listed = leftovers.clean(root, dry_run=True)
    assert len(listed) == 2 and calls == [] and sweep.poll() is None  # a dry run changes nothing
    assert listed[0].startswith(f"cluster node node-a: its unit's sweep (pid {sweep.pid}), lab bond2")
    assert listed[1] == "cluster node node-b: its lab VM (the cluster's driver is gone)"
    assert leftovers.clean(root) == listed
    sweep.wait(timeout=5)  # stopped: it held node-a's lab
    assert calls == [(["down"], str(root / "node-a")), (["vm", "stop"], str(root / "node-a")),
                     (["vm", "stop"], str(root / "node-b"))]
