"""Open alerts directly through the lifecycle, for tests of delivery, pages and the API."""

import itertools
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from django.utils import timezone

from monitoring.alerts.choices import AlertKind, AlertSeverity
from monitoring.alerts.findings import Finding
from monitoring.alerts.lifecycle import open_alerts
from monitoring.alerts.models import Alert

_keys = itertools.count(1)


def open_alert(
    owner=None,
    project=None,
    kind: AlertKind = AlertKind.IDLE_PROCESS,
    severity: AlertSeverity = AlertSeverity.WARNING,
    title: str = "Idle python (pid 4242) on gpu-01 GPU 0",
) -> Alert:
    finding = Finding(
        key=f"test:{next(_keys)}",
        kind=kind,
        severity=severity,
        title=title,
        message="alice's python (pid 4242) holds 8.0 GiB on gpu-01 GPU 0 while the GPU stayed under 5 % for 30 min.",
        owner_id=owner.pk if owner else None,
        project_id=project.pk if project else None,
        details={"node": "gpu-01", "gpu": "GPU-1", "pid": 4242},
    )
    return open_alerts([finding], timezone.now())[0]


class Receiver:
    """A webhook endpoint on 127.0.0.1 answering with the given statuses in turn (then 200)."""

    def __init__(self, answers: list[int] | None = None):
        self.answers = list(answers or [])
        self.requests: list[tuple[dict, bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                status = receiver.answers.pop(0) if receiver.answers else 200
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/fleet"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
