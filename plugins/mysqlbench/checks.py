"""Checks as data: rows of (check, subject, observed, expected), validated by a Great Expectations
suite. The observations are computed where they are cheap (SQL on the server, pandas on samples);
GX states the expectation and records the outcome."""

from __future__ import annotations

from typing import Any

from mysqlbench.results.store import Validation


def validate_checks(rows: list[dict[str, Any]], suite_name: str) -> Validation:
    """Run the checks through a Great Expectations suite: every observed value equals its
    expectation and none is missing."""
    import great_expectations as gx
    import pandas as pd
    from great_expectations.data_context.types.base import ProgressBarsConfig

    frame = pd.DataFrame(rows, columns=["check", "subject", "observed", "expected"])
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)  # keep task logs readable
    batch = (context.data_sources.add_pandas("dataset_checks")
             .add_dataframe_asset("checks")
             .add_batch_definition_whole_dataframe("all")
             .get_batch(batch_parameters={"dataframe": frame}))
    suite = context.suites.add(gx.ExpectationSuite(name=suite_name))
    suite.add_expectation(gx.expectations.ExpectColumnValuesToNotBeNull(column="observed"))
    suite.add_expectation(gx.expectations.ExpectColumnPairValuesToBeEqual(column_A="observed", column_B="expected"))
    result = batch.validate(suite)
    failures = [row for row in rows if row["observed"] != row["expected"]]
    return Validation(suite=suite_name, success=bool(result.success),
                      statistics={**dict(result.statistics), "checks": len(rows)}, failures=failures)
