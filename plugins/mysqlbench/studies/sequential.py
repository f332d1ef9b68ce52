"""How a study's points are measured in rounds, and with ``repetitions: auto`` until each
comparison is known.

Every study measures in rounds (``StudySpec.rounds``): one repetition of each point a round, the
point order reversed each round, each point's repetition in a task of its own. What stays with a
task (the server instance its restart gave, a neighbour busy for a few seconds) then varies from
repetition to repetition like the rest of the noise, instead of moving all of a point's
repetitions at once; measured on the demo study, a task's own level was 0.5 to 1x the noise inside
it, and with several repetitions a task the intervals covered 78-94% instead of 95%. What drifts
through a run weighs alike on both sides of every comparison. A fixed number of repetitions is
measured so and compared unpaired (``design``).

With ``repetitions: auto``, the first ``min_repetitions`` rounds measure every point; then, every
``round_repetitions`` rounds, ``plan_round`` looks at every comparison of the primary metric (the
rounds between two looks measure the points the last look chose). A comparison is decided when its
verdict is "more", "less" or "same" and it has at least ``min_repetitions`` clean blocks (a block
measured under noise is kept and counted, and one more is measured in its place within the
budget). Its two points are measured again otherwise, until ``max_repetitions`` (the last round) or
``max_time_s`` (no round starts after it) is spent. Both sides of a comparison are always measured
in the same rounds, so repetition r of one side and of the other form a block measured close
together, in alternating order: drift on a shared machine cancels, and the comparison is paired
(``analysis.comparisons``).

Looking several times and stopping when the interval is decided would make a 95% interval cover
less often (simulated: 88% at the worst). Each look therefore uses ``SEQUENTIAL_CONFIDENCE``
(97.5%, a constant level per look in the manner of Pocock's design); the interval the sequence
stops at then covers the true effect 94.9-97.1% of the time across effects and noise, a task's own
level included (tests/unit/test_sequential.py simulates the shipped design: 2,000 sequences per
case)."""

from __future__ import annotations

import json
import time
from typing import Any

import pandas as pd

from mysqlbench.statistics import CONFIDENCE, Verdict

SEQUENTIAL_CONFIDENCE = 0.975


def design(spec) -> dict[str, Any]:
    """How a study's comparisons are estimated: paired at the sequential level with auto, else
    unpaired at 95%."""
    if spec.sequential:
        return {"paired": True, "confidence": SEQUENTIAL_CONFIDENCE}
    return {"paired": False, "confidence": CONFIDENCE}


def study_comparisons(frame: pd.DataFrame, spec, primary) -> list[dict[str, Any]]:
    """The run's comparisons as the report, the validation and ``plan_round`` state them."""
    from mysqlbench.studies.analysis import comparisons

    return comparisons(frame, primary, band=spec.min_effect, matrix=spec.matrix, **design(spec))


def key(row: dict[str, Any]) -> str:
    return f"{row['subject']}: {row['on']} vs {row['off']}"


def state(row: dict[str, Any], spec) -> str:
    """One primary-metric comparison's state at a look: decided, or why it needs more."""
    clean = int(row["n"]) - int(row.get("noisy") or 0)
    if row["verdict"] != Verdict.INCONCLUSIVE.value and clean >= spec.min_repetitions:
        return "decided"
    if row["verdict"] != Verdict.INCONCLUSIVE.value:
        return f"noisy: {clean} clean blocks of {spec.min_repetitions}"
    return "undecided"


def looks_at(spec, number: int) -> bool:
    """Whether round ``number`` starts with a look at the comparisons: with auto, once
    ``min_repetitions`` are measured, and then every ``round_repetitions``."""
    rounds = spec.rounds()
    if not spec.sequential or number > len(rounds):
        return False
    start = rounds[number - 1][0]
    return start >= spec.min_repetitions and (start - spec.min_repetitions) % spec.round_repetitions == 0


