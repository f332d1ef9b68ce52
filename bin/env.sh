# Sourced by bin/airflow, bin/mysqlbench and the Makefile: Airflow's home, DAGs and plugins are this
# repository's, with SQLite metadata in .airflow/ (ignored by git).
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export AIRFLOW_HOME="${AIRFLOW_HOME:-$repo/.airflow}"
export AIRFLOW__CORE__DAGS_FOLDER="$repo/dags"
export AIRFLOW__CORE__PLUGINS_FOLDER="$repo/plugins"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__EXECUTOR="${AIRFLOW__CORE__EXECUTOR:-LocalExecutor}"
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="${AIRFLOW__DATABASE__SQL_ALCHEMY_CONN:-sqlite:///$AIRFLOW_HOME/airflow.db}"
case "$AIRFLOW__DATABASE__SQL_ALCHEMY_CONN" in
  sqlite*)  # one writer at a time: wait for the lock up to a minute, not sqlite3's 5 s (plugins/mysqlbench/airflow_db.py)
    export AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS="${AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS:-mysqlbench.airflow_db.SQLITE_CONNECT_ARGS}"
    export AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS_ASYNC="${AIRFLOW__DATABASE__SQL_ALCHEMY_CONNECT_ARGS_ASYNC:-mysqlbench.airflow_db.SQLITE_CONNECT_ARGS_ASYNC}"
    # so a task's call to the api-server outwaits the api-server's own wait for that lock (5 s by
    # default: CI saw a task fail to start, its ti-run call timed out while the write waited)
    export AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT="${AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT:-90}" ;;
esac
export AIRFLOW__LOGGING__LOGGING_LEVEL="${AIRFLOW__LOGGING__LOGGING_LEVEL:-INFO}"
export GX_ANALYTICS_ENABLED=False
export PYTHONPATH="$repo/plugins${PYTHONPATH:+:$PYTHONPATH}"
# `airflow standalone` starts its children as `airflow` from PATH: it must find this venv's
export PATH="$repo/.venv/bin:$PATH"
if [ -f "$AIRFLOW_HOME/fernet.key" ]; then
  # connection passwords are stored encrypted in the metadata DB
  AIRFLOW__CORE__FERNET_KEY="$(cat "$AIRFLOW_HOME/fernet.key")"
  export AIRFLOW__CORE__FERNET_KEY
fi
