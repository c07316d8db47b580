"""An exported Mininet script of an OVS topology where Open vSwitch is installed but not started
(the lab VM: nothing runs OVS in its root namespace): the script starts an ovsdb-server and
ovs-vswitchd of its own, says so, passes its --test (E3's topology: OVS, the os-ken controller),
and stops them at the end. Run as docs/interop.md says: python3 THIS.py --test, no OVS_RUNDIR."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from linklab import controllers
from linklab.interop import mininet_export
from linklab.interop.common import resolved_lab

ROOT = Path(__file__).resolve().parents[3]
SDN = ROOT / "topologies/sdn_pair.yaml"


def test_an_ovs_script_starts_open_vswitch_itself_and_stops_it(tmp_path):
    assert not os.path.exists("/var/run/openvswitch/db.sock"), "an Open vSwitch runs here: not what is tested"
    script = tmp_path / "sdn_mn.py"
    script.write_text(mininet_export.export(resolved_lab(SDN, scale=0.1), str(SDN), osken_manager=controllers.manager()))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVS_")}
    t0 = time.monotonic()
    proc = subprocess.run(["/usr/bin/python3", str(script), "--test"], capture_output=True, text=True, timeout=900,
                          env=env)
    out = proc.stdout + proc.stderr
    print(f"\nsdn_pair's Mininet script with its own OVS: {time.monotonic() - t0:.0f} s, exit {proc.returncode}",
          file=sys.stderr)
    assert proc.returncode == 0, out[-4000:]
    m = re.search(r"no Open vSwitch running \(no /var/run/openvswitch/db\.sock\): started ovsdb-server \(pid (\d+)\) "
                  r"and ovs-vswitchd \(pid (\d+)\) of this script's own in (\S+); they are stopped at the end", out)
    assert m, out[-3000:]
    assert re.search(r"linklab checks: (\d+)/\1 passed", out), out[-3000:]
    pids, rundir = [int(m.group(1)), int(m.group(2))], m.group(3)
    assert f"stopped the Open vSwitch this script started (pids {pids[0]}, {pids[1]})" in out
    assert not any(os.path.exists(f"/proc/{p}") for p in pids) and not os.path.exists(rundir)
    # Nothing of it is left where the machine's own OVS would be, nor a bridge in the datapath.
    assert not os.path.exists("/var/run/openvswitch/db.sock")
    dp = subprocess.run(["ip", "-br", "link", "show", "type", "openvswitch"], capture_output=True, text=True)
    assert "s1" not in dp.stdout.split(), dp.stdout