def plan_round(spec, points: list[dict[str, Any]], number: int, frame: pd.DataFrame, primary,
               started_at: float | None, now: float | None = None,
               previous: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The points round ``number`` (1-based) measures, each with its ``repetitions`` range, in this
    round's order, and the decision as a record: which comparisons were decided, which are measured
    again and why, or why the sequence stopped. ``started_at``: the wall-clock start of the run's
    first measured window (None: nothing measured yet). ``previous``: the record of round
    ``number - 1``, whose points a round between two looks measures again."""
    rounds = spec.rounds()
    ordered = sorted(points, key=lambda p: p["order"])
    if number % 2 == 0:
        ordered.reverse()
    if number > len(rounds):  # the DAG has more round tasks than this run's spec asks for
        return [], {"round": number, "rounds": len(rounds), "points": [],
                    "stopped": f"a fixed number of repetitions, measured in {len(rounds)} round(s)"
                    if not spec.sequential else f"max_repetitions ({spec.max_repetitions}) spent"}
    start, stop = rounds[number - 1]
    record: dict[str, Any] = {"round": number, "rounds": len(rounds), "repetitions": [start, stop]}
    if not spec.sequential or start < spec.min_repetitions:
        chosen = ordered
        record["why"] = (f"every point: repetition {start + 1}" if stop == start + 1
                         else f"every point: repetitions {start + 1} to {stop}")
    else:
        elapsed = (now if now is not None else time.time()) - started_at if started_at is not None else 0.0
        record["elapsed_s"] = round(elapsed, 1)
        if looks_at(spec, number):
            said = [row for row in study_comparisons(frame, spec, primary) if row["metric"] == primary.name]
            states = {key(row): state(row, spec) for row in said}
            record["comparisons"] = states
            need = {label for row in said if states[key(row)] != "decided" for label in (row["on"], row["off"])}
            why = f"{len([s for s in states.values() if s != 'decided'])} comparison(s) not decided"
            stopped = "decided"
        else:  # between two looks: the points the last look chose, one more repetition each
            need = set((previous or {}).get("points") or [])
            why = "the last look's undecided comparisons: the next repetition before the next look"
            stopped = (previous or {}).get("stopped") or "decided"
        if not need:
            chosen, record["stopped"] = [], stopped
        elif elapsed >= spec.max_time_s:
            chosen, record["stopped"] = [], f"max_time_s ({spec.max_time_s:g} s) spent after {elapsed:.0f} s"
        else:
            chosen, record["why"] = [p for p in ordered if p["label"] in need], why
    record["points"] = [p["label"] for p in chosen]
    return [{**p, "repetitions": [start, stop], "round": number} for p in chosen], record


def stop_reasons(said: list[dict[str, Any]], spec, records: list[dict[str, Any]]) -> dict[str, str]:
    """Why each primary-metric comparison's measuring stopped, from the run's round records and
    its final comparisons: decided, max_time_s, max_repetitions, or a round that never ran."""
    if not spec.sequential:
        return {}
    stopped_by_time = next((r["stopped"] for r in records if str(r.get("stopped", "")).startswith("max_time_s")), None)
    last_round = max((r["round"] for r in records), default=0)
    out = {}
    for row in said:
        decided = state(row, spec) == "decided"
        if decided:
            out[key(row)] = f"decided after {row['n']} paired repetitions"
        elif stopped_by_time:
            out[key(row)] = stopped_by_time
        elif int(row["n"]) >= spec.max_repetitions or last_round >= len(spec.rounds()):
            out[key(row)] = f"max_repetitions ({spec.max_repetitions}) spent"
        else:
            out[key(row)] = "stopped early: a round did not run (a point failed)"
    return out


def round_records(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``round_plan`` records a run's ``plan_round`` tasks stored, in round order."""
    records = [json.loads(r["metadata"]) if isinstance(r["metadata"], str) else r["metadata"]
               for r in rows if r.get("metric") == "round_plan"]
    return sorted(records, key=lambda r: r["round"])


def first_window_start(rows: list[dict[str, Any]]) -> float | None:
    """The wall-clock start of the run's first measured window, from its samples' metadata."""
    starts = []
    for r in rows:
        if r.get("kind") == "metric" and r.get("metadata"):
            meta = json.loads(r["metadata"]) if isinstance(r["metadata"], str) else r["metadata"]
            window = meta.get("window") or {}
            if window.get("start") is not None:
                starts.append(float(window["start"]))
    return min(starts) if starts else None
