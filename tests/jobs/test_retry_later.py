"""RetryLater: a file's failure the full disk kept from being recorded is sent again after a delay,
until the writer applies it; ``stop`` cancels what waits. Only that case is retried."""

from __future__ import annotations

import errno
import threading

from mmrag.jobs.model import Failed, Work
from mmrag.jobs.retry_later import RetryLater, unrecorded_failure

FAILED = Work("commit", "j", 0, -1, Failed("corrupt_document", "bad"))
FULL = OSError(errno.ENOSPC, "No space left on device")


def test_only_a_failure_the_full_disk_kept_unrecorded_is_retried():
    assert unrecorded_failure(FAILED, FULL)
    assert unrecorded_failure(FAILED, RuntimeError("flush: No space left on device (os error 28)"))
    assert not unrecorded_failure(FAILED, RuntimeError("a bug"))
    assert not unrecorded_failure(Work("write", "j", 0, 0), FULL)  # a write's fault fails its file instead


def test_sent_again_after_a_doubling_delay_until_stopped():
    sent: list[list[Work]] = []
    fired = threading.Event()
    later = RetryLater(lambda w: (sent.append(w), fired.set()), first_s=0.01, most_s=0.02)
    later(FAILED)
    assert fired.wait(10) and sent == [[FAILED]]
    fired.clear()
    later(FAILED)  # it failed again: sent again later, still
    assert fired.wait(10) and sent == [[FAILED], [FAILED]]
    assert later.waiting() == 0
    slow = RetryLater(sent.append, first_s=60)
    slow(FAILED)
    assert slow.waiting() == 1
    slow.stop()  # the runner stops: nothing is sent
    assert slow.waiting() == 0 and len(sent) == 2
