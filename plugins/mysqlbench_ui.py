"""The mysqlbench plugin for the Airflow 3 UI: the Benchmarks pages (mysqlbench.ui.app, a FastAPI
app under /mysqlbench behind Airflow's authentication) in the navigation and as a tab on every DAG
run, where a study run's tab shows its report."""

from airflow.plugins_manager import AirflowPlugin

PREFIX = "/mysqlbench"


class _BuiltOnFirstRequest:
    """The ASGI app the API server mounts, built on its first request. Every process that loads
    plugins imports this file (a task process does, for macros); only the API server serves it, so
    only there are FastAPI and Airflow's API security modules imported (about 1.5 s here)."""

    def __init__(self) -> None:
        self._app = None

    async def __call__(self, scope, receive, send) -> None:
        if self._app is None:
            from mysqlbench.ui.app import create_app

            self._app = create_app()
        await self._app(scope, receive, send)


class MysqlbenchPlugin(AirflowPlugin):
    name = "mysqlbench"
    fastapi_apps = [{"app": _BuiltOnFirstRequest(), "url_prefix": PREFIX, "name": "mysqlbench results"}]
    external_views = [
        {"name": "Benchmarks", "href": f"{PREFIX}/", "destination": "nav", "url_route": "benchmarks"},
        {"name": "Benchmark report", "href": PREFIX + "/runs/{DAG_ID}/{RUN_ID}", "destination": "dag_run",
         "url_route": "benchmark_report"},
    ]
