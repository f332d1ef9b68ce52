"""Reproducing a past study run from its lineage (issue 22, item 5).

A rerun is a new run of the same study DAG whose conf is rebuilt from what the original run
recorded: its merged spec (every form field, dataset and workload parameter as they were) with the
point order seed fixed to the seed the original's points ran with, plus ``rerun_of``. Before any
server is touched, ``check`` compares what can be known in advance with the original's lineage:
the spec the conf merges to now (the spec file may have changed since), the exact server version
each target runs now, and the host's facts. A difference refuses the rerun with its reason, unless
the trigger also sets ``rerun_allow_differences``: then it runs, and the differences are said
beside every verdict. After measuring, ``verdicts`` compares each point and subject of the rerun
with the original's over their repetitions (``mysqlbench.statistics.compare``, unpaired: the two
runs are separate samples), against the spec's ``min_effect`` band:

- "reproduced": the whole interval of rerun / original lies inside the band;
- "reproduced (configuration differs: ...)": the same, with the server variables (or dataset)
  the two runs measured under not the same, named;
- "differs by X% (CI ...)": the whole interval lies beyond the band;
- "inconclusive": the interval straddles an edge (more repetitions would tell).

The original is read from the results store only (its kept ``summary.json`` and its rows), so a
run can be reproduced wherever its store is reachable."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mysqlbench.errors import InvalidInput
from mysqlbench.studies.form import ALLOW_DIFFERENCES, RERUN_OF  # the form's keys of a run's own settings

# spec fields a rerun may differ in without it being a difference: the seed is fixed to the one
# the original's points ran with (the original may have left it empty, i.e. random and recorded);
# dag_rounds is the DAG's shape, not a setting (a run before it was recorded has none)
_NOT_A_DIFFERENCE = frozenset({"seed", "dag_rounds"})
MAX_LISTED = 8  # configuration differences named in a verdict (all are in the numbers)


@dataclass(frozen=True)
class Original:
    """What the original run recorded, from the results store."""

    dag_id: str
    run_id: str
    spec: dict[str, Any]
    seed: int | None
    valid: bool
    server_versions: frozenset[str]
    host_hashes: frozenset[str]
    rows: list[dict[str, Any]] = field(repr=False)


def load_original(store, dag_id: str, run_id: str) -> Original:
    """The original run, or a clear error when the store does not have it (never measured, or its
    report never written)."""
    from mysqlbench.paths import run_dir_name
    from mysqlbench.results.store import samples

    text = store.report_file(dag_id, run_dir_name(run_id), "summary.json")
    if text is None:
        raise InvalidInput(f"no run {run_id!r} of {dag_id} in the results store ({store.describe()}): "
                           "a rerun is rebuilt from the original's recorded summary and rows")
    summary = json.loads(text)
    rows = store.measured_rows(samples, dag_id=dag_id, run_id=run_id)
    if not rows:
        raise InvalidInput(f"run {run_id!r} of {dag_id} measured nothing: there is nothing to reproduce")
    metadata = summary.get("metadata") or {}
    return Original(dag_id=dag_id, run_id=run_id, spec=metadata["spec"], seed=metadata.get("seed"),
                    valid=bool(summary.get("valid")),
                    server_versions=frozenset(r["server_version"] for r in rows if r.get("server_version")),
                    host_hashes=frozenset(r["host_hash"] for r in rows if r.get("host_hash")), rows=rows)


def find_dag(store, run_id: str) -> str:
    """The DAG of a run id, when only the id is given: the one DAG whose kept reports have it."""
    from mysqlbench.paths import run_dir_name

    dags = sorted({r["dag_id"] for r in store.reports_with("summary.json") if r["run"] == run_dir_name(run_id)})
    if len(dags) != 1:
        raise InvalidInput(f"run {run_id!r} is in {'no' if not dags else 'several'} DAG(s)' kept reports "
                           f"{dags or ''}: name it with --dag-id")
    return dags[0]


def conf_of(original: Original, spec_file) -> dict[str, Any]:
    """The trigger conf that rebuilds the original's spec (``spec_file``: the study's spec as its
    file says now): every form field, dataset key and workload parameter as the original had it,
    the seed fixed to the one its points ran with."""
    from mysqlbench.studies.form import dataset_fields, form_fields, workload_fields
    from mysqlbench.studies.spec import StudySpec

    spec = original.spec  # as check_spec dumped it: by alias
    conf: dict[str, Any] = {}
    for name, param, _ in form_fields():
        key = StudySpec.model_fields[name].alias or name
        if key in spec:
            conf[param] = spec[key]
    for key, _ in dataset_fields(spec_file):
        if key in (spec.get("dataset") or {}):
            conf[key] = spec["dataset"][key]
    for key in workload_fields(spec_file):
        if key in (spec.get("workload_params") or {}):
            conf[key] = spec["workload_params"][key]
    conf["seed"] = original.seed
    conf[RERUN_OF] = original.run_id
    return conf


def spec_differences(original: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """The spec fields that differ between the original's spec and the one a rerun merges to."""
    out = []
    for key in sorted(set(original) | set(now)):
        if key not in _NOT_A_DIFFERENCE and original.get(key) != now.get(key):
            out.append(f"spec {key}: {json.dumps(original.get(key), default=str)} then, "
                       f"{json.dumps(now.get(key), default=str)} now")
    return out


