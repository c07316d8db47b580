"""linklab: declarative network-emulation labs (bonded, impaired links) for Linux."""

__version__ = "0.1.0"
# What `up`, `show` and `export` build when no topology is named (here, not in the CLI, so the
# sub-commands' modules read it without importing linklab.cli).
DEFAULT_TOPOLOGY = "topologies/bond2.yaml"
