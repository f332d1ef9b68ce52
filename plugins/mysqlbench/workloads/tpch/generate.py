"""Generate TPC-H .tbl files with tpchgen-cli into a work directory cached by scale factor, with a
manifest of sizes, row counts and checksums. Intact files are reused; a generation that did not
finish is never mistaken for one that did (files are written aside and moved in at the end)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mysqlbench import paths
from mysqlbench.errors import InvalidInput, MysqlbenchError
from mysqlbench.results.lineage import stable_hash
from mysqlbench.workloads.tpch import TABLES

log = logging.getLogger(__name__)

GENERATOR = "tpchgen-cli"
_CHUNK = 8 << 20

# Rows per table from the TPC-H specification; lineitem's count is only known at these SFs.
_PER_SF = {"supplier": 10_000, "customer": 150_000, "part": 200_000, "partsupp": 800_000, "orders": 1_500_000}
_FIXED = {"region": 5, "nation": 25}
_LINEITEM = {1.0: 6_001_215, 0.1: 600_572, 0.01: 60_175}


def spec_row_count(table: str, scale_factor: float) -> int | None:
    """Rows the specification gives for ``table`` at ``scale_factor`` (None where it gives none)."""
    if table in _FIXED:
        return _FIXED[table]
    if table in _PER_SF:
        return round(_PER_SF[table] * scale_factor)
    return _LINEITEM.get(float(scale_factor))


def dataset_dir(scale_factor: float) -> Path:
    return paths.work_dir() / "data" / "tpch" / f"sf{scale_factor:g}"


def generator_binary() -> str:
    beside = Path(sys.executable).parent / GENERATOR
    found = str(beside) if beside.exists() else shutil.which(GENERATOR)
    if not found:
        raise MysqlbenchError(f"{GENERATOR} is not installed (it comes with requirements.txt)")
    return found


def generator_version() -> str:
    out = subprocess.run([generator_binary(), "--version"], capture_output=True, text=True, check=True).stdout
    return out.strip().split()[-1]


def file_facts(path: Path) -> dict[str, Any]:
    """Size, line count and sha256 of one file, in a single pass."""
    digest = hashlib.sha256()
    lines = 0
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            lines += chunk.count(b"\n")
            size += len(chunk)
    return {"file": path.name, "bytes": size, "rows": lines, "sha256": digest.hexdigest()}


def read_manifest(directory: Path) -> dict[str, Any] | None:
    try:
        return json.loads((directory / "manifest.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


STAMP = "files.stat.json"


def _stat_key(path: Path) -> list[int]:
    """What changes when a file is rewritten, truncated or replaced: size, mtime (ns), inode, ctime."""
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def _write_stamp(directory: Path, manifest: dict[str, Any]) -> None:
    """Remember each file's stat as it was when its checksum was proved. The stamp is this host's
    (inodes and times are local), so it lives beside the files, never in the manifest."""
    stamp = {"dataset_id": manifest["dataset_id"],
             "files": {t: _stat_key(directory / manifest["tables"][t]["file"]) for t in TABLES}}
    (directory / STAMP).write_text(json.dumps(stamp))


def is_intact(directory: Path, manifest: dict[str, Any], *, rehash: bool = False) -> bool:
    """Every file is there with the recorded size and checksum.

    A file whose stat (size, mtime, inode, ctime) still equals the stamp written when its checksum
    was last proved is not read again: at SF 1 hashing reads 1 GB per call, at SF 100 it would
    dominate the run (``make bench`` measures both ways). Any difference, or ``rehash``, re-hashes.
    """
    try:
        stamp = json.loads((directory / STAMP).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        stamp = {}
    stamped = stamp.get("files", {}) if stamp.get("dataset_id") == manifest.get("dataset_id") else {}
    hashed = False
    for table in TABLES:
        entry = manifest["tables"].get(table)
        path = directory / (entry or {}).get("file", "")
        if not entry or not path.is_file() or path.stat().st_size != entry["bytes"]:
            return False
        if not rehash and stamped.get(table) == _stat_key(path):
            continue
        if file_facts(path)["sha256"] != entry["sha256"]:
            return False
        hashed = True
    if hashed or not stamped:
        _write_stamp(directory, manifest)
    return True


def ensure_generated(scale_factor: float) -> dict[str, Any]:
    """The manifest of an intact dataset at ``scale_factor``, generating it when needed.

    The manifest's ``reused`` says whether the files were already there.
    """
    if not isinstance(scale_factor, (int, float)) or isinstance(scale_factor, bool) or scale_factor <= 0:
        raise InvalidInput(f"scale factor must be a positive number, not {scale_factor!r}")
    directory = dataset_dir(scale_factor)
    manifest = read_manifest(directory)
    if manifest and is_intact(directory, manifest):
        log.info("TPC-H SF %g: reusing intact files in %s (dataset %s)", scale_factor, directory,
                 manifest["dataset_id"])
        return {**manifest, "reused": True}
    # the files are this host's: tasks on it that need the same dataset at once generate it once
    directory.parent.mkdir(parents=True, exist_ok=True)
    with open(directory.with_name(directory.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        manifest = read_manifest(directory)
        if manifest and is_intact(directory, manifest):
            return {**manifest, "reused": True}
        return _generate(scale_factor, directory)


def _generate(scale_factor: float, directory: Path) -> dict[str, Any]:
    staging = directory.with_name(directory.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    started = time.monotonic()
    log.info("TPC-H SF %g: generating with %s into %s", scale_factor, GENERATOR, staging)
    subprocess.run([generator_binary(), "--scale-factor", f"{scale_factor:g}", "--output-dir", str(staging)],
                   check=True, capture_output=True, text=True)
    seconds = time.monotonic() - started
    tables = {}
    for table in TABLES:
        facts = file_facts(staging / f"{table}.tbl")
        expected = spec_row_count(table, scale_factor)
        if expected is not None and facts["rows"] != expected:
            raise MysqlbenchError(f"{GENERATOR} wrote {facts['rows']} {table} rows at SF {scale_factor:g}; "
                                  f"the specification says {expected}")
        tables[table] = facts
    manifest = {
        "generator": GENERATOR,
        "generator_version": generator_version(),
        "scale_factor": float(scale_factor),
        "tables": tables,
    }
    manifest["dataset_id"] = f"tpch-sf{scale_factor:g}-{stable_hash(manifest)}"
    manifest["generated_seconds"] = round(seconds, 3)
    (staging / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))
    shutil.rmtree(directory, ignore_errors=True)
    staging.rename(directory)
    _write_stamp(directory, manifest)  # checksums were just computed from these very files
    log.info("TPC-H SF %g: generated %s rows in %.1f s (dataset %s)", scale_factor,
             sum(t["rows"] for t in tables.values()), seconds, manifest["dataset_id"])
    return {**manifest, "reused": False}