def host_differences(store, original: Original, host_hash: str) -> list[str]:
    """The host facts that differ from the original's (by the facts each hash was kept with)."""
    if host_hash in original.host_hashes:
        return []
    now = store.host_facts(host_hash) or {}
    out = []
    for then_hash in sorted(original.host_hashes):
        then = store.host_facts(then_hash) or {}
        changed = sorted(k for k in set(then) | set(now) if then.get(k) != now.get(k))
        out.append("another host: " + (", ".join(f"{k} {then.get(k)!r} then, {now.get(k)!r} now" for k in changed[:4])
                                       or f"host hash {then_hash} then, {host_hash} now"))
    return out


def check(original: Original, spec_now: dict[str, Any], server_versions: set[str], host_hash: str | None,
          store, allow: bool) -> list[str]:
    """Everything a rerun would differ in that can be known before it runs; refuses (InvalidInput)
    when there is any and ``allow`` is not set, else returns them to be said."""
    differences = spec_differences(original.spec, spec_now)
    gone = sorted(original.server_versions - server_versions)
    if gone:
        differences.append(f"server version {', '.join(gone)} then, {', '.join(sorted(server_versions))} now")
    if host_hash is not None:
        differences += host_differences(store, original, host_hash)
    if differences and not allow:
        raise InvalidInput(f"cannot reproduce {original.dag_id} run {original.run_id!r} as it ran: "
                           + "; ".join(differences) + f". Set {ALLOW_DIFFERENCES} to run it with these stated.")
    return differences


def configuration_differences(store, a_rows: list[dict], b_rows: list[dict]) -> list[str]:
    """What differs between the server configuration (stable variables) and dataset the two
    sides of one point measured under; empty when the same."""
    out = []
    a_hashes = {r["variables_hash"] for r in a_rows if r.get("variables_hash")}
    b_hashes = {r["variables_hash"] for r in b_rows if r.get("variables_hash")}
    if a_hashes != b_hashes:
        if len(a_hashes) == 1 and len(b_hashes) == 1:
            changed = store.variable_changes(next(iter(a_hashes)), next(iter(b_hashes)))
            out += [f"{k} {v[0] if v[0] is not None else 'absent'} -> {v[1] if v[1] is not None else 'absent'}"
                    if isinstance(v, list) else f"{k}: {v}" for k, v in list(changed.items())[:MAX_LISTED]]
            if len(changed) > MAX_LISTED:
                out.append(f"and {len(changed) - MAX_LISTED} more variables")
        else:
            out.append("server variables differ")
    a_data = {r["dataset_id"] for r in a_rows if r.get("dataset_id")}
    b_data = {r["dataset_id"] for r in b_rows if r.get("dataset_id")}
    if a_data != b_data:
        out.append(f"dataset {', '.join(sorted(a_data))} -> {', '.join(sorted(b_data))}")
    return out


def verdicts(store, original: Original, rerun_rows: list[dict[str, Any]], primary, band: float,
             stated: list[str] = ()) -> list[dict[str, Any]]:
    """Each point and subject measured in both runs: the rerun / original effect of the primary
    metric with its interval, and the reproduction verdict in words. ``stated``: differences the
    rerun was allowed to run with, said with every verdict."""
    from mysqlbench.statistics import Verdict, compare  # (numpy: only when verdicts are made)
    from mysqlbench.studies.analysis import execution_frame

    then = execution_frame(original.rows, primary)
    now = execution_frame(rerun_rows, primary)
    out = []
    keys = sorted(set(zip(then["subject"], then["point"], strict=True)) & set(zip(now["subject"], now["point"],
                                                                                  strict=True)))
    for subject, point in keys:
        a = then[(then["subject"] == subject) & (then["point"] == point) & (then["status"] == "ok")]["primary"]
        b = now[(now["subject"] == subject) & (now["point"] == point) & (now["status"] == "ok")]["primary"]
        effect = compare(a.tolist(), b.tolist(), band=band)
        in_point = [r for r in original.rows if r.get("point") == point and r.get("subject") == subject]
        in_rerun = [r for r in rerun_rows if r.get("point") == point and r.get("subject") == subject]
        config = configuration_differences(store, in_point, in_rerun)
        differs = list(stated) + config
        suffix = f" (configuration differs: {'; '.join(differs)})" if differs else ""
        if effect.verdict is Verdict.SAME:
            words = f"reproduced{suffix}: {effect.interval_words()} within ±{100 * band:.3g}%"
        elif effect.verdict in (Verdict.MORE, Verdict.LESS):
            change = f"{100 * effect.estimate:+.1f}%"
            words = (f"differs by {change} ({100 * effect.confidence:.3g}% CI {100 * effect.ci_low:+.1f}% .. "
                     f"{100 * effect.ci_high:+.1f}%, n={effect.n_a} vs {effect.n_b}; {primary.name}, rerun / original)"
                     f"{suffix}")
        else:
            words = f"inconclusive{suffix}: {effect.interval_words()}; {effect.why}"
        out.append({"subject": subject, "point": point, "metric": primary.name, **effect.as_dict(),
                    "reproduced": effect.verdict is Verdict.SAME, "configuration_differs": differs,
                    "said": f"{subject} at {point}: {words}"})
    return out
