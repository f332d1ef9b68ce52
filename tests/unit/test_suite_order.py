"""make test starts the slowest modules first (tests/conftest.py SLOWEST_FIRST): a renamed or
split module must not silently drop out of that list and start last."""

from __future__ import annotations

from conftest import REPO, SLOWEST_FIRST


def test_every_slowest_first_module_exists():
    assert [m for m in SLOWEST_FIRST if not (REPO / "tests" / m).is_file()] == []


def test_make_test_keeps_the_collection_order():
    recipe = (REPO / "Makefile").read_text().split("\ntest:", 1)[1].split("\n\n", 1)[0]
    assert "--dist loadscope --no-loadscope-reorder" in recipe
