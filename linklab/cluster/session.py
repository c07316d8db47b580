"""Connecting to a Ray cluster, or starting a local one, with every process on 127.0.0.1.

A local cluster (`--cluster local:N`) is N Ray nodes on this machine, each advertising
{"linklab": 1}: the nodes, the driver and every server they start are bound to the loopback
address, with no dashboard. node_ip_address binds the nodes; the driver (and every process the
nodes start) would still turn 127.0.0.1 into the machine's own address when it connects
(ray._private.services.resolve_ip_for_localhost), unless Ray is told this is a one-machine
cluster: RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, read when ray is imported (Ray 2.60).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

from linklab.cluster.address import Address, import_ray
from linklab.cluster import worker
from linklab.cluster.worker import RESOURCE
from linklab.errors import EnvironmentProblem, StateError

LOOPBACK = "127.0.0.1"
ONE_MACHINE = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
NODE_CPUS = 1  # a unit asks for no CPU (num_cpus=0): this only sizes each node's worker pool
OBJECT_STORE_BYTES = 80 << 20  # per local node: repetitions' raw files are small


def _node_args() -> dict:
    return {"node_ip_address": LOOPBACK, "num_cpus": NODE_CPUS, "resources": {RESOURCE: 1},
            "include_dashboard": False, "object_store_memory": OBJECT_STORE_BYTES}


def _warm(ray) -> None:
    """A worker process started on every node that may host a lab, before the sweep: a node's
    first task waits ~1 s for Python and linklab to start there, a cost of the cluster's start,
    not of the points (bench/ray_overhead.py measures the points)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # late: start-up cost (import_ray)
    task = ray.remote(worker.worker_info)
    nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get(RESOURCE)]
    ray.get([task.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=True)).remote()
             for n in nodes], timeout=120)


@contextmanager
def connect(address: Address, say=print) -> Iterator[int]:
    """Connected to the cluster for the block; yields how many nodes can host a lab."""
    if address.on_loopback:
        os.environ[ONE_MACHINE] = "0"  # before ray is imported; the nodes and their workers inherit it
    ray = import_ray()  # ray's modules below are imported late alike (start-up cost)
    cluster = None
    try:
        if address.on_loopback:
            from ray._private import ray_constants
            ray_constants.ENABLE_RAY_CLUSTER = False  # in case ray was imported before (the tests)
        if address.local_nodes:
            from ray.cluster_utils import Cluster
            say(f"linklab: starting a local Ray cluster of {address.local_nodes} nodes on {LOOPBACK}")
            cluster = Cluster(initialize_head=True, connect=False, head_node_args=_node_args())
            for _ in range(address.local_nodes - 1):
                cluster.add_node(**_node_args())
            cluster.wait_for_nodes()
            ray.init(address=cluster.address, _node_ip_address=LOOPBACK, logging_level="ERROR",
                     log_to_driver=False)
        else:
            ray.init(address=address.address, logging_level="ERROR", log_to_driver=False)
        slots = int(ray.cluster_resources().get(RESOURCE, 0))
        if slots < 1:
            raise StateError(f"no node of the Ray cluster at {address} advertises the resource {RESOURCE!r}",
                             hint=f"start each node that may host a lab with `ray start … --resources='{{\"{RESOURCE}\": 1}}'`")
        _warm(ray)
        yield slots
    except ConnectionError as e:
        raise EnvironmentProblem(f"cannot reach the Ray cluster at {address}: {e}",
                                 hint="is `ray start --head` running there, and is the address right?") from None
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if cluster is not None:
            cluster.shutdown()
