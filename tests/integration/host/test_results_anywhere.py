"""`linklab sweep --results DIR` with DIR outside the checkout, the lab in the lab VM (which shares
only the checkout and the state directory): the VM is stopped under the sweep once a repetition
is recorded, and what was recorded is in DIR; the sweep run again resumes that run from DIR and
completes it; after the VM stops, DIR has every repetition (linklab/results/spool.py)."""

import csv
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest

from linklab import state
from linklab.measure import flags
from tests.integration.host.cli import linklab

ROOT = Path(__file__).resolve().parents[3]
EXPERIMENT = "tests/integration/data/kill.yaml"  # 2 points x 2 repetitions of 1 s, lab onelink
LAB = "onelink"
# A delay makes the lab netem's: in the lab VM wherever this kernel lacks sch_netem (a lab of htb
# alone runs natively where htb is built in; linklab/placement.py).
IN_VM = ("--set", "links[wire].impair.delay=1ms")


def _runs_in_vm() -> bool:
    from linklab import placement
    from linklab.sweep.plan import point_labs
    from linklab.validate import load_experiment
    labs = point_labs(ROOT / EXPERIMENT, load_experiment(ROOT / EXPERIMENT), (tuple(IN_VM[1].split("=", 1)),))
    return placement.want_vm_for_up(False, False, labs)[0]


pytestmark = [pytest.mark.timeout(900), pytest.mark.lab_vm,
              pytest.mark.skipif(not _runs_in_vm(), reason="the lab runs natively: no lab VM to stop")]
# A state directory of its own, so a lab VM of its own (inside the checkout, which the VM shares):
# the one it stops under the sweep is not the checkout's, which test_cli_lifecycle.py may be using
# at the same time (make test runs this tier two files at a time).
STATE_DIR = ROOT / ".linklab" / f"test-anywhere-{os.getpid()}"


@pytest.fixture(scope="module", autouse=True)
def _own_state_dir():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LINKLAB_STATE_DIR", str(STATE_DIR))
        yield
        linklab("vm", "stop", timeout=120)  # the test stopped it already, unless it failed first
    shutil.rmtree(STATE_DIR, ignore_errors=True)


def _reps(run_dir: Path) -> list[Path]:
    return sorted(p for p in run_dir.glob("points/*/rep*") if p.name[3:].isdigit() and (p / "row.json").is_file())


def test_a_sweep_in_the_vm_keeps_every_repetition_in_a_directory_outside_the_checkout(tmp_path):
    results = tmp_path / "elsewhere" / "results"
    assert not str(results).startswith(str(ROOT))
    spool_root = state.state_dir() / "results-spool"
    stopped = {}

    def kept_rep() -> bool:
        """A repetition recorded to stay: one measured while the host was busy is moved aside and
        measured again (measure/flags.py), so its row is not yet what the run keeps."""
        for row in spool_root.glob("*/itkill/*/points/*/rep1/row.json"):
            try:
                if not flags.measure_again(json.loads(row.read_text())):
                    return True
            except (OSError, ValueError):
                continue  # moved aside meanwhile
        return False

    def stop_vm_after_first_rep():
        end = time.monotonic() + 600
        while time.monotonic() < end and not kept_rep():
            time.sleep(0.5)
        stopped["vm"] = linklab("vm", "stop", timeout=120)

    try:
        watcher = threading.Thread(target=stop_vm_after_first_rep)
        watcher.start()
        first = linklab("sweep", EXPERIMENT, *IN_VM, "--results", str(results), timeout=700)
        watcher.join()
        out = first.stdout + first.stderr
        assert stopped["vm"].returncode == 0, stopped["vm"].stderr
        assert first.returncode != 0, out  # the VM went away under it
        assert f"the lab VM does not share {results}" in out and f"copied into {results}" in out, out
        runs = sorted((results / "itkill").iterdir())
        assert len(runs) == 1, runs
        kept = _reps(runs[0])
        assert kept, out  # what was recorded before the VM stopped is here, on the host
        print(f"\nVM stopped under the sweep: {len(kept)} of 4 repetitions in {results}", file=sys.stderr)
        assert not json.loads((runs[0] / "manifest.json").read_text()).get("complete")

        # Again: the VM boots, the lab is built again, the run in DIR is resumed (not a new one) and completed.
        second = linklab("sweep", EXPERIMENT, *IN_VM, "--results", str(results), timeout=700)
        assert second.returncode == 0, second.stdout + second.stderr
    finally:
        linklab("down", LAB)  # stops the VM: no lab left in it
    assert linklab("vm", "status").stdout.strip() == "lab VM: not running"
    assert sorted((results / "itkill").iterdir()) == runs  # resumed in place
    reps = _reps(runs[0])
    assert len(reps) == 4 and set(kept) <= set(reps), reps
    assert json.loads((runs[0] / "manifest.json").read_text())["complete"] is True
    with open(runs[0] / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and all(float(r["throughput_bps"]) > 0 for r in rows), rows
    assert not any(spool_root.glob("*/itkill"))  # the spool is gone once copied
