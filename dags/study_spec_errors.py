"""Broken study and regression specs as an Airflow import error, without hiding the good ones: Airflow records an
import error per DAG file and drops every DAG of a file that raises, so studies.py builds each
valid spec and this file (which defines no DAG, airflow) raises with every broken spec's file, line
and field. ``bin/mysqlbench lint`` prints the same messages."""

from mysqlbench.regression.factory import regression_errors
from mysqlbench.studies.factory import spec_errors
from mysqlbench.studies.spec import study_files

_problems = [message for path in study_files() for message in spec_errors(path)] + regression_errors()
if _problems:
    raise ValueError("broken study or regression spec(s):\n" + "\n".join(_problems))
