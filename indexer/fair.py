"""Corpora take turns on Celery's ``cpu`` and ``gpu`` queues, as on the embedded runner's queues.

A Celery queue on Redis is one list served first come, first served: a job of many files (or many page
batches) queued ahead of another corpus's one-page upload would run first. So the work of those two
queues does not travel in the Celery message. :meth:`FairQueues.push` keeps it in Redis, one sorted set
per corpus (within a corpus: parses before plans, then first in, first out, as
:mod:`mmrag.jobs.fair_queue`), with a ring of the corpora that have work; the Celery message is only a
**turn** (``mmrag.turn``, its queue's name as argument). A worker that runs a turn takes the next corpus
in the ring and that corpus's next work (:meth:`FairQueues.take`, one Lua script: atomic across workers).
Which work runs is decided when a worker is free, not when the message was queued, so the messages a
worker prefetches (``worker_prefetch_multiplier=1``: one per process) carry no order.

Every push of new work sends one turn, so there are never fewer turns than work. The work a turn took is
held under the turn's task id until :meth:`FairQueues.done`: a turn redelivered (its worker died: ``acks_late``
with ``task_reject_on_worker_lost``) or retried (``task.retry`` keeps the id) runs the same work again, and
the same work pushed twice (the owner re-sending a stalled job) is queued once (its key is its stage, job,
file and batch), the spare turn finding nothing to do. One corpus holds at most ``MMRAG_JOBS__CORPUS_SHARE``
``cpu`` turns at once (0: no bound): set it below the number of ``cpu`` worker processes and the others are
always free for the other corpora, as the embedded runner's spare thread is. A turn that finds every corpus
with work at its share is owed, and the next turn to finish sends it again. The owner registers each job's corpus
(:meth:`FairQueues.register_job`); a job it did not register takes turns of its own.

Lifecycle: one per process that sends or runs work (the owner, each worker), built from the broker's URL
(Redis); thread-safe (redis-py's connection pool).
"""

from __future__ import annotations

import json

import redis

from mmrag.config import JobsConfig
from mmrag.jobs.fair_queue import STAGE_ORDER
from mmrag.jobs.model import Work

FAIR_QUEUES = frozenset({"cpu", "gpu"})
"""The Celery queues whose work takes turns by corpus (``write`` is the owner's, one item at a time, quick)."""

PREFIX = "mmrag:fair"
JOB_TTL_S = 14 * 24 * 3600  # a job's corpus is remembered this long after its last (re)send

# KEYS: ring, corpus set prefix, info hash, sequence, job key. ARGV: member, info, stage order, job id.
# A score is stage order * 2^40 + arrival (exact in Lua's doubles).
_PUSH = """
local corpus = redis.call('GET', KEYS[5]) or ARGV[4]
local set = KEYS[2] .. corpus
local seq = redis.call('INCR', KEYS[4])
local added = redis.call('ZADD', set, 'NX', tonumber(ARGV[3]) * 1099511627776 + seq, ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
if added == 1 and redis.call('ZCARD', set) == 1 then redis.call('RPUSH', KEYS[1], corpus) end
return added
"""

# KEYS: ring, corpus set prefix, info hash, held hash, owed count. ARGV: turn id, share, seconds a hold counts.
# Returns the work's JSON ([member, info, time taken, corpus]) or nil. A corpus holding ``share`` turns (0: no
# bound) is passed over; when every corpus with work is, the turn is owed (``done`` sends it again).
_TAKE = """
local held = redis.call('HGET', KEYS[4], ARGV[1])
if held then return held end
local share, now = tonumber(ARGV[2]), tonumber(redis.call('TIME')[1])
local holding = {}
if share > 0 then
  for _, v in ipairs(redis.call('HVALS', KEYS[4])) do
    local h = cjson.decode(v)
    if now - h[3] < tonumber(ARGV[3]) then holding[h[4]] = (holding[h[4]] or 0) + 1 end
  end
end
local n = redis.call('LLEN', KEYS[1])
for _ = 1, n do
  local corpus = redis.call('LPOP', KEYS[1])
  if share == 0 or (holding[corpus] or 0) < share then
    local set = KEYS[2] .. corpus
    local member = redis.call('ZPOPMIN', set)[1]
    if redis.call('ZCARD', set) > 0 then redis.call('RPUSH', KEYS[1], corpus) end
    if member then
      local info = redis.call('HGET', KEYS[3], member)
      redis.call('HDEL', KEYS[3], member)
      local work = cjson.encode({member, info or '{}', now, corpus})
      redis.call('HSET', KEYS[4], ARGV[1], work)
      return work
    end
  else
    redis.call('RPUSH', KEYS[1], corpus)
  end
end
if n > 0 then redis.call('INCR', KEYS[5]) end
return nil
"""

