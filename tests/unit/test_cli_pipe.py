"""The CLI as a shell pipeline's first program."""

import subprocess
import sys

from conftest import BASELINE_E1


def test_a_reader_that_goes_away_ends_the_command_quietly():
    # `linklab speed ... | head -2`: the rest of the output has nowhere to go. A shell's own
    # programs end on SIGPIPE (exit 141) without a word; linklab printed a BrokenPipeError traceback.
    data = BASELINE_E1.parent
    proc = subprocess.Popen([sys.executable, "-m", "linklab", "compare", str(data / "e1-baseline-2026-11-27"),
                             str(data / "e1-faster-2026-11-28"), "--all"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader goes away before linklab writes (a pipe buffer would hide a later exit)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141 and "Traceback" not in err, err
