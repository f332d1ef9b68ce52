"""YAML as the project reads its own files (study, regression and target specs): safe, and a
key given twice in one mapping is an error naming both lines. PyYAML's safe_load keeps the last
value silently, so a spec with ``repetitions: 3`` and a later ``repetitions: 30`` ran the second
without a word (issue 27)."""

from __future__ import annotations

from typing import Any

import yaml


# libyaml's parser where PyYAML was built with it (the wheels are): the same safe constructors, about
# ten times faster, which the dag-processor feels with every spec at every parse
class _UniqueKeys(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


def _mapping(loader: _UniqueKeys, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    loader.flatten_mapping(node)  # merge keys (<<) first: a merged default is not a duplicate
    seen: dict[Any, int] = {}
    for key_node, _value in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.get(key)
        except TypeError:  # an unhashable key: PyYAML's own construction reports it
            continue
        if first is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first given on line {first})", key_node.start_mark)
        seen[key] = key_node.start_mark.line + 1
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_UniqueKeys.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def load(text: str) -> Any:
    """``yaml.safe_load`` that refuses a key given twice in one mapping."""
    return yaml.load(text, Loader=_UniqueKeys)  # noqa: S506 - a SafeLoader subclass
