"""Interop with the labs people already use: Mininet scripts, containerlab topologies, a Mininet-style CLI."""
