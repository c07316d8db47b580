"""Python and os-ken start times in the lab VM with the interpreter's libraries cached
(linklab/vm/pylibs.py) and, as the anchor, without: one VM after the other, each booted for this
run (~1 min each under TCG). Run it alone on the machine.

    .venv/bin/python bench/vm_python_start.py            # both
    .venv/bin/python bench/vm_python_start.py on|off     # one
"""
import sys

from _fresh_vm import run_in_fresh_vm

from linklab.vm.launcher import VMConfig
script = r'''
export EVENTLET_NO_GREENDNS=yes
t() { local t0=$(date +%s.%N); "$@" >/dev/null 2>&1; echo "$(echo "$(date +%s.%N)-$t0"|bc) s: $*"; }
grep -E " 9p " /proc/mounts | grep -v "^/dev/root" | cut -c1-150
for i in 1 2 3; do t .venv/bin/python -c pass; done
for i in 1 2; do t .venv/bin/python -c "import os_ken.cmd.manager"; done
for i in 1 2; do t .venv/bin/python -m linklab --help; done
for port in 16653 16654; do
  t0=$(date +%s.%N)
  .venv/bin/osken-manager --ofp-listen-host 127.0.0.1 --ofp-tcp-listen-port $port controllers/l2_learning.py > /tmp/osk.log 2>&1 &
  pid=$!
  until ss -ltn | grep -q ":$port"; do sleep 0.1; done
  echo "$(echo "$(date +%s.%N)-$t0"|bc) s: osken-manager listening"
  kill $pid; wait $pid 2>/dev/null
done
'''
for cached in (sys.argv[1:] or ["on", "off"]):
    run_in_fresh_vm(VMConfig(accel="tcg", cache_python_libs=cached == "on"), script, f"cache {cached}")
