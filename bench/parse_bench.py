"""`make bench`: what the dag-processor pays for the study DAGs, at today's specs and at 100 and 300,
beside Airflow's own floor for DAGs of the same shape.

A dag-processor child runs a DAG file and serializes every DAG it defines (it is forked with Airflow
already imported), and a parse that takes longer than ``dag_file_processor_timeout`` (50 s by
default) loses the file's DAGs. So each measure here is one fresh process that imports Airflow
first, untimed, then times running ``dags/studies.py`` and serializing its DAGs
(``DagSerialization.to_dict``), as the child does.

The floor is a generated DAG file of the same shape: for every study DAG, a plain DAG with the same
task ids, the same mapped tasks and dependencies, and the same trigger form (the same Params), each
task a no-op ``@task``; the form given to ``DAG(params=...)`` as most users do, and (the second
floor) attached once the tasks exist as ``factory.build_study_dag`` does. More specs are copies of
the shipped ones with new study names, read through ``MYSQLBENCH_STUDY_DIRS``.

Prints the median of BENCH_PARSE_RUNS (3) runs per size and writes work/bench/parse_bench.json.
Ratios to the floor, not seconds, are what carry over between machines.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))

from mysqlbench import paths  # noqa: E402
from mysqlbench.studies.spec import STUDIES_DIR  # noqa: E402

# the shipped specs alone, then these many in all
SIZES = [None] + [int(n) for n in os.environ.get("BENCH_PARSE_SIZES", "100,300").split(",") if n.strip()]
RUNS = int(os.environ.get("BENCH_PARSE_RUNS", "3"))
# the plain floor (form on the DAG) takes over two minutes a run at 300 specs, and a minute and a half
# at today's 12 on a busy host: measured up to this many specs (BENCH_PARSE_FORM_ON_DAG_UP_TO; 0: never)
FORM_ON_DAG_UP_TO = int(os.environ.get("BENCH_PARSE_FORM_ON_DAG_UP_TO", "100"))

# one dag-processor child: Airflow imported before the clock starts, then the file and serialization
MEASURE = """
import json, runpy, sys, time
import airflow.sdk, airflow.providers.standard.decorators.python
from airflow.serialization.serialized_objects import DagSerialization
from airflow.sdk import DAG
started = time.perf_counter()
names = runpy.run_path(sys.argv[1])
dags = [v for v in names.values() if isinstance(v, DAG)]
parsed = time.perf_counter()
size = sum(len(json.dumps(DagSerialization.to_dict(d))) for d in dags)
done = time.perf_counter()
print(json.dumps({"dags": len(dags), "tasks": sum(len(d.tasks) for d in dags), "parse_s": parsed - started,
                  "serialize_s": done - parsed, "total_s": done - started, "serialized_bytes": size}))
"""

# the floor: the same shapes, read from a JSON file written beside it
FLOOR = """
import json, pathlib
import pendulum
from airflow.sdk import DAG, Param, task

LATE = {late!r}

@task
def noop(**kwargs):
    return [{{}}]

for shape in json.loads(pathlib.Path({shapes!r}).read_text()):
    form = {{k: Param(v["default"], **v["schema"]) for k, v in shape["params"].items()}}
    with DAG(dag_id=shape["dag_id"], schedule=None, start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
             params=None if LATE else form) as dag:
        made = {{}}
        for t in shape["tasks"]:  # topological order
            ups = [made[u] for u in t["upstream"]]
            if t["mapped"]:
                made[t["task_id"]] = noop.override(task_id=t["task_id"]).expand_kwargs(ups[0])
                for u in ups[1:]:
                    u >> made[t["task_id"]]
            else:
                made[t["task_id"]] = noop.override(task_id=t["task_id"])()
                for u in ups:
                    u >> made[t["task_id"]]
    if LATE:
        dag.params = form
    globals()[shape["dag_id"]] = dag
