"""The manual stays true: the reference pages are what the code generates now, the site builds
with mkdocs --strict (a broken link fails it), and what the README says about set-up and its
links matches the repository."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mysqlbench import reference
from mysqlbench.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).parent / "mkdocs"
QUIET = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


@pytest.mark.parametrize("name", sorted(reference.pages(build_parser())))
def test_each_committed_reference_page_is_what_the_code_generates(name):
    committed = (reference.REFERENCE_DIR / name).read_text()
    assert committed == reference.pages(build_parser())[name], f"docs/reference/{name} is stale: run bin/mysqlbench docs"


def test_the_reference_follows_the_models_knobs_and_extras(monkeypatch):
    """A description, a knob rule or an extra changed in the code changes its page."""
    from mysqlbench import knobs
    from mysqlbench.studies.spec import StudySpec
    from mysqlbench.targets import connection

    assert "| `timeout_s` | float | `600` | ge 0.001, le 86400 |" in reference.spec_page()
    monkeypatch.setattr(StudySpec.model_fields["timeout_s"], "description", "a new meaning")
    assert "| `timeout_s` | float | `600` | ge 0.001, le 86400 | a new meaning |" in reference.spec_page()
    table = {**knobs.knob_table(), "new_knob": {"type": "int", "scope": "global",
                                                "rules": [{"flavors": ["mysql"], "variable": "innodb_new"}]}}
    monkeypatch.setattr(knobs, "knob_table", lambda: table)
    assert "| `new_knob` | int | global | mysql: `innodb_new` |" in reference.knobs_page()
    monkeypatch.setattr(connection, "EXTRAS", {**connection.EXTRAS, "new_extra": "what it does"})
    assert "| `new_extra` | what it does |" in reference.connections_page()
    assert "## `docs`" in reference.cli_page(build_parser()) and "--check" in reference.cli_page(build_parser())


def test_docs_check_says_when_a_page_is_stale(tmp_path, capsys):
    assert reference.main(build_parser(), directory=tmp_path) == 0
    assert reference.main(build_parser(), check=True, directory=tmp_path) == 0
    (tmp_path / "knobs.md").write_text("edited by hand\n")
    assert reference.main(build_parser(), check=True, directory=tmp_path) == 1
    assert "knobs.md" in capsys.readouterr().err


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(MKDOCS), "build", "--strict", "-f", str(config), "-d", str(site)],
                          capture_output=True, text=True, env=QUIET, timeout=120)


def test_the_site_builds_strict_and_a_broken_link_fails_it(tmp_path):
    built = build(REPO / "mkdocs.yml", tmp_path / "site")
    assert built.returncode == 0, built.stderr
    knobs_html = (tmp_path / "site" / "reference" / "knobs" / "index.html").read_text()
    assert "buffer_pool_size" in knobs_html and "innodb_buffer_pool_size" in knobs_html
    # the same site with one link to a page that does not exist
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    with (tmp_path / "docs" / "datasets.md").open("a") as page:
        page.write("\nSee [the loader](loader.md).\n")
    config = (REPO / "mkdocs.yml").read_text().replace("docs_dir: docs", f"docs_dir: {tmp_path / 'docs'}")
    (tmp_path / "mkdocs.yml").write_text(config)
    broken = build(tmp_path / "mkdocs.yml", tmp_path / "broken")
    assert broken.returncode != 0 and "loader.md" in broken.stderr + broken.stdout


def test_the_readme_names_every_package_setup_installs():
    setup = (REPO / "bin" / "setup").read_text()
    packages = re.search(r"^packages=\((.*?)\)", setup, re.M).group(1).split()
    readme = " ".join((REPO / "README.md").read_text().split())
    said = re.search(r"installs the Debian packages that are missing \(`([^`]*)`", readme).group(1).split()
    assert said == packages


def test_every_link_in_the_readme_reaches_a_file():
    links = re.findall(r"\]\(([^)#]+)\)", (REPO / "README.md").read_text())
    assert links and [link for link in links if not (REPO / link).exists()] == []


def test_the_readme_study_is_the_shipped_one_and_valid():
    import yaml

    from mysqlbench.studies.spec import StudySpec

    block = re.search(r"```yaml\n(.*?)```", (REPO / "README.md").read_text(), re.S).group(1)
    shown = yaml.safe_load(block)
    assert len(block.strip().splitlines()) <= 10
    shipped = yaml.safe_load((REPO / "include" / "configs" / "studies" / "tpch_bka_study.yaml").read_text())
    assert {k: v for k, v in shipped.items() if k not in ("description", "timeout_s")} == shown
    assert len(StudySpec.model_validate(shown).points()) == 8
