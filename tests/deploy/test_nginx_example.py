"""deploy/nginx/gpu-fleet.conf in front of a real web server: TLS ends at nginx, websockets pass through."""

import asyncio
import json
import shutil
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from fleet.embedded import free_port
from tests.deploy.roles import BASE_DIR
from tests.monitoring.ingest.agents import hello

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed (make test installs nginx-light)"),
]

EXAMPLE = BASE_DIR / "deploy" / "nginx" / "gpu-fleet.conf"


class Proxy:
    """nginx running the example with its addresses, ports and paths pointed at this test's."""

    def __init__(self, tmp_path, upstream_port: int, static_dir):
        self.http_port, self.https_port = free_port(), free_port()
        self.cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
            + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(self.cert)],
            check=True,
            capture_output=True,
        )
        site = (
            EXAMPLE.read_text()
            .replace("server 127.0.0.1:8000;", f"server 127.0.0.1:{upstream_port};")
            .replace("listen 80;", f"listen 127.0.0.1:{self.http_port};")
            .replace("listen 443 ssl http2;", f"listen 127.0.0.1:{self.https_port} ssl http2;")
            .replace("/etc/ssl/certs/fleet.example.org.pem", str(self.cert))
            .replace("/etc/ssl/private/fleet.example.org.key", str(key))
            .replace("/var/lib/gpu-fleet/static/", f"{static_dir}/")
        )
        site = "\n".join(line for line in site.splitlines() if "listen [::]" not in line)
        (tmp_path / "site.conf").write_text(site)
        main = f"user root; daemon off; pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log;\n"
        main += f"events {{}}\nhttp {{ access_log off; include {tmp_path}/site.conf; }}\n"
        (tmp_path / "nginx.conf").write_text(main)
        self.log = tmp_path / "error.log"
        argv = ["nginx", "-c", str(tmp_path / "nginx.conf"), "-p", str(tmp_path)]
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.wait_listening()

    def wait_listening(self, timeout_s: float = 10) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited: {self.process.stderr.read().decode()}")
            try:
                socket.create_connection(("127.0.0.1", self.https_port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not listen")

    def tls(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.cert))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def proxy(asgi_server, tmp_path):
    static = tmp_path / "static"
    (static / "css").mkdir(parents=True)
    (static / "css" / "collected.css").write_text("body { margin: 0 }\n")
    started = Proxy(tmp_path, asgi_server.port, static)
    yield started
    started.stop()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_plain_http_is_sent_to_https(proxy):
    opener = urllib.request.build_opener(NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as answer:
        opener.open(f"http://127.0.0.1:{proxy.http_port}/fleet/?page=2", timeout=10)

    assert answer.value.code == 301
    assert answer.value.headers["Location"] == "https://127.0.0.1/fleet/?page=2"


def test_pages_and_collected_static_files_are_served_over_tls(proxy):
    base = f"https://127.0.0.1:{proxy.https_port}"

    with urllib.request.urlopen(base + "/healthz", context=proxy.tls(), timeout=10) as health:
        payload = json.loads(health.read())
    with urllib.request.urlopen(base + "/static/css/collected.css", context=proxy.tls(), timeout=10) as asset:
        css = asset.read()

    assert health.status == 200 and payload["status"] == "up"
    assert css == b"body { margin: 0 }\n"


def test_an_agent_streams_through_the_proxy_over_a_secure_websocket(proxy):
    from inventory.nodes import add_node

    _, token = add_node("gpu-behind-proxy")

    async def hello_and_welcome():
        url = f"wss://127.0.0.1:{proxy.https_port}/ws/agent/"
        headers = {"Authorization": f"Bearer {token}"}
        async with connect(url, ssl=proxy.tls(), additional_headers=headers, open_timeout=10) as ws:
            await ws.send(json.dumps(hello("gpu-behind-proxy")))
            return json.loads(await asyncio.wait_for(ws.recv(), 15))

    welcome = asyncio.run(hello_and_welcome())

    assert welcome["type"] == "welcome" and welcome["node"] == "gpu-behind-proxy"


def test_an_address_that_opens_agent_connections_in_a_loop_is_answered_429_by_the_proxy(proxy):
    url = f"wss://127.0.0.1:{proxy.https_port}/ws/agent/"

    async def one() -> int:
        try:
            async with connect(url, ssl=proxy.tls(), open_timeout=60):
                return 101
        except InvalidStatus as refused:
            return refused.response.status_code

    async def at_once() -> list[int]:  # far over 2 new connections a second with a burst of 20, and 8 open
        return await asyncio.gather(*(one() for _ in range(40)))

    statuses = asyncio.run(at_once())

    assert set(statuses) == {101, 429}
