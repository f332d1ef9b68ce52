"""The Benchmarks pages in the Airflow UI."""
