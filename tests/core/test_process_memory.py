"""The server hands freed memory back (glibc's malloc): a fragmented heap shrinks when trimmed, and the
trimmer thread trims until it is closed (mmrag/process_memory.py)."""

from __future__ import annotations

import os
import time

from mmrag.process_memory import Trimmer, _glibc, trim, tune_malloc


def anon_mb() -> float:
    with open(f"/proc/{os.getpid()}/status") as fh:
        return next(int(line.split()[1]) / 1024 for line in fh if line.startswith("RssAnon"))


def test_a_fragmented_heap_is_handed_back_when_trimmed() -> None:
    assert _glibc() is not None  # Debian: glibc
    blocks: list[bytearray | None] = [bytearray(100_000) for _ in range(2_000)]  # 200 MB below the mmap threshold
    for i in range(0, len(blocks), 2):
        blocks[i] = None  # every other block freed: no arena's top is free, so none is returned by itself
    before = anon_mb()
    assert trim()
    assert anon_mb() < before - 0.5 * 100  # at least half of the 100 MB freed goes back
    del blocks


def test_tuning_is_accepted_and_the_trimmer_trims_until_closed() -> None:
    assert tune_malloc(2)
    trimmer = Trimmer(0.02)
    deadline = time.monotonic() + 10
    while trimmer.trims < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    trimmer.close()
    assert trimmer.trims >= 3 and not trimmer._thread.is_alive()
    stopped = trimmer.trims
    time.sleep(0.1)
    assert trimmer.trims == stopped
    assert not Trimmer(0)._thread.is_alive()  # 0: never
