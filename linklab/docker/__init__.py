"""Docker for container nodes: the Engine API over its unix socket (api.py), linklab's own
engine started where the lab runs (engine.py), and images built with no registry (images.py)."""
