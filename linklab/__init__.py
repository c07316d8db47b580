"""linklab: declarative network-emulation labs (bonded, impaired links) for Linux."""

__version__ = "0.1.0"
