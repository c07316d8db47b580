"""A bash script in a lab VM booted for it alone, then stopped: what the benchmarks that compare
two VM configurations (one VM after the other) share."""
import shutil
import sys
import tempfile
from pathlib import Path

from linklab.vm.launcher import LabVM, VMConfig

REPO = Path(__file__).resolve().parents[1]


def run_in_fresh_vm(config: VMConfig, script: str, title: str) -> None:
    """Boot a VM with `config` (its own state directory), run `script` there from the repository
    root with its output on ours, stop it."""
    state = Path(tempfile.mkdtemp())
    vm = LabVM(state, config, rwdirs=[REPO])
    try:
        print(f"== {title}", flush=True)
        vm.ensure_running(say=lambda m: print(m, flush=True))
        vm.run(["bash", "-c", script], cwd=str(REPO), stdout=sys.stdout.buffer, stderr=sys.stderr.buffer)
        sys.stdout.flush()
    finally:
        vm.stop(say=lambda m: None)
        shutil.rmtree(state, ignore_errors=True)