"""


def make_specs(directory: Path, count: int) -> None:
    """``count`` specs in all: the shipped ones plus copies with new study names in ``directory``."""
    shipped = sorted(STUDIES_DIR.glob("*.yaml"))
    for n in range(count - len(shipped)):
        source = shipped[n % len(shipped)]
        text = source.read_text()
        study = re.search(r"^study: *(\S+)", text, re.M).group(1)
        name = f"gen{n:03d}_{study}"
        (directory / f"{name}.yaml").write_text(re.sub(r"^study: *\S+", f"study: {name}", text, count=1, flags=re.M))


def shapes(env: dict[str, str]) -> list[dict]:
    """Every study DAG's shape and form, from the DAGs the factory builds."""
    code = ("import json\n"
            "from mysqlbench.studies.factory import build_all\n"
            "dags, errors = build_all()\n"
            "assert not errors, errors\n"
            "out = []\n"
            "for d in dags.values():\n"
            "    params = {k: {'default': d.params.get_param(k).value, 'schema': d.params.get_param(k).schema}\n"
            "              for k in d.params}\n"
            "    tasks = [{'task_id': t.task_id, 'mapped': type(t).__name__ == 'MappedOperator',\n"
            "              'upstream': sorted(t.upstream_task_ids)} for t in d.topological_sort()]\n"
            "    out.append({'dag_id': d.dag_id, 'params': params, 'tasks': tasks})\n"
            "print(json.dumps(out))\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(path: Path, env: dict[str, str]) -> dict:
    runs = []
    for _ in range(RUNS):
        out = subprocess.run([sys.executable, "-c", MEASURE, str(path)], env=env, capture_output=True, text=True,
                             check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    median = {k: statistics.median(r[k] for r in runs) for k in ("parse_s", "serialize_s", "total_s")}
    return {**runs[0], **median, "runs": RUNS}


def main() -> None:
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in SIZES:
            extra = Path(tmp) / f"specs_{size}"
            extra.mkdir()
            if size:
                make_specs(extra, size)
            env = {**os.environ, "MYSQLBENCH_STUDY_DIRS": str(extra), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}
            shape_file = Path(tmp) / f"shapes_{size}.json"
            shape_file.write_text(json.dumps(shapes(env)))
            row = {"specs": len(json.loads(shape_file.read_text())), "ours": measure(REPO / "dags" / "studies.py", env)}
            floors = [("floor_form_after_tasks", True)]
            if row["specs"] <= FORM_ON_DAG_UP_TO:
                floors.append(("floor_form_on_dag", False))
            words = []
            for name, late in floors:
                floor = Path(tmp) / f"floor_{size}_{name}.py"
                floor.write_text(FLOOR.format(late=late, shapes=str(shape_file)))
                row[name] = measure(floor, env)
                row[f"ratio_to_{name}"] = round(row["ours"]["total_s"] / row[name]["total_s"], 3)
                words.append(f"{name.replace('_', ' ')} {row[name]['total_s']:.2f} s (x{row[f'ratio_to_{name}']:.2f})")
            row["ours_s_per_spec"] = round(row["ours"]["total_s"] / row["specs"], 4)
            results.append(row)
            print(f"  {row['specs']:4d} specs, {row['ours']['tasks']:5d} tasks: studies.py {row['ours']['total_s']:6.2f} s "
                  f"(parse {row['ours']['parse_s']:.2f} + serialize {row['ours']['serialize_s']:.2f}, "
                  f"{row['ours']['serialized_bytes'] / 1e6:.1f} MB); " + "; ".join(words), flush=True)
    out = paths.work_dir() / "bench" / "parse_bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"runs": RUNS, "sizes": results}, indent=2))
    print(f"  (x: studies.py's time / the floor's; median of {RUNS} fresh processes each; the floor with the form "
          f"on the DAG measured up to {FORM_ON_DAG_UP_TO} specs)\n  written to {out}")


if __name__ == "__main__":
    print("DAG parsing as the dag-processor does it (run the file, serialize its DAGs):")
    main()
