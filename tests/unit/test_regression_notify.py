"""The webhook notifier against a real HTTP server on 127.0.0.1: the payload (summary, alerts,
report paths), the bearer token from the connection's password, and nothing secret in the log.
(The file notifier is called for real by Airflow in tests/dags/test_regression_runs.py.)"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from mysqlbench.regression.notify import WebhookNotifier

SECRET = "s3cr3t-token-value"


class _TaskInstance:
    """The one call a notifier makes on the task instance: the analysis task's XCom."""

    dag_id, run_id = "nightly_regression", "scheduled__2026-12-03T02:00:00+00:00"

    def __init__(self, result):
        self.result = result

    def xcom_pull(self, task_ids):
        assert task_ids == "analyse"
        return self.result


@pytest.fixture()
def receiver():
    got = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": json.loads(body)})
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], got
    server.shutdown()


def test_webhook_posts_the_regression_and_keeps_the_token_out_of_the_log(receiver, tmp_path, caplog, monkeypatch):
    port, got = receiver
    monkeypatch.setenv("AIRFLOW_CONN_REGRESSION_HOOK", json.dumps(
        {"conn_type": "http", "host": "127.0.0.1", "port": port, "schema": "http", "password": SECRET,
         "extra": {"path": "/hooks/perf"}}))
    report = tmp_path / "regression.json"
    report.write_text(json.dumps({"alerts": [{"label": "q18"}]}))
    result = {"summary": "1 confirmed regression(s): q18", "alerts": [{"label": "q18", "run_id": "r7"}],
              "html": str(tmp_path / "index.html"), "json": str(report)}
    caplog.set_level(logging.DEBUG)
    WebhookNotifier(conn_id="regression_hook").notify({"ti": _TaskInstance(result)})
    [call] = got
    assert call["path"] == "/hooks/perf" and call["auth"] == f"Bearer {SECRET}"
    assert call["body"]["summary"] == result["summary"] and call["body"]["alerts"][0]["run_id"] == "r7"
    assert call["body"]["report_html"].endswith("index.html") and "report" not in call["body"]
    assert SECRET not in caplog.text and str(port) not in caplog.text


def test_webhook_failure_is_an_error_not_silence(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_REGRESSION_HOOK", json.dumps(
        {"conn_type": "http", "host": "127.0.0.1", "port": 9, "schema": "http"}))  # discard port: refused
    with pytest.raises(OSError):
        WebhookNotifier(conn_id="regression_hook", timeout_s=2).notify({"ti": _TaskInstance({})})
