"""One sweep session whatever executes it (linklab/sweep/session.py: `fill`): an executor written
here, in the test, fills a run as the lab's, the dry run's and a cluster's do — resumed, its failed
repetition set aside and measured again, the table, the manifest's timing, `complete` — with no
change to the session."""

from pathlib import Path

import pytest

from linklab.results.store import ResultsStore
from linklab.sweep import session
from linklab.sweep.plan import load_experiment
from linklab.sweep.matrix import expand

E1 = Path(__file__).resolve().parents[2] / "experiments" / "e1_bonding_mtu.yaml"


class Tally:
    """A new executor: a row per repetition (the order it was measured in), failing those it is
    told to; `stop_after`: raise after that many, as a sweep stopped under it would."""

    at_once = 1

    def __init__(self, store: ResultsStore, fail=(), stop_after: int | None = None):
        self.store, self.fail, self.stop_after = store, set(fail), stop_after
        self.measured: list[tuple[str, int]] = []
        self.finished = False

    def measure(self, points, todo, progress):
        for p in points:
            for rep in todo[p.id]:
                if self.stop_after is not None and len(self.measured) == self.stop_after:
                    raise KeyboardInterrupt
                progress.start_unit(f"{p.key} rep {rep}")
                self.measured.append((p.id, rep))
                row = {"point_key": p.key, "order": len(self.measured)}
                if (p.id, rep) in self.fail:
                    row["error"] = "told to fail"
                self.store.record(p, rep, {"tally.txt": "x"}, row)
                progress.finish_unit()

    def finish(self):
        self.finished = True
        return {"timing": {"tally_s": 1.5}, "tally": len(self.measured)}


@pytest.fixture
def run(tmp_path):
    exp = load_experiment(E1, quick=True).model_copy(update={"repetitions": 2})
    points = expand(exp.matrix, exclude=exp.exclude)
    store = ResultsStore.create(tmp_path, exp.name, {"fingerprint": "f"})
    return exp, points, store


def test_a_new_executor_fills_a_run_and_a_second_session_measures_only_its_failed_repetition_again(run):
    exp, points, store = run
    first = Tally(store, fail={(points[3].id, 2)})
    session.fill(store, exp, points, session.Options(), first, started=0.0, say=lambda *_: None)
    assert len(first.measured) == len(points) * 2 == 24 and first.finished
    assert store.failed() == {(points[3].id, 2)}
    assert not store.manifest.get("complete")  # a failed repetition is measured again first
    timing = store.manifest["timing"]
    assert timing["tally_s"] == 1.5 and timing["sweep_wall_s"] > 0 and store.manifest["tally"] == 24
    assert len(store.rows()) == 24 and (store.path / "results.csv").is_file()

    said = []
    again = Tally(store)
    session.fill(store, exp, points, session.Options(), again, started=0.0, say=said.append)
    assert again.measured == [(points[3].id, 2)]
    assert any("retrying failed repetition" in s for s in said)
    assert store.failed() == set() and store.manifest["complete"] is True


def test_a_session_stopped_under_its_executor_still_writes_what_it_has_and_resumes_the_rest(run):
    exp, points, store = run
    stopped = Tally(store, stop_after=5)
    with pytest.raises(KeyboardInterrupt):
        session.fill(store, exp, points, session.Options(), stopped, started=0.0, say=lambda *_: None)
    assert stopped.finished and len(store.rows()) == 5 and not store.manifest.get("complete")
    rest = Tally(store)
    session.fill(store, exp, points, session.Options(), rest, started=0.0, say=lambda *_: None)
    assert len(rest.measured) == 24 - 5 and not set(rest.measured) & set(stopped.measured)
    assert store.manifest["complete"] is True and len(store.rows()) == 24


def test_without_retry_a_failed_repetition_is_accepted_and_the_run_complete(run):
    exp, points, store = run
    tally = Tally(store, fail={(points[0].id, 1)})
    session.fill(store, exp, points, session.Options(retry_failed=False), tally, started=0.0, say=lambda *_: None)
    assert store.failed() == {(points[0].id, 1)} and store.manifest["complete"] is True
