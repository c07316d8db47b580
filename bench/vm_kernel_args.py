"""The lab VM's guest kernel options under software emulation, side by side: VMs booted one after
the other, alternately with the options given and without (the anchor), each running the same
script — clock reads, a Python start, a lab built and removed, and unshaped TCP through a veth
pair and through a bond. Run it alone on the machine.

    .venv/bin/python bench/vm_kernel_args.py [--rounds 2] [--args 'tsc=reliable no5lvl']
"""
import argparse
import shlex

from _fresh_vm import run_in_fresh_vm

from linklab.vm.launcher import VMConfig

SCRIPT = r'''
# t NAME COMMAND...: its wall time as RESULT NAME_s
t() { local name=$1 t0=$(date +%s.%N); shift; "$@" >/dev/null 2>&1; echo "RESULT ${name}_s $(echo "$(date +%s.%N)-$t0"|bc)"; }
echo "RESULT clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
.venv/bin/python - <<'PY'
import time
n = 200000
t0 = time.perf_counter(); [time.monotonic_ns() for _ in range(n)]; dt = time.perf_counter() - t0
print(f"RESULT clock_read_us {dt / n * 1e6:.3f}")
t0 = time.perf_counter(); sum(i * i for i in range(3_000_000)); print(f"RESULT python_loop_s {time.perf_counter() - t0:.3f}")
PY
for i in 1 2; do t cli_help .venv/bin/python -m linklab --help; done
export LINKLAB_STATE_DIR=/tmp/kab-state  # the guest's own /tmp: not the checkout's labs
for i in 1 2; do
  t0=$(date +%s.%N); .venv/bin/python -m linklab up topologies/bond2.yaml --name kab >/dev/null 2>&1
  echo "RESULT up_s $(echo "$(date +%s.%N)-$t0"|bc)"
  t0=$(date +%s.%N); .venv/bin/python -m linklab down kab >/dev/null 2>&1
  echo "RESULT down_s $(echo "$(date +%s.%N)-$t0"|bc)"
done
# Unshaped TCP through one veth pair between two namespaces (no lab: nothing limits it but the CPU).
ip netns add kaa; ip netns add kbb
ip link add va netns kaa type veth peer name vb netns kbb
ip -n kaa addr add 10.99.0.1/24 dev va; ip -n kbb addr add 10.99.0.2/24 dev vb
ip -n kaa link set va up; ip -n kbb link set vb up; ip -n kaa link set lo up; ip -n kbb link set lo up
ip netns exec kbb iperf3 -s -1 -B 10.99.0.2 >/dev/null 2>&1 &
sleep 1
for mtu in 1500 9000; do
  ip -n kaa link set va mtu $mtu; ip -n kbb link set vb mtu $mtu
  ip netns exec kbb iperf3 -s -1 -B 10.99.0.2 -p 5202 >/dev/null 2>&1 &
  sleep 0.5
  ip netns exec kaa iperf3 -c 10.99.0.2 -p 5202 -t 5 -J > /tmp/kab.json 2>/dev/null
  .venv/bin/python -c "import json; e=json.load(open('/tmp/kab.json'))['end']; print('RESULT veth_mbps_mtu$mtu', round(e['sum_received']['bits_per_second']/1e6, 1))"
done
ip netns exec kaa ping -c 50 -i 0.02 -q 10.99.0.2 | awk -F/ '/rtt/ {print "RESULT ping_avg_ms", $5}'
pkill -f "iperf3 -s -1 -B 10.99.0.2"; ip netns del kaa; ip netns del kbb
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--args", default="tsc=reliable", help="the guest kernel options to compare with none")
    a = ap.parse_args()
    opts = tuple(shlex.split(a.args))
    for r in range(a.rounds):
        # ABBA: the order swapped each round, so a machine that slows over the run hits both alike
        arms = [("none", ()), (a.args, opts)]
        for name, args in (arms if r % 2 == 0 else arms[::-1]):
            run_in_fresh_vm(VMConfig(accel="tcg", tcg_kernel_args=args), SCRIPT, f"round {r + 1}: kernel args {name}")


if __name__ == "__main__":
    main()
