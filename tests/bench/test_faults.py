"""The kill harness (bench/faults.py) with a few seeded kills against real ``mmrag serve`` processes: the
invariants hold after every restart, and its checker does see a planted inconsistency."""

from __future__ import annotations

import sqlite3

import pytest

from bench import faults
from bench.fault_check import check_folder, compare_rankings

pytestmark = pytest.mark.integration


def test_three_seeded_kills_lose_nothing_and_the_checker_sees_planted_faults(tmp_path):
    lines: list[str] = []
    tally = faults.run(3, seed=3, folder=tmp_path, script=faults.SCRIPT[:3], log=lines.append)
    assert tally.kills == 3, lines
    assert tally.found.clean, tally.found.notes
    assert sum(tally.hits.values()) >= 2, lines  # the kills landed in the stages they aimed at
    assert len(tally.cycle_s) == 3 + tally.misses

    # the checker is not blind: the last episode's folder, changed behind the server's back
    data = max((p for p in tmp_path.glob("episode-*") if p.is_dir()), key=lambda p: p.stat().st_mtime)
    docs = {c: {r[0]: r[1] for r in rows(data, c)} for c in ("a", "b", "c")}
    assert check_folder(data, docs).clean
    victim = next(iter(docs["a"]))
    with sqlite3.connect(data / "catalog.sqlite3") as db:
        db.execute("DELETE FROM documents WHERE corpus = 'a' AND id = ?", (victim,))
    with sqlite3.connect(data / "jobs.sqlite3") as db:
        db.execute("UPDATE jobs SET state = 'running' WHERE id = (SELECT id FROM jobs LIMIT 1)")
    found = check_folder(data, docs)
    assert found.lost >= 1 and found.mismatched >= 1 and found.stuck == 1, found.notes

    ranked = [("d1", 1, 2.0), ("d2", 1, 1.0), ("d3", 1, 1.0)]
    assert compare_rankings({"q": ranked}, {"q": ranked}).clean
    tie = compare_rankings({"q": [ranked[0], ranked[2], ranked[1]]}, {"q": ranked})
    assert tie.clean and tie.ties == 1
    swapped = compare_rankings({"q": [ranked[1], ranked[0], ranked[2]]}, {"q": ranked})
    assert swapped.mismatched == 1


def rows(data, corpus: str) -> list[tuple[str, int]]:
    with sqlite3.connect(data / "catalog.sqlite3") as db:
        return db.execute("SELECT id, page_count FROM documents WHERE corpus = ?", (corpus,)).fetchall()


def test_on_the_celery_path_killed_workers_and_a_killed_writer_lose_nothing(tmp_path):
    """Redis + a cpu and a gpu Celery worker + the server as the single writer: a kill in parse and one in
    embed SIGKILL the worker running the stage (a new one takes its late-acknowledged task), one in write the
    server; every job ends done, nothing lost or duplicated, the searches rank as a clean run's."""
    from bench.fault_aims import Aim
    from bench.faults_celery import celery_deployment

    planned = iter([Aim("parse", "step", steps=1), Aim("embed", "step", steps=1), Aim("write", "time", 0.1)])
    lines: list[str] = []
    with celery_deployment(tmp_path) as make:
        tally = faults.run(3, seed=0, folder=tmp_path, script=faults.SCRIPT[:1], log=lines.append, make=make,
                           aims=lambda op: next(planned))
    assert tally.kills == 3 and tally.misses == 0, lines
    assert tally.found.clean, (tally.found.notes, lines)
    assert tally.hits["parse"] == 1 and tally.hits["embed"] == 1 and tally.hits["write"] == 1, lines
    workers = sorted(p.name for p in tmp_path.glob("logs-*/worker-*.log"))
    # the clean run: two workers, two more after its restart; each of the 3 episodes two; one per worker killed
    assert len(workers) == 4 + 2 * 3 + 2, workers
