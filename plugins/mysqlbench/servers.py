"""The server catalog (include/configs/servers.yaml) and the binaries each entry runs with.

``fetch`` brings a ``debian`` entry's packages from Debian's archive with a throwaway apt
configuration under the work directory (the system's sources and state are never touched: apt
reads only our sources list, lists and cache, and verifies every download against the suite's
signed Release file with Debian's keyring), checks each .deb's SHA-256 and unpacks it under
``work/servers/ID/VERSION/``; ``installed.json`` records the exact package versions. A second
fetch is instant: it reads that record and asks the archive nothing unless told to check.

``binaries(ID)`` says how to run an entry's server: which executable, through which dynamic loader
(a suite newer than Debian 12 brings its own C runtime), with which library path and basedir.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import functools
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mysqlbench import paths
from mysqlbench.errors import InvalidInput, MysqlbenchError, TargetUnavailable

log = logging.getLogger(__name__)

KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
SOURCES = ("system", "debian", "basedir")
FLAVORS = ("mariadb", "mysql")
_SUITE = re.compile(r"[a-z][a-z0-9-]{1,40}")
_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.-]{1,80}(:any)?")
_URI = re.compile(r"https?://[A-Za-z0-9.-]+(/[A-Za-z0-9._/-]*)?")


class FetchError(MysqlbenchError):
    """The archive could not give what a catalog entry needs (no longer served, unreachable)."""


@dataclass(frozen=True)
class CatalogServer:
    id: str
    flavor: str
    line: str
    released: dt.date
    source: str
    accept: str
    archives: tuple[tuple[str, str], ...] = ()
    packages: tuple[str, ...] = ()
    runtime: str = "listed"
    skip: tuple[str, ...] = ()
    basedir: str | None = None

    @property
    def label(self) -> str:
        return f"{self.flavor} {self.line}"


@functools.lru_cache(maxsize=1)
def catalog() -> dict[str, CatalogServer]:
    """Every catalog entry, validated (a broken entry fails here, naming itself and the field)."""
    raw = yaml.safe_load((paths.CONFIG_DIR / "servers.yaml").read_text())["servers"]
    out = {}
    for server_id, entry in raw.items():
        out[server_id] = _entry(server_id, entry)
    return out


def _entry(server_id: str, entry: dict[str, Any]) -> CatalogServer:
    def bad(what: str) -> InvalidInput:
        return InvalidInput(f"servers.yaml: {server_id}: {what}")

    if not re.fullmatch(r"[a-z][a-z0-9.-]{1,40}", server_id):
        raise bad("ids are lower-case letters, digits, '.' and '-'")
    if entry.get("flavor") not in FLAVORS:
        raise bad(f"flavor must be one of {FLAVORS}")
    if entry.get("source") not in SOURCES:
        raise bad(f"source must be one of {SOURCES}")
    if not isinstance(entry.get("released"), dt.date):
        raise bad("released must be a date (YYYY-MM-DD)")
    archives = tuple((a["uri"], a["suite"]) for a in entry.get("archives") or ())
    for uri, suite in archives:
        if not _URI.fullmatch(uri) or not _SUITE.fullmatch(suite):
            raise bad(f"archive {uri} {suite} is not a plain http(s) URI and suite name")
    packages = tuple(entry.get("packages") or ())
    for name in packages + tuple(entry.get("skip") or ()):
        if not _PACKAGE.fullmatch(name):
            raise bad(f"package name {name!r} is not a Debian package name")
    if entry["source"] == "debian" and not (archives and packages):
        raise bad("a debian entry needs archives and packages")
    if entry.get("runtime", "listed") not in ("listed", "suite"):
        raise bad("runtime must be listed or suite")
    return CatalogServer(id=server_id, flavor=entry["flavor"], line=str(entry["line"]), released=entry["released"],
                         source=entry["source"], accept=str(entry.get("accept") or "*"), archives=archives,
                         packages=packages, runtime=entry.get("runtime", "listed"),
                         skip=tuple(entry.get("skip") or ()), basedir=entry.get("basedir"))


def get(server_id: object) -> CatalogServer:
    if not isinstance(server_id, str) or server_id not in catalog():
        raise InvalidInput(f"unknown server {server_id!r}; the catalog (include/configs/servers.yaml) has: "
                           f"{', '.join(catalog())}")
    return catalog()[server_id]


def current_at(flavor: str, when: dt.date) -> CatalogServer | None:
    """The catalog server of ``flavor`` that was current on ``when``: the newest line released on
    or before that date (None before the flavor's first line in the catalog). A backfill across
    versions picks its server this way from each run's logical date."""
    if flavor not in FLAVORS:
        raise InvalidInput(f"flavor must be one of {FLAVORS}, not {flavor!r}")
    released = [s for s in catalog().values() if s.flavor == flavor and s.released <= when]
    return max(released, key=lambda s: (s.released, s.id)) if released else None


def release_dates(flavor: str | None = None) -> list[dt.date]:
    """Every catalog line's release date (of one flavor, or all), oldest first, once each."""
    return sorted({s.released for s in catalog().values() if flavor is None or s.flavor == flavor})


# -- how to run a server ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Binaries:
    """An entry's executables: ``command("mysqld", ...)`` is the argv that runs one, through the
    suite's dynamic loader when it brings its own C runtime."""

    server_id: str
    flavor: str
    version: str                    # exact, as the server binary reports it
    basedir: Path | None            # None: the system's own installation
    loader: Path | None = None
    library_path: tuple[Path, ...] = ()
    share_dir: Path | None = None   # error messages (lc_messages_dir) for a relocated server
    records: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def server_binary(self) -> str:
        return "mariadbd" if self.flavor == "mariadb" else "mysqld"

    def path(self, name: str) -> str:
        if self.basedir is None:
            found = shutil.which(name) or (f"/usr/sbin/{name}" if Path(f"/usr/sbin/{name}").exists() else None)
            if not found:
                raise TargetUnavailable(f"{name} not found on PATH; run make setup (it installs mariadb-server)")
            return found
        for sub in ("sbin", "bin", "scripts", "usr/sbin", "usr/bin"):
            candidate = self.basedir / sub / name
            if candidate.is_file():
                return str(candidate)
        raise TargetUnavailable(f"{name} not found under {self.basedir} (looked in sbin, bin, scripts)")

    def command(self, name: str, *args: str) -> list[str]:
        binary = self.path(name)
        if self.loader is not None:
            return [str(self.loader), "--library-path", ":".join(map(str, self.library_path)), binary, *args]
        return [binary, *args]

    def install_db(self, *args: str) -> list[str]:
        """argv of MariaDB's mariadb-install-db (a shell script) with ``--basedir``. A server on its
        suite's own C runtime gets a shim basedir whose binaries run through that loader, since
        the script calls my_print_defaults, resolveip and mariadbd by path."""
        script = self.path("mariadb-install-db")
        if self.loader is None:
            return [script, *args] + ([f"--basedir={self.basedir}"] if self.basedir is not None else [])
        shim = self.basedir.parent.with_name(self.basedir.parent.name + ".shim")
        for sub, name in (("bin", "my_print_defaults"), ("bin", "resolveip"), ("sbin", "mariadbd")):
            wrapper = shim / sub / name
            wrapper.parent.mkdir(parents=True, exist_ok=True)
            wrapper.write_text("#!/bin/sh\nexec " + " ".join(shlex.quote(part) for part in self.command(name))
                               + ' "$@"\n')
            wrapper.chmod(0o755)
        for sub in ("share", "lib"):
            link = shim / sub
            if not link.is_symlink():
                link.symlink_to(self.basedir / sub)
        return ["/bin/sh", script, *args, f"--basedir={shim}"]

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.loader is None and self.library_path:
            env["LD_LIBRARY_PATH"] = ":".join(map(str, self.library_path))
        return env


def binaries(server_id: str, basedir: str | None = None) -> Binaries:
    """How to run catalog entry ``server_id`` (fetched first for a debian entry: see ``fetch``)."""
    entry = get(server_id)
    if entry.source == "system":
        probe = Binaries(entry.id, entry.flavor, "", None)
        version = _reported_version(probe)
        _check_accepted(entry, version, "the system's installation")
        return Binaries(entry.id, entry.flavor, version, None)
    if entry.source == "basedir":
        top = basedir or entry.basedir
        if not top:
            raise InvalidInput(f"server {entry.id} runs from an official tarball you unpacked: set basedir (in "
                               "servers.yaml or the target's YAML) to its top directory")
        root = Path(top)
        if not (root / "bin" / "mysqld").is_file() and not (root / "sbin" / "mysqld").is_file():
            raise InvalidInput(f"basedir {root} has no bin/mysqld: point it at the unpacked tarball's top directory")
        probe = Binaries(entry.id, entry.flavor, "", root, share_dir=root / "share")
        version = _reported_version(probe)
        _check_accepted(entry, version, f"basedir {root}")
        return Binaries(entry.id, entry.flavor, version, root, share_dir=root / "share")
    record = installed(entry.id)
    if record is None:
        raise TargetUnavailable(f"server {entry.id} is not fetched yet: run bin/mysqlbench server fetch {entry.id}")
    return _from_record(entry, record)


def _from_record(entry: CatalogServer, record: dict[str, Any]) -> Binaries:
    root = Path(record["root"])
    libs = tuple(root / sub for sub in ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu", "usr/lib", "lib")
                 if (root / sub).is_dir())
    loader = None
    if entry.runtime == "suite":
        loader = next((root / sub for sub in ("usr/lib64/ld-linux-x86-64.so.2", "lib64/ld-linux-x86-64.so.2",
                                              "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
                       if (root / sub).exists()), None)
        if loader is None:
            raise TargetUnavailable(f"{root} has no dynamic loader; fetch {entry.id} again")
    share = root / "usr/share/mysql" if (root / "usr/share/mysql").is_dir() else root / "usr/share/mariadb"
    return Binaries(entry.id, entry.flavor, record["version"], root / "usr", loader, libs, share, record)


def _reported_version(b: Binaries) -> str:
    done = subprocess.run(b.command(b.server_binary, "--version"), capture_output=True, text=True, env=b.env(),
                          timeout=60)
    match = re.search(r"Ver (\d+\.\d+\.\d+)", done.stdout)
    if done.returncode != 0 or not match:
        raise TargetUnavailable(f"{b.server_binary} --version failed ({done.returncode}): "
                                f"{(done.stdout + done.stderr)[-500:]}")
    return match.group(1)


def _check_accepted(entry: CatalogServer, version: str, where: str) -> None:
    if not fnmatch.fnmatch(version, entry.accept):
        raise InvalidInput(f"{where} runs {entry.flavor} {version}, not what catalog entry {entry.id} stands for "
                           f"({entry.accept})")


# -- fetching from Debian's archive ------------------------------------------------------------------

def server_dir(server_id: str) -> Path:
    return paths.work_dir() / "servers" / server_id


def installed(server_id: str) -> dict[str, Any] | None:
    record = server_dir(server_id) / "installed.json"
    if not record.exists():
        return None
    data = json.loads(record.read_text())
    return data if Path(data["root"]).is_dir() else None


class _Apt:
    """apt-get and apt-cache confined to our own sources list, lists and cache."""

    def __init__(self, entry: CatalogServer, top: Path):
        self.entry, self.top = entry, top
        for sub in ("lists/partial", "cache/archives/partial", "etc"):
            (top / sub).mkdir(parents=True, exist_ok=True)
        self.sources = top / "etc" / "sources.list"
        self.sources.write_text("".join(f"deb [signed-by={KEYRING}] {uri} {suite} main\n"
                                        for uri, suite in entry.archives))
        self.options = ["-o", f"Dir::Etc::SourceList={self.sources}", "-o", "Dir::Etc::SourceParts=/dev/null",
                        "-o", f"Dir::State::Lists={top / 'lists'}", "-o", f"Dir::Cache={top / 'cache'}",
                        "-o", f"Dir::State::status={top / 'etc' / 'status'}", "-o", "Debug::NoLocking=1",
                        "-o", "APT::Sandbox::User=root", "-o", "Acquire::Retries=3"]
        (top / "etc" / "status").touch()

    def run(self, tool: str, *args: str, cwd: Path | None = None) -> str:
        done = subprocess.run([tool, *self.options, *args], capture_output=True, text=True, cwd=cwd, timeout=900)
        if done.returncode != 0:
            raise FetchError(f"{tool} {' '.join(args[:3])} failed for {self.entry.id}: {done.stderr.strip()[-1500:]}")
        return done.stdout

    def update(self) -> None:
        self.run("apt-get", "-q", "update")

    def candidate(self, package: str) -> str | None:
        out = self.run("apt-cache", "policy", package)
        match = re.search(r"Candidate:\s*(\S+)", out)
        return None if match is None or match.group(1) == "(none)" else match.group(1)

    def closure(self) -> list[str]:
        """The packages and, for a suite runtime, everything they depend on (minus ``skip``)."""
        if self.entry.runtime == "listed":
            return list(self.entry.packages)
        out = self.run("apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
                       "--no-breaks", "--no-replaces", "--no-enhances", *self.entry.packages)
        names, skipped = [], set(self.entry.skip)
        # apt-cache lists each package once, then its dependencies indented; follow only what is
        # not skipped (perl and what only perl needs is left out by walking from the roots)
        graph: dict[str, list[str]] = {}
        current = None
        for line in out.splitlines():
            if not line.startswith(" "):
                current = line.strip().strip("<>")
                graph.setdefault(current, [])
            elif current and "Depends:" in line:
                graph[current].append(line.split(":", 1)[1].strip().strip("<>"))
            elif current and ":" not in line.strip().rstrip(":any"):  # a virtual package's provider
                graph[current].append(line.strip())
        todo = list(self.entry.packages)
        while todo:
            name = todo.pop()
            if name in names or name in skipped:
                continue
            names.append(name)
            todo += [dep for dep in graph.get(name, []) if dep in graph]
        return sorted(n for n in names if not n.endswith(":any"))


def fetch(server_id: str, *, check: bool = False) -> dict[str, Any]:
    """Bring catalog entry ``server_id``'s binaries under the work directory; instant when cached.

    ``check`` asks the archive what it serves now and says whether the cached version is still
    the one served (sid moves on; a cached version keeps working after the archive dropped it)."""
    entry = get(server_id)
    if entry.source != "debian":
        b = binaries(server_id)
        return {"server": entry.id, "flavor": entry.flavor, "version": b.version, "source": entry.source,
                "basedir": str(b.basedir) if b.basedir else None, "fetched": False,
                "note": "installed by bin/setup (Debian 12's packages)" if entry.source == "system"
                else "an official tarball you unpacked"}
    cached = installed(server_id)
    if cached is not None and not check:
        return {**_summary(cached), "fetched": False, "note": "cached; nothing downloaded"}
    top = server_dir(server_id)
    apt = _Apt(entry, top / "apt")
    try:
        apt.update()
        served = apt.candidate(entry.packages[0])
    except FetchError as exc:
        if cached is not None:
            raise FetchError(f"could not reach the archive to check {server_id} ({exc}); the cached "
                             f"{cached['package_version']} at {cached['root']} still works") from exc
        raise
    upstream = _upstream(served) if served else None
    if served is None or not fnmatch.fnmatch(upstream, entry.accept):
        where = ", ".join(f"{uri} {suite}" for uri, suite in entry.archives)
        have = (f"cached: {cached['package_version']} at {cached['root']} (still usable)" if cached
                else "nothing is cached")
        raise FetchError(f"{where} no longer serves {entry.packages[0]} {entry.accept} for {server_id}: it serves "
                         f"{served or 'no such package'}; {have}")
    if cached is not None and cached["package_version"] == served:
        return {**_summary(cached), "fetched": False, "note": f"cached {served} is what the archive serves"}
    record = _download_and_unpack(entry, apt, top, served)
    note = f"fetched {served}"
    if cached is not None:
        note += f"; the archive no longer serves the cached {cached['package_version']} (kept at {cached['root']})"
    return {**_summary(record), "fetched": True, "note": note}


def _upstream(package_version: str) -> str:
    """9.7.4-2 -> 9.7.4; 1:10.11.14-0+deb12u2 -> 10.11.14."""
    return package_version.split(":", 1)[-1].split("-", 1)[0].split("+", 1)[0]


def _download_and_unpack(entry: CatalogServer, apt: _Apt, top: Path, served: str) -> dict[str, Any]:
    debs = top / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    names = apt.closure()
    log.info("downloading %d packages for %s (%s %s)", len(names), entry.id, entry.packages[0], served)
    # apt-get download verifies each file against the signed Release's hashes before keeping it
    apt.run("apt-get", "-q", "download", *names, cwd=debs)
    files = sorted(debs.glob("*.deb"))
    chosen: dict[str, Path] = {}
    for path in files:  # an earlier fetch's files stay; take the newest of each package
        package = path.name.split("_", 1)[0]
        if package in names and (package not in chosen or path.stat().st_mtime > chosen[package].stat().st_mtime):
            chosen[package] = path
    missing = sorted(set(names) - set(chosen))
    if missing:
        raise FetchError(f"apt-get download left out {missing} for {entry.id}")
    root = top / served.replace(":", "_")
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    packages = {}
    for package, path in sorted(chosen.items()):
        version = subprocess.run(["dpkg-deb", "-f", str(path), "Version"], capture_output=True, text=True,
                                 check=True).stdout.strip()
        packages[package] = {"version": version, "file": path.name, "sha256": _sha256(path)}
        subprocess.run(["dpkg-deb", "-x", str(path), str(partial)], check=True, capture_output=True)
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)
    os.chmod(top, 0o755)
    record = {"server": entry.id, "flavor": entry.flavor, "package": entry.packages[0], "package_version": served,
              "root": str(root), "packages": packages, "archives": [list(a) for a in entry.archives],
              "fetched_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    b = _from_record(entry, {**record, "version": ""})
    record["version"] = _reported_version(b)  # it runs, and says which version it is
    _check_accepted(entry, record["version"], f"the fetched {entry.packages[0]} {served}")
    (top / "installed.json").write_text(json.dumps(record, indent=2))
    return record


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _summary(record: dict[str, Any]) -> dict[str, Any]:
    size = sum(p.stat().st_size for p in Path(record["root"]).rglob("*") if p.is_file() and not p.is_symlink())
    return {"server": record["server"], "flavor": record["flavor"], "version": record["version"],
            "package_version": record["package_version"], "root": record["root"],
            "packages": len(record["packages"]), "unpacked_mb": round(size / 1e6, 1),
            "fetched_at": record["fetched_at"]}
