"""mysqlbench: MySQL and MariaDB performance studies as Airflow DAGs.

This package is the library behind the DAGs in ``dags/``; Airflow puts ``plugins/`` on sys.path.
"""

__version__ = "0.1.0"