# KEYS: held hash, owed count. ARGV: turn id. Returns 1 when an owed turn is to be sent again.
_DONE = """
redis.call('HDEL', KEYS[1], ARGV[1])
if tonumber(redis.call('GET', KEYS[2]) or '0') > 0 then
  redis.call('DECR', KEYS[2])
  return 1
end
return 0
"""


def member_of(work: Work) -> str:
    """The work's key in its corpus's set: one entry per (stage, job, file, batch), whatever it carries."""
    return f"{work.stage}|{work.job_id}|{work.file}|{work.batch}"


class FairQueues:
    def __init__(self, client: redis.Redis, cpu_share: int = 0, hold_s: float = 3600.0) -> None:
        self.client = client
        self.shares = {"cpu": cpu_share, "gpu": 0}  # turns one corpus may hold at once (0: no bound)
        self.hold_s = hold_s  # a turn held longer counts no more (its message was lost: the visibility timeout)
        self._push = client.register_script(_PUSH)
        self._take = client.register_script(_TAKE)
        self._done = client.register_script(_DONE)

    @classmethod
    def from_settings(cls, config: JobsConfig) -> FairQueues:
        url = config.broker_url or ""
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"MMRAG_JOBS__BROKER_URL={url!r}: the distributed mode needs a Redis broker "
                             "(redis://, rediss:// or unix://): corpora take turns in Redis")
        return cls(redis.Redis.from_url(url), config.corpus_share, config.visibility_timeout_s)

    def register_job(self, job_id: str, corpus: str) -> None:
        """Which corpus's turns the job's work takes (the owner calls this when it submits or re-sends a job)."""
        self.client.set(f"{PREFIX}:job:{job_id}", corpus, ex=JOB_TTL_S)

    def push(self, work: Work) -> bool:
        """Queue ``work`` for a turn of its corpus; False when the same work was queued already."""
        q = self._keys(work.queue)
        added = self._push(keys=[q["ring"], q["set"], q["info"], q["seq"], f"{PREFIX}:job:{work.job_id}"],
                           args=[member_of(work), json.dumps(work.as_args()[3]), STAGE_ORDER.get(work.stage, 0),
                                 work.job_id])
        return bool(added)

    def take(self, queue: str, turn: str) -> Work | None:
        """The work of turn ``turn`` (a task id): what it took before (a redelivery or a retry), or the next
        corpus's next work; None when there is none (its work ran on another turn)."""
        q = self._keys(queue)
        raw = self._take(keys=[q["ring"], q["set"], q["info"], q["held"], q["owed"]],
                         args=[turn, self.shares[queue], int(self.hold_s)])
        if raw is None:
            return None
        member, info, _, _ = json.loads(raw)
        stage, job_id, file, batch = member.split("|")
        return Work.from_args(stage, job_id, int(file), int(batch), json.loads(info))

    def done(self, queue: str, turn: str) -> bool:
        """The turn's work has run (its next work sent): a redelivery of the turn takes new work. True: a turn
        was owed (it found every corpus with work at its share): the caller sends one again."""
        q = self._keys(queue)
        return bool(self._done(keys=[q["held"], q["owed"]], args=[turn]))

    def pending(self, queue: str) -> dict[str, int]:
        """Work queued per corpus (for tests and operators)."""
        q = self._keys(queue)
        corpora = [c.decode() if isinstance(c, bytes) else c for c in self.client.lrange(q["ring"], 0, -1)]
        return {c: int(self.client.zcard(q["set"] + c)) for c in corpora}

    @staticmethod
    def _keys(queue: str) -> dict[str, str]:
        if queue not in FAIR_QUEUES:
            raise ValueError(f"queue {queue!r} does not take turns (only {sorted(FAIR_QUEUES)})")
        base = f"{PREFIX}:{queue}"
        return {"ring": f"{base}:ring", "set": f"{base}:corpus:", "info": f"{base}:info", "seq": f"{base}:seq",
                "held": f"{base}:held", "owed": f"{base}:owed"}
