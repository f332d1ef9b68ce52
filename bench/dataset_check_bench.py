"""`make bench` (dataset check): how long making sure an intact generated TPC-H dataset is there
takes, the way every load and study does it (size and stat stamp), side by side with re-hashing
every .tbl file (what it did before), on the same files in one run. Median of BENCH_RUNS (3) each,
at BENCH_SF (1). The stamped check must stay under 2 s at SF 1."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))

from mysqlbench import paths  # noqa: E402
from mysqlbench.statistics import compare  # noqa: E402
from mysqlbench.workloads.tpch import generate  # noqa: E402

SF = float(os.environ.get("BENCH_SF", "1"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    manifest = generate.ensure_generated(SF)  # untimed: make sure the files exist
    directory = generate.dataset_dir(SF)
    stamped, rehashed = [], []
    for _ in range(RUNS):
        stamped.append(timed(lambda: generate.ensure_generated(SF)))
        rehashed.append(timed(lambda: generate.is_intact(directory, manifest, rehash=True)))
    summary = {"scale_factor": SF, "runs": RUNS, "bytes": sum(t["bytes"] for t in manifest["tables"].values()),
               "stamped_check_s": round(statistics.median(stamped), 4),
               "rehash_check_s": round(statistics.median(rehashed), 3)}
    summary["ratio_stamped_to_rehash"] = round(summary["stamped_check_s"] / summary["rehash_check_s"], 5)
    ratio = compare(rehashed, stamped, paired=True)  # each run checked both ways, back to back
    summary["ratio_stamped_to_rehash_interval"] = ratio.as_dict()
    out = paths.work_dir() / "bench" / "dataset_check_bench.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=2))
    print(f"\nintact TPC-H SF {SF:g} dataset check ({summary['bytes'] / 1e9:.2f} GB of .tbl files), median of {RUNS}")
    print(f"  stat stamp (what every load and study does): {summary['stamped_check_s']:8.4f} s  (target: < 2 s)")
    print(f"  re-hashing every file (before):              {summary['rehash_check_s']:8.3f} s")
    print(f"  ratio stamped / re-hash:                     {summary['ratio_stamped_to_rehash']:8.5f}"
          f"  paired: {ratio.ratio_words()}")
    if summary["stamped_check_s"] >= 2:
        sys.exit("the intact-dataset check took 2 s or more")


if __name__ == "__main__":
    main()
