"""The embedded runner's queue (:class:`mmrag.jobs.fair_queue.FairQueue`): corpora in turn, a bound per corpus."""

from __future__ import annotations

import threading

from mmrag.jobs.fair_queue import FairQueue
from mmrag.jobs.model import Work


def _names(q: FairQueue, n: int) -> list[str]:
    out = []
    for _ in range(n):
        taken = q.get()
        assert taken is not None
        out.append(f"{taken.corpus}:{taken.work.stage}{taken.work.file}")
        q.done(taken)
    return out


def test_corpora_take_turns_and_parses_go_before_plans_within_one():
    q = FairQueue()
    for i in range(3):
        q.put(Work("plan", "ja", i), "a")
    q.put(Work("parse", "ja", 9, 0), "a")
    q.put(Work("plan", "jb", 0), "b")
    q.put(Work("plan", "jb", 1), "b")
    assert _names(q, 6) == ["a:parse9", "b:plan0", "a:plan0", "b:plan1", "a:plan1", "a:plan2"]


def test_a_corpus_holds_at_most_its_share_while_others_are_served():
    q = FairQueue(share=1)
    q.put(Work("plan", "ja", 0), "a")
    q.put(Work("plan", "ja", 1), "a")
    first = q.get()
    assert first is not None and first.corpus == "a"
    got: list[str] = []
    t = threading.Thread(target=lambda: got.append(q.get().corpus))  # type: ignore[union-attr]
    t.start()
    t.join(0.2)
    assert t.is_alive() and not got, "a second item of corpus a was handed out while it held its share"
    q.put(Work("plan", "jb", 0), "b")
    t.join(2)
    assert got == ["b"]
    q.done(first)
    second = q.get()
    assert second is not None and (second.corpus, second.work.file) == ("a", 1)


def test_stop_wakes_a_waiting_thread():
    q = FairQueue()
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(q.get()))
    t.start()
    q.stop()
    t.join(2)
    assert out == [None]
