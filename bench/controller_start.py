"""`linklab up` of an SDN lab (topologies/sdn_pair.yaml: one OVS switch, an os-ken controller) in
the lab VM, with the warm os-ken (linklab/osken_warm.py) and, as the anchor, without (every
controller a cold `osken-manager`); the same lab with no controller is the floor both approach.
One VM after the other, each booted for this run (~5 min each under TCG). Run it alone.

    .venv/bin/python bench/controller_start.py            # both
    .venv/bin/python bench/controller_start.py on|off     # one

The first `up` in a VM with the warm os-ken waits for its one import of os-ken (what a cold
controller spends too); the later ones fork.
"""
import sys

from _fresh_vm import run_in_fresh_vm

from linklab.vm.launcher import VMConfig
REPEATS = 3
script = r'''
t() { local t0=$(date +%s.%N); "$@" >/dev/null 2>&1 || echo "FAILED: $*"; echo "$(echo "$(date +%s.%N)-$t0"|bc)"; }
for i in $(seq REPEATS); do
  echo "up with controller #$i: $(t .venv/bin/python -m linklab up topologies/sdn_pair.yaml) s"
  .venv/bin/python -m linklab down sdn_pair >/dev/null 2>&1
done
echo "up, no controller (floor): $(t .venv/bin/python -m linklab up topologies/sdn_pair.yaml --set switches.s1.controller=null) s"
.venv/bin/python -m linklab down sdn_pair >/dev/null 2>&1
'''.replace("REPEATS", str(REPEATS))
for warm in (sys.argv[1:] or ["on", "off"]):
    run_in_fresh_vm(VMConfig(accel="tcg", warm_osken=warm == "on"), script, f"warm os-ken {warm}")
