"""The lab VM's emulated CPU model under software emulation, side by side: VMs booted one after the
other, alternately with QEMU's `-cpu max` (what virtme-ng asks, the anchor) and with the model
given, each running the same script as vm_kernel_args.py (clock reads, a Python loop, `linklab
--help`, a lab built and removed, unshaped TCP through a veth pair) and a cold import of what a
sweep imports. Run it alone on the machine.

    .venv/bin/python bench/vm_cpu_model.py [--rounds 2] [--cpu qemu64]
"""
import argparse

from _fresh_vm import run_in_fresh_vm
from vm_kernel_args import SCRIPT

from linklab.vm.launcher import VMConfig

IMPORTS = r'''
for i in 1 2; do
  t0=$(date +%s.%N); .venv/bin/python -c "import linklab.sweep.engine, linklab.lab" >/dev/null 2>&1
  echo "RESULT sweep_import_s $(echo "$(date +%s.%N)-$t0"|bc)"
done
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cpu", default="qemu64", help="the QEMU CPU model to compare with -cpu max")
    a = ap.parse_args()
    for r in range(a.rounds):
        # ABBA: the order swapped each round, so a machine that slows over the run hits both alike
        arms = [("max", ()), (a.cpu, ("-cpu", a.cpu))]
        for name, qemu in (arms if r % 2 == 0 else arms[::-1]):
            run_in_fresh_vm(VMConfig(accel="tcg", qemu_args=qemu), IMPORTS + SCRIPT, f"round {r + 1}: -cpu {name}")


if __name__ == "__main__":
    main()
