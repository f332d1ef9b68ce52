# apache/airflow:3.3.2-python3.11's interface, as docker/airflow.Dockerfile and docker-compose.yaml
# use it: Airflow 3.3.2 with the Celery and PostgreSQL providers on Python 3.11, pip for the user
# `airflow` (uid 50000, group 0), AIRFLOW_HOME=/opt/airflow writable by group 0 (any AIRFLOW_UID),
# and the entrypoint's handling of a bare Airflow command ("scheduler" -> "airflow scheduler").
# Debian's Python 3.11 and PyPI under the repository's constraints: a stand-in for the official
# image, which cannot be pulled here.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv python3-dev curl dumb-init \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 50000 --gid 0 --home-dir /home/airflow --create-home airflow \
 && install -d -o airflow -g 0 -m 2775 /opt/airflow /opt/airflow/logs /opt/airflow/dags /opt/airflow/plugins \
 && chmod 2775 /home/airflow && install -d -o airflow -g 0 -m 0775 /home/airflow/.venv
COPY tests/compose/airflow-entrypoint /entrypoint
RUN chmod 0755 /entrypoint
USER airflow
ENV PATH=/home/airflow/.venv/bin:$PATH AIRFLOW_HOME=/opt/airflow HOME=/home/airflow DUMB_INIT_SETSID=1
COPY constraints.txt /tmp/constraints.txt
RUN python3 -m venv /home/airflow/.venv \
 && pip install --no-cache-dir "apache-airflow==3.3.2" apache-airflow-providers-celery \
      apache-airflow-providers-postgres -c /tmp/constraints.txt
WORKDIR /opt/airflow
ENTRYPOINT ["/usr/bin/dumb-init", "--", "/entrypoint"]
CMD []
