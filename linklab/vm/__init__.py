"""The lab VM: a QEMU guest running a distribution kernel for features the host kernel lacks.

launcher (host: boot, run, stop), client (host side of one conversation), agent (guest daemon),
protocol (the frames both sides speak).
"""
