"""The regression detector's power table (issue 23): writes docs/regression-power.json and
docs/regression-power.md from ``mysqlbench.regression.simulate`` at the shipped nightly thresholds.

    .venv/bin/python bench/regression_power.py            # the full table (about 6 minutes on 2 cores)
    .venv/bin/python bench/regression_power.py --reduced  # the reduced, seeded table the unit test makes

The noise is fitted to tests/data/regression/*.json (histories recorded on this project's servers)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "plugins"))

from mysqlbench.regression.simulate import FULL, REDUCED, fit_noise, markdown, table  # noqa: E402
from mysqlbench.regression.spec import load_regression  # noqa: E402

SHIPPED = REPO / "include/configs/regression/nightly_regression.yaml"
RECORDED = REPO / "tests/data/regression"


def build(reduced: bool, workers: int) -> dict:
    thresholds = load_regression(SHIPPED).thresholds.model_dump()
    plan = (REDUCED if reduced else FULL).with_thresholds(thresholds)
    return table(fit_noise(RECORDED.glob("*.json")), plan, workers=workers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reduced", action="store_true", help="the reduced table (printed, docs left alone)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    started = time.monotonic()
    result = build(args.reduced, args.workers)
    text = markdown(result)
    if args.reduced:
        print(text)
    else:
        (REPO / "docs/regression-power.json").write_text(json.dumps(result, indent=1) + "\n")
        intro = (REPO / "docs/regression-power.intro.md").read_text()
        (REPO / "docs/regression-power.md").write_text(intro + "\n" + text)
        print(f"wrote docs/regression-power.md and .json in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
