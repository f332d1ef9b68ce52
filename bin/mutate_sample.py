"""Make mutmut's mutants as `mutmut run` does first, then print a seeded sample of their names.

Run by bin/mutate --sample N inside its staging directory (mutmut reads setup.cfg from there):
    python bin/mutate_sample.py COUNT SEED
mutmut 3 draws no samples itself; its `run` takes mutant names, so the sample is handed to it.
The mutant generation is mutmut's own (the same calls, in the same order, as the start of its
`run`; the version is pinned in bin/mutate), so the names are the ones `run` then finds."""

from __future__ import annotations

import contextlib
import json
import random
import sys
from pathlib import Path

from mutmut.__main__ import create_mutants
from mutmut.mutation.trampoline import set_mutant_under_test
from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths


def main(count: int, seed: int) -> None:
    set_mutant_under_test("mutant_generation")
    Path("mutants").mkdir(exist_ok=True)
    with contextlib.redirect_stdout(sys.stderr):  # mutmut's own lines; stdout is the names only
        copy_src_dir()
        copy_also_copy_files()
        setup_source_paths()
        create_mutants(2)
    names = sorted(name for meta in Path("mutants").rglob("*.meta")
                   for name in json.loads(meta.read_text())["exit_code_by_key"])
    drawn = sorted(random.Random(seed).sample(names, min(count, len(names))))
    print(f"{len(names)} mutants, {len(drawn)} drawn at random (seed {seed})", file=sys.stderr)
    print("\n".join(drawn))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
