"""Notifiers for confirmed regressions, through Airflow's notifier mechanism: a regression spec lists
``BaseNotifier`` classes (these, or any provider's: ``SmtpNotifier``, ``SlackNotifier``), and the
alert task calls them as its ``on_failure_callback``. The alert task fails only on a confirmed
regression, so noise never notifies.

Every notifier here sends the same payload: the analysis task's result (the report's paths, the
alerts, a summary in words) and the regression report's JSON. A provider's notifier gets them
through its templated fields, e.g. ``html_content: "{{ ti.xcom_pull(task_ids='analyse')['summary'] }}"``.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from airflow.sdk import BaseNotifier

log = logging.getLogger(__name__)

ANALYSE_TASK = "analyse"


def payload(context: dict[str, Any], task_id: str = ANALYSE_TASK) -> dict[str, Any]:
    """What a notification says: the DAG run, the alerts, the summary, where the report is, and
    the report's JSON itself (absent, with why, when the analysis left none)."""
    result = context["ti"].xcom_pull(task_ids=task_id) or {}
    report: dict[str, Any] | None = None
    if result.get("json") and Path(result["json"]).exists():
        report = json.loads(Path(result["json"]).read_text())
    dag_run = context.get("dag_run")
    return {"dag_id": getattr(dag_run, "dag_id", None) or context["ti"].dag_id,
            "run_id": getattr(dag_run, "run_id", None) or context["ti"].run_id,
            "summary": result.get("summary") or "the analysis left no result (see the task's log)",
            "alerts": result.get("alerts", []), "report_html": result.get("html"), "report_json": result.get("json"),
            "report": report}


class FileNotifier(BaseNotifier):
    """Appends each notification as one JSON line to ``path`` (templated; a relative path is under
    the work directory): a log other tools can tail, and the notifier the tests call for real."""

    template_fields = ("path",)

    def __init__(self, path: str, task_id: str = ANALYSE_TASK) -> None:
        super().__init__()
        self.path, self.task_id = path, task_id

    def notify(self, context) -> None:
        from mysqlbench import paths

        target = Path(self.path)
        if not target.is_absolute():
            target = paths.work_dir() / target
        target.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(payload(context, self.task_id), default=str)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o640)
        with os.fdopen(fd, "a") as handle:
            handle.write(line + "\n")
        log.info("regression notification appended to %s", target)


class WebhookNotifier(BaseNotifier):
    """POSTs the notification as JSON to the URL of an Airflow connection (its extra ``url``, or
    scheme/host/port/path from its fields); the connection's password, if any, goes as a bearer
    token. The URL and token never reach the log."""

    template_fields = ("conn_id",)

    def __init__(self, conn_id: str, task_id: str = ANALYSE_TASK, timeout_s: float = 30.0,
                 include_report: bool = False) -> None:
        super().__init__()
        self.conn_id, self.task_id, self.timeout_s, self.include_report = conn_id, task_id, timeout_s, include_report

    def notify(self, context) -> None:
        import urllib.request

        from airflow.sdk import BaseHook

        conn = BaseHook.get_connection(self.conn_id)
        port = f":{conn.port}" if conn.port else ""
        path = (conn.extra_dejson.get("path") or "").lstrip("/")
        url = conn.extra_dejson.get("url") or f"{conn.schema or 'https'}://{conn.host}{port}/{path}"
        body = payload(context, self.task_id)
        if not self.include_report:
            body.pop("report")
        request = urllib.request.Request(url, data=json.dumps(body, default=str).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        if conn.password:
            request.add_header("Authorization", f"Bearer {conn.password}")
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310 - the user's URL
            status = response.status
        log.info("regression notification sent through connection %s (HTTP %s)", self.conn_id, status)
