import os, sys, time, json, tempfile
sys.path.insert(0, "/work/main")
from pathlib import Path
from linklab import state, runner
from linklab.model.resolved import Lab
from linklab.backends import get_backend
from linklab.measure.ping import Ping
from linklab.sweep import preflight
from linklab.measure import nstat
from linklab.sweep import measure_rep

def t(label, f, n=3):
    ts = []
    for _ in range(n):
        t0 = time.monotonic(); r = f(); ts.append(time.monotonic() - t0)
    print(f"{label:40} min {min(ts)*1e3:8.1f} ms  median {sorted(ts)[len(ts)//2]*1e3:8.1f} ms", flush=True)
    return r


name = state.all_labs()[0]
lab = Lab.model_validate(state.require(name)["resolved"])
be = get_backend()
h1 = be.node_netns(lab, "h1"); 
print("lab", name, [n.name for n in lab.nodes])
t("inspect(lab)", lambda: be.inspect(lab))
t("bond_problems", lambda: preflight.bond_problems(lab))
t("ping fits c3 i0.2", lambda: Ping(target="h2", count=3, interval=0.2, size=1472, dont_fragment=True, family=4, wait=2).run(netns=h1, timeout=15))
t("ping fits c3 i0.02", lambda: Ping(target="h2", count=3, interval=0.02, size=1472, dont_fragment=True, family=4, wait=2).run(netns=h1, timeout=15))
r = t("ping next c2 i0.2 W1", lambda: Ping(target="h2", count=2, interval=0.2, size=1473, dont_fragment=True, family=4, wait=1).run(netns=h1, timeout=15))
print("   ", r.verdict)
t("ping next c2 i0.02 W0.5", lambda: Ping(target="h2", count=2, interval=0.02, size=1473, dont_fragment=True, family=4, wait=0.5).run(netns=h1, timeout=15))
t("true via runner", lambda: runner.run(["true"]))
t("true via runner netns", lambda: runner.run(["true"], netns=h1))
t("nstat netns", lambda: nstat.Nstat().run(netns=h1))
t("qdisc_stats(lab)", lambda: measure_rep.qdisc_stats(lab))
t("cc read", lambda: be.read_sysctls(lab, "h1", ["net.ipv4.tcp_congestion_control"]))
d = Path("/work/main/.scratch/fs"); d.mkdir(exist_ok=True)
def wr(sync):
    for i in range(10):
        with open(d / f"f{i}", "wb") as f:
            f.write(b"x" * 5000); f.flush()
            if sync: os.fsync(f.fileno())
t("10 files fsynced (shared dir)", lambda: wr(True))
t("10 files unsynced (shared dir)", lambda: wr(False))
from linklab.backends.linux import netlink
t("iproute open+links", lambda: netlink.iproute(h1).get_links())
