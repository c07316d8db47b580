import io

import pytest

from linklab.sweep.progress import Progress, format_duration


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t

    def tick(self, s):
        self.t += s


class Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("s,text", [(0, "0s"), (42, "42s"), (59.6, "1m00s"), (185, "3m05s"),
                                    (3720, "1h02m"), (90000, "25h00m"), (-3, "0s")])
def test_format_duration(s, text):
    assert format_duration(s) == text


def test_eta_unknown_until_a_unit_finishes_then_mean_times_left():
    clock = FakeClock()
    p = Progress(10, stream=io.StringIO(), clock=clock)
    p.start_unit("a")
    assert p.line().endswith("ETA ?")
    clock.tick(10)
    p.finish_unit()
    p.start_unit("b")
    clock.tick(30)
    p.finish_unit()
    # mean 20s x 8 left
    assert p.eta() == pytest.approx(160)
    assert p.line() == "[ 2/10] — 20%, elapsed 40s, ETA 2m40s"


def test_eta_ignores_already_done_and_skipped_units():
    clock = FakeClock()
    p = Progress(40, already_done=6, stream=io.StringIO(), clock=clock)
    p.skip(4)  # found already measured: no time spent, must not drag the mean down
    p.start_unit("bond_mode=802.3ad mtu=1500 streams=1 rep 2/3")
    clock.tick(60)
    p.finish_unit()
    assert p.done == 11
    assert p.eta() == pytest.approx(60 * 29)
    p.finish_unit(seconds=120)  # an explicit duration overrides the clock
    assert p.eta() == pytest.approx(90 * 28)


def test_eta_counts_down_inside_a_running_unit_but_not_below_the_rest():
    clock = FakeClock()
    p = Progress(4, stream=io.StringIO(), clock=clock)
    p.start_unit("a")
    clock.tick(100)
    p.finish_unit()
    p.start_unit("b")
    clock.tick(40)
    assert p.eta() == pytest.approx(300 - 40)
    clock.tick(500)  # this unit overran: still at least the two after it
    assert p.eta() == pytest.approx(200)


def test_line_format_matches_the_documented_example():
    clock = FakeClock()
    p = Progress(40, already_done=6, stream=io.StringIO(), clock=clock)
    p.start_unit("warmup")
    clock.tick(185)
    p.finish_unit()
    p.start_unit("bond_mode=802.3ad mtu=1500 streams=1 rep 2/3")
    # 7 of 40 done; one 185s unit measured this session, 33 left.
    assert p.line() == "[ 7/40] bond_mode=802.3ad mtu=1500 streams=1 rep 2/3 — 17%, elapsed 3m05s, ETA 1h41m"


def test_non_tty_prints_one_plain_line_per_unit_start():
    clock = FakeClock()
    out = io.StringIO()
    p = Progress(3, stream=out, clock=clock)
    p.start_unit("mtu=1500 rep 1/1")
    clock.tick(5)
    p.finish_unit()
    p.start_unit("mtu=9000 rep 1/1")
    clock.tick(5)
    p.finish_unit()
    p.close()
    assert out.getvalue() == ("[0/3] mtu=1500 rep 1/1 — 0%, elapsed 0s, ETA ?\n"
                              "[1/3] mtu=9000 rep 1/1 — 33%, elapsed 5s, ETA 10s\n")
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


def test_tty_rewrites_one_line_and_close_ends_it():
    clock = FakeClock()
    out = Tty()
    p = Progress(2, stream=out, clock=clock)
    p.start_unit("a")
    clock.tick(1)
    p.finish_unit()
    p.log("warning: something")
    assert "\n" in out.getvalue()  # the log line ends its own line
    text = out.getvalue()
    assert text.startswith("\r\x1b[2K[0/2] a")
    assert text.count("\r\x1b[2K") >= 3
    assert not text.endswith("\n")  # the progress line was redrawn after the log
    p.close()
    assert out.getvalue().endswith("[1/2] — 50%, elapsed 1s, ETA 1s\n")


def test_rejects_impossible_counts():
    with pytest.raises(ValueError):
        Progress(3, already_done=4)
