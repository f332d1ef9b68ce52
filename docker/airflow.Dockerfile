# The Airflow image docker-compose.yaml runs: Airflow's official image at the version
# requirements.txt pins, with the project's Python dependencies installed from the repository's own
# files (the same pins and constraints as bin/setup) and the tools a worker runs.
# AIRFLOW_IMAGE: the official image unless a build says otherwise (the compose test builds a
# stand-in from Debian's packages, since no registry is reachable there: tests/compose/).
ARG AIRFLOW_IMAGE=apache/airflow:3.3.2-python3.11
FROM ${AIRFLOW_IMAGE}

USER root
# mysqlclient's headers, the MariaDB client and load tools, OS samplers, an SSH client
RUN apt-get update \
 && apt-get install -y --no-install-recommends libmariadb-dev pkg-config build-essential mariadb-client \
      sysbench sysstat openssh-client curl \
 && rm -rf /var/lib/apt/lists/*
USER airflow

COPY requirements.txt constraints.txt requirements-nodeps.txt /opt/mysqlbench/
# the official image brings the Celery, PostgreSQL and Redis providers; ours come on top with our pins
RUN pip install --no-cache-dir -r /opt/mysqlbench/requirements.txt -c /opt/mysqlbench/constraints.txt \
      apache-airflow-providers-celery apache-airflow-providers-postgres redis psycopg2-binary \
 && pip install --no-cache-dir --no-deps --require-hashes -r /opt/mysqlbench/requirements-nodeps.txt

# dags/, plugins/ and include/ are mounted by docker-compose.yaml; copied too, so the image runs alone
COPY --chown=airflow:0 dags /opt/mysqlbench/dags
COPY --chown=airflow:0 plugins /opt/mysqlbench/plugins
COPY --chown=airflow:0 include /opt/mysqlbench/include
ENV PYTHONPATH=/opt/mysqlbench/plugins \
    AIRFLOW__CORE__DAGS_FOLDER=/opt/mysqlbench/dags \
    AIRFLOW__CORE__PLUGINS_FOLDER=/opt/mysqlbench/plugins \
    MYSQLBENCH_WORK_DIR=/opt/mysqlbench/work
