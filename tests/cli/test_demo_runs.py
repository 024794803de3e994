"""The demo's workload processes: the next one starts up while the one before ends, and its load waits for that one's
exit. The Locust process is replaced by a fake (a script that keeps the handoff as ``listeners/handoff.py`` does)."""

from __future__ import annotations

import sys
from pathlib import Path

from swarmgauge.cli.demo_pages import Workload
from swarmgauge.cli.demo_phases import PHASES, Phases
from swarmgauge.cli.demo_runs import GO, LOAD_DONE, LOAD_END, READY, abandon, finish_run, start_run

FAKE_LOCUST = """
import sys, time
from pathlib import Path
name, handoff, journal = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
def say(what):
    with open(journal, "a") as out:
        out.write(f"{name} {what}\\n")
say("started up")
(handoff / "ready").touch()
for _ in range(1000):
    if (handoff / "go").exists():
        break
    time.sleep(0.01)
say("load")
time.sleep(0.2)
(handoff / "load-end").touch()
time.sleep(0.2)
(handoff / "load-done").touch()
time.sleep(0.5)
say("ended")
"""


def _fake(tmp_path: Path, name: str, journal: Path):
    script = tmp_path / "fake_locust.py"
    script.write_text(FAKE_LOCUST)

    def command(_locustfile: Path, _plan: Path | None, handoff: Path) -> list[str]:
        return [sys.executable, str(script), name, str(handoff), str(journal)]

    return command


def test_the_next_run_starts_up_while_the_one_before_ends_and_loads_only_after_it_exited(tmp_path):
    journal = tmp_path / "journal"
    workload = Workload("w", "a fake run", "brain_leak.py", ("-t", "1s"), None)
    first = start_run(workload, tmp_path / "first", None, _fake(tmp_path, "first", journal))
    ahead = []
    assert GO == "go" and LOAD_DONE == "load-done"  # the files listeners/handoff.py keeps
    code = finish_run(
        first,
        when_load_done=lambda: ahead.append(
            start_run(workload, tmp_path / "second", None, _fake(tmp_path, "second", journal))
        ),
    )
    assert code == 0 and len(ahead) == 1
    assert finish_run(ahead[0]) == 0
    lines = journal.read_text().splitlines()
    assert lines.index("first load") < lines.index("second started up") < lines.index("first ended")
    assert lines.index("first ended") < lines.index("second load")
    assert not first.handoff.exists() and not ahead[0].handoff.exists()


def test_a_run_started_ahead_and_never_let_go_is_stopped_and_cleaned_up(tmp_path):
    journal = tmp_path / "journal"
    workload = Workload("w", "a fake run", "brain_leak.py", ("-t", "1s"), None)
    waiting = start_run(workload, tmp_path / "run", None, _fake(tmp_path, "waiting", journal))
    abandon(waiting)
    assert waiting.process.poll() is not None and not waiting.handoff.exists()
    assert "waiting load" not in (journal.read_text() if journal.exists() else "")


def test_a_finished_run_says_where_its_time_went_from_its_handoff_marks(tmp_path):
    """Start-up to the ready mark, load from the go to the users' stop, drain to the measurements' end, then the end
    to the exit: each phase measured, none negative, and they add up to the time from the go to the exit."""
    assert (READY, LOAD_END) == ("ready", "load-end")  # the marks listeners/handoff.py keeps
    workload = Workload("w", "a fake run", "brain_leak.py", ("-t", "1s"), None)
    run = start_run(workload, tmp_path / "run", None, _fake(tmp_path, "run", tmp_path / "journal"))
    seen: list[Phases] = []
    assert finish_run(run, on_phases=seen.append) == 0
    spent = seen[0].seconds()
    assert set(spent) == {"startup", *PHASES} and min(spent.values()) >= 0
    assert spent["load"] >= 0.15 and spent["drain"] >= 0.15 and spent["end"] >= 0.4  # the fake's sleeps
    whole = seen[0].exited - seen[0].let_go
    assert abs(sum(spent[name] for name in PHASES) - whole) < 0.3  # rounded to 0.1 s each


class JournalledWork:
    """What the demo does between loads (the start-up reports), as a journal of its calls: a fake of the seam."""

    def __init__(self, journal: Path) -> None:
        self.journal = journal
        self.running = False

    def _say(self, what: str) -> None:
        with open(self.journal, "a") as out:
            out.write(f"between {what}\n")

    def resume(self) -> None:
        if not self.running:
            self._say("resumed")
        self.running = True

    def tick(self) -> None:
        pass

    def pause(self) -> None:
        if self.running:
            self._say("paused")
        self.running = False


def test_work_between_loads_runs_while_a_run_starts_up_and_after_its_load_and_never_during_it(tmp_path):
    journal = tmp_path / "journal"
    workload = Workload("w", "a fake run", "brain_leak.py", ("-t", "1s"), None)
    between = JournalledWork(journal)
    first = start_run(workload, tmp_path / "first", None, _fake(tmp_path, "first", journal))
    ahead = []
    code = finish_run(
        first,
        when_load_done=lambda: ahead.append(
            start_run(workload, tmp_path / "second", None, _fake(tmp_path, "second", journal))
        ),
        between=between,
    )
    assert code == 0
    seen: list[Phases] = []
    assert finish_run(ahead[0], between=between, on_phases=seen.append) == 0
    lines = journal.read_text().splitlines()
    loads = [lines.index("first load"), lines.index("second load")]
    pauses = [i for i, line in enumerate(lines) if line == "between paused"]
    resumes = [i for i, line in enumerate(lines) if line == "between resumed"]
    assert lines[0] == "between resumed" or lines.index("first started up") < resumes[0]
    for load in loads:  # every load comes after a pause, with no resume between them
        last_pause = max(i for i in pauses if i < load)
        assert not [i for i in resumes if last_pause < i < load]
    assert lines.index("first ended") < lines.index("second load")
    assert seen[0].waited() is not None and seen[0].waited() >= 0  # the start-up waited for counts from the turn
