"""README's table of every published finding (linklab/published/reproduction.py): current with the
stored runs, each verdict's mechanism column, and its writing between the markers."""

import re
from pathlib import Path

import pytest

from linklab.errors import UsageError
from linklab.published import findings, reproduction

ROOT = Path(__file__).resolve().parents[2]
# Experiments whose reference file has landed before their stored run, and why: remove one once its
# run is under reproductions/ (the test above fails until it is removed).
AWAITING_A_RUN: dict[str, str] = {}  # experiment -> why its reference has no stored run yet


def test_readme_table_is_the_stored_runs_table():
    """The table README shows is what the stored runs give now: a finding, a reference file or a
    stored run changed without `make reproduction` fails here."""
    runs = reproduction.stored_runs(ROOT)
    refs = sorted(ROOT.glob("experiments/*.reference.yaml"))
    stored = {re.split(r"-(?:full|quick)-", path.name)[0] for path, _ in runs}
    # every experiment with published findings has a stored run, but those whose run is still to be taken
    assert {r.name.removesuffix(".reference.yaml") for r in refs} - stored == set(AWAITING_A_RUN)
    assert len(runs) >= 5
    want = reproduction.text(runs, ROOT)
    assert reproduction.between_markers(ROOT / "README.md") == want, "run `make reproduction`"


def _v(verdict: str, mechanism: str = "", tried: str = "") -> findings.Verdict:
    return findings.Verdict("x", "says", verdict, "link_fraction max 1.67 (mtu=1500)", mechanism, "max <= 1.05",
                            "100 MB/s", tried)


@pytest.mark.parametrize("verdict,expected", [
    (_v("explained", "RACK off (measured: variant agrees)"), "RACK off (measured: variant agrees)"),
    (_v("differs"), "not investigated yet"),
    (_v("differs", tried="TSO/GSO off"), "not found; ruled out: TSO/GSO off"),
    (findings.Verdict("x", "s", "differs", "max 1.67; variant a=b not measured in this run", variant="not measured"),
     "its variant is not in this run"),
    (findings.Verdict("x", "s", "differs", "max 1.67; variant a=b does not remove it: max 1.5", variant="differs"),
     "its variant does not remove it"),
    (_v("agrees", "a: 99 % → link-bound; b: 98 % → link-bound; c: 40 % → CPU-bound"), "link-bound (2 points), CPU-bound"),
    (_v("agrees"), ""),
])
def test_mechanism_column(verdict, expected):
    assert reproduction.mechanism(verdict) == expected


def test_a_row_shows_the_figure_and_escapes_pipes():
    row = reproduction.Row("e2", "baselines/e2-quick-vm-tcg", "quick", _v("differs"))
    text = reproduction.table([row])
    assert "| e2 | says | 100 MB/s | link_fraction max 1.67 (mtu=1500) | ✘ differs | not investigated yet | " \
           "`linklab report baselines/e2-quick-vm-tcg --no-figures` (quick) |" in text
    assert text.rstrip().endswith("Of 1 findings: agrees 0, differs 1, explained 0, not measured 0.")
    assert reproduction._cell("a|b\nc") == "a\\|b c"


def test_into_writes_between_the_markers_only(tmp_path):
    f = tmp_path / "README.md"
    f.write_text(f"# t\n\n{reproduction.BEGIN}\nold\n{reproduction.END}\n\nafter\n")
    assert reproduction.into(f, "| new |\n") is True
    assert f.read_text() == f"# t\n\n{reproduction.BEGIN}\n| new |\n{reproduction.END}\n\nafter\n"
    assert reproduction.into(f, "| new |\n") is False  # already current: not rewritten
    f.write_text("no markers\n")
    with pytest.raises(UsageError, match="has no place for the table"):
        reproduction.into(f, "x")
    assert f.read_text() == "no markers\n"


def test_wall_time_reads_the_manifest():
    assert reproduction._wall("2026-11-25T17:16:00+00:00", "2026-11-25T17:45:19+00:00") == "29 min 19 s"
    assert reproduction._wall("2026-11-25T17:16:00+00:00", "2026-11-25T19:17:00+00:00") == "2 h 01 min"
    assert reproduction._wall(None, "2026-11-25T17:45:19+00:00") == "—"


def test_a_run_left_incomplete_by_failed_repetitions_shows_its_sweeps_time_and_how_many_failed(tmp_path):
    from linklab.results.runs import Run
    m = {"experiment": "e3", "points": 2, "repetitions": 2, "created_at": "2026-11-29T07:33:27+00:00",
         "timing": {"sweep_wall_s": 1753.5}}
    rows = [{"rep": 1}, {"rep": 2}, {"rep": 1, "error": "iperf3: Connection timed out"}, {"rep": 2}]
    text = reproduction.runs_table([(Run(tmp_path, m, rows), "reproductions/e3", "full")])
    assert "| e3 | `reproductions/e3` | full | 2 × 2 | 29 min 13 s (1 repetition failed: the run is incomplete) |" in text
    done = {**m, "complete": True, "finished_at": "2026-11-29T08:03:27+00:00"}
    text = reproduction.runs_table([(Run(tmp_path, done, rows), "reproductions/e3", "full")])
    assert "| 30 min 00 s (1 repetition failed) |" in text
