"""The CLI as a shell pipeline's first program."""

import subprocess
from pathlib import Path
import sys



def test_a_reader_that_goes_away_ends_the_command_quietly():
    # `linklab compare ... | head -2`: the rest of the output has nowhere to go. A shell's own
    # programs end on SIGPIPE (exit 141) without a word; linklab printed a BrokenPipeError traceback.
    data = Path(__file__).resolve().parents[1] / "data" / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "linklab", "compare", str(data / "e2-quick-a"),
                             str(data / "e2-quick-b"), "--all"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader goes away before linklab writes (a pipe buffer would hide a later exit)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and "Traceback" not in err, err
