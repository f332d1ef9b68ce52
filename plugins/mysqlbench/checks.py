"""Great Expectations as the gate: typed frames of real observations, expectations over them (with
row conditions where a check applies only to some rows), and the verdict, the failures and their
observed values read from GX's own result. Nothing here compares values itself."""

from __future__ import annotations

import json
from typing import Any, Sequence

from mysqlbench.results.store import Validation

# How much of an unexpected list a failure keeps (the report shows it; the rest is counted).
FAILURE_EXAMPLES = 10


def condition(**equal: Any) -> dict[str, str]:
    """A pandas row condition selecting rows whose columns equal the given values."""
    parts = []
    for column, value in equal.items():
        literal = json.dumps(value) if isinstance(value, str) else repr(value)
        parts.append(f"{column}=={literal}")
    return {"row_condition": " and ".join(parts), "condition_parser": "pandas"}


def validate_frames(suite_name: str, batches: Sequence[tuple[str, Any, Sequence[Any]]]) -> Validation:
    """Validate each ``(name, frame, expectations)`` as its own batch; the run passes only when GX
    says every expectation of every batch passed."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)  # keep task logs readable
    source = context.data_sources.add_pandas(suite_name)
    success = True
    evaluated = passed = 0
    failures: list[dict[str, Any]] = []
    for name, frame, expectations in batches:
        batch = (source.add_dataframe_asset(name).add_batch_definition_whole_dataframe("all")
                 .get_batch(batch_parameters={"dataframe": frame}))
        suite = context.suites.add(gx.ExpectationSuite(name=f"{suite_name}.{name}"))
        for expectation in expectations:
            suite.add_expectation(expectation)
        result = batch.validate(suite, result_format="COMPLETE")
        success = success and bool(result.success)
        evaluated += int(result.statistics["evaluated_expectations"])
        passed += int(result.statistics["successful_expectations"])
        failures += [describe(name, r) for r in result.results if not r.success]
    return Validation(suite=suite_name, success=success,
                      statistics={"evaluated_expectations": evaluated, "successful_expectations": passed,
                                  "checks": evaluated},
                      failures=failures)


def describe(batch: str, result) -> dict[str, Any]:
    """One failed expectation as the report shows it: what was expected, of which rows, and what
    GX observed."""
    config = result.expectation_config
    kwargs = {k: v for k, v in config.kwargs.items() if k not in ("batch_id", "result_format")}
    where = kwargs.pop("row_condition", None)
    kwargs.pop("condition_parser", None)
    if isinstance(where, dict):  # GX 1.x renders a pandas condition as a pass-through filter
        where = where.get("pass_through_filter")
    got = result.result or {}
    failure: dict[str, Any] = {"batch": batch, "expectation": config.type, "check": config.meta.get("check", config.type)
                               if config.meta else config.type, "kwargs": kwargs, "where": where}
    if "observed_value" in got:
        failure["observed"] = got["observed_value"]
    if "unexpected_count" in got:
        failure["unexpected_count"] = got["unexpected_count"]
        failure["unexpected"] = list(got.get("partial_unexpected_list") or [])[:FAILURE_EXAMPLES]
    details = got.get("details") or {}
    if "mismatched" in details:
        failure["mismatched"] = details["mismatched"]
    if result.exception_info and result.exception_info.get("raised_exception"):
        failure["error"] = result.exception_info.get("exception_message")
    return failure
