"""The lab VM: a QEMU guest running a distribution kernel for features the host kernel lacks.

Host side: launcher (boot, run, stop the persistent VM), client (one conversation on one port),
host (kernel images, KVM, finding our QEMU processes).
Guest side: agent (runs commands sent over virtio-serial ports), zygote (pre-imported Python for
fast `python -m linklab` runs). Both: protocol (the frames they speak).
"""
