"""Where the kill harness (:mod:`bench.faults`) kills: the aims (a stage, after its k-th durable write or a seeded
delay into it), the probe file's events (:mod:`bench.fault_probe`) and the watcher that sends the SIGKILL."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

STAGES = ("parse", "embed", "write", "finish_file", "reweight", "optimize", "delete")
STEPS = {"parse": 3, "embed": 1, "write": 2, "finish_file": 2, "reweight": 2, "optimize": 1, "delete": 2}
"""The writes of each stage (spool files, store updates, catalog and job rows; a nested stage's not counted)."""


class Killable(Protocol):
    """What the watcher needs of a deployment: its probe file, and a SIGKILL for the process of a thread."""

    probe: Path

    def kill_for(self, thread: str) -> None: ...


class Staged(Protocol):
    """An operation of the script, by the stages it runs."""

    @property
    def stages(self) -> tuple[str, ...]: ...


@dataclass(frozen=True, slots=True)
class Aim:
    """Where to kill: in ``stage``, after its ``steps``-th write (``step``) or ``delay_s`` after it starts."""

    stage: str
    mode: str  # step | time
    steps: int = 1
    delay_s: float = 0.0


def read_events(probe: Path) -> list[tuple[float, str, str, str]]:
    out = []
    for line in probe.read_text().splitlines():
        parts = line.split(" ")
        if len(parts) == 4:
            out.append((float(parts[0]), parts[1], parts[2], parts[3]))
    return out


def active_stages(events: list[tuple[float, str, str, str]]) -> list[str]:
    """The stages entered and not left (per thread), innermost last, at the end of the events."""
    stacks: dict[str, list[str]] = {}
    for _, thread, event, name in events:
        if event == "enter":
            stacks.setdefault(thread, []).append(name)
        elif event == "exit" and stacks.get(thread):
            stacks[thread].pop()
    return sorted(s for stack in stacks.values() for s in stack)


def kill_when(server: Killable, aim: Aim, done: threading.Event) -> str | None:
    """Watch the probe file; SIGKILL the server where ``aim`` says. Returns the stages it hit (None: the target
    stage never ran before the operation ended)."""
    seen = 0
    entered: dict[str, float] = {}  # thread -> when it entered the target
    steps: Counter[str] = Counter()
    depth: Counter[str] = Counter()  # thread -> nesting depth inside the target
    while True:
        events = read_events(server.probe)
        for _, thread, event, name in events[seen:]:
            if name == aim.stage and event == "enter":
                depth[thread] += 1
                entered.setdefault(thread, time.monotonic())
            elif name == aim.stage and event == "exit":
                depth[thread] -= 1
                if depth[thread] == 0:
                    entered.pop(thread, None)
                    steps.pop(thread, None)
            elif event == "step" and depth[thread] > 0:
                steps[thread] += 1
        seen = len(events)
        now = time.monotonic()
        due = next((t for t, t0 in entered.items() if (aim.mode == "step" and steps[t] >= aim.steps)
                    or (aim.mode == "time" and now - t0 >= aim.delay_s)), None)
        if due is not None:
            server.kill_for(due)
            hit = active_stages(read_events(server.probe))
            return "+".join(hit) or "idle"
        if done.is_set() and not entered:
            return None
        time.sleep(0.003)



def aims_from(seed: int) -> Callable[[Staged], Aim]:
    """Seeded aims: each stage in turn (in a shuffled order), among those the operation runs."""
    rng = random.Random(seed)
    order = list(STAGES)
    rng.shuffle(order)
    turn = Counter[str]()

    def aim(op: Staged) -> Aim:
        stage = min(op.stages, key=lambda s: (turn[s], order.index(s)))
        turn[stage] += 1
        if stage == "finish_file" or rng.random() < 0.5:  # finish_file: entered at each write, often a no-op
            return Aim(stage, "step", steps=rng.randint(1, STEPS[stage]))
        return Aim(stage, "time", delay_s=rng.uniform(0.0, 0.6))

    return aim
