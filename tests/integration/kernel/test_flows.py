"""Several flows at once on real packets (`flows: rrul`): experiments/bufferbloat.yaml --quick
across the dumbbell (its bottleneck 1 Gbit/s written, run at the lab VM's scale; 20 ms base RTT;
a 100 ms queue bound each way), the FIFO against fq_codel, one repetition each: eight flows
measured together, each flow's goodput and Jain's index in the row, the ping beside them waiting
out the FIFO's queue and not fq_codel's, and each repetition a flent data file. About 1.5 min
in the lab VM (one lab, changed in place; 2 windows of 5 s after 4 s of settle and warm-up).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from linklab.cli import main
from linklab.results.runs import Run

ROOT = Path(__file__).resolve().parents[3]
EXPERIMENT = ROOT / "experiments" / "bufferbloat.yaml"
AQM = "links[bottleneck].impair.aqm"


@pytest.mark.timeout(600)
def test_rrul_fills_a_fifo_not_fq_codel_and_each_flow_is_in_the_row_and_the_flent_file(tmp_path, capsys):
    rc = main(["sweep", str(EXPERIMENT), "--quick", "--lab", "rrulq", "--results", str(tmp_path)])
    out = capsys.readouterr().out
    try:
        assert rc == 0, out
        (run_dir,) = (tmp_path / "bufferbloat").iterdir()
        rows = {r[AQM]: r for r in Run.load(run_dir).rows}
        seen = "\n".join(f"{k}: {json.dumps({c: v for c, v in r.items() if 'flow' in c or 'load' in c or 'jain' in c or 'goodput' in c})}"
                         for k, r in rows.items())
        assert sorted(rows) == ["fifo", "fq_codel"], seen
        for aqm, r in rows.items():
            assert not r.get("error"), seen
            assert r["flow_count"] == 8, seen  # four each way
            goodputs = [v for c, v in r.items() if c.startswith("flow_") and c.endswith("_goodput_bps")]
            assert len(goodputs) == 8 and all(g > 0 for g in goodputs), seen
            # the sum is the flows' goodput, each way's half of it
            assert sum(goodputs) == pytest.approx(r["throughput_bps"], rel=1e-6), seen
            assert r["goodput_up_bps"] + r["goodput_down_bps"] == pytest.approx(r["throughput_bps"], rel=1e-6), seen
            assert 1 / 8 <= r["jain_index"] <= 1.0, seen  # Jain's index is 1/n .. 1 by definition
        # A FIFO bounded at 100 ms each way, both ways full of loss-based flows: the ping beside
        # them waits in both (each way's data queue holds the other way's acknowledgements too).
        # Every queue linklab models on the path adds up to 222 ms (two bottleneck FIFOs, two
        # host ports of at most 10 ms, two shaper buckets); the lab VM measured 285 ms (p50, min
        # 241): ~60 ms no modelled queue accounts for, an open question (bench/README.md,
        # "Queues and shapers"). Bounds: a tenth of one FIFO at least, twice the model at most.
        # fq_codel serves the sparse ping ahead of the bulk queues: at most half the FIFO's
        # added delay and 30 ms (the emulator's scheduling; 9 ms measured).
        fifo, fq = rows["fifo"]["load_ping_added_p50_ms"], rows["fq_codel"]["load_ping_added_p50_ms"]
        assert 10.0 <= fifo <= 2 * 222.0, seen
        assert fq <= min(0.5 * fifo, 30.0), seen

        assert main(["export", "--to", "flent", str(run_dir)]) == 0
        files = sorted((run_dir / "flent").glob("*.flent.gz"))
        assert len(files) == 2, files
        data = json.loads(gzip.decompress(files[0].read_bytes()))
        assert data["metadata"]["NAME"] == "rrul_be"
        assert len(data["x_values"]) > 10 and any("Ping" in k for k in data["results"]), sorted(data["results"])
    finally:
        main(["down", "rrulq"])
