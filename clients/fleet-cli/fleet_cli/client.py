"""Talking to the GPU Fleet JSON API: one request, its refusals as one line each, and lists read page by page.

Every refusal becomes `Refused` with a sentence a person can act on: the API's own reason (which names
the field), "run fleet login" for a token the server no longer takes, and a plain word when the address
answers something that is not the API (a web page, nothing at all).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

from . import VERSION

TIMEOUT_S = 30.0


class Refused(Exception):
    """The server (or the way to it) said no; the message is one line for the user."""


class Unreachable(Refused):
    """No answer at all: a wrong address, a server that is down, a dropped connection."""


def normal_server(url: str) -> str:
    """The server's base URL as stored: scheme and host, no trailing slash or /api."""
    url = url.strip().rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise Refused(f"--server: {url!r} is not a web address; give one such as https://fleet.example.org.")
    return url.removesuffix("/api")


class Api:
    """One server and token; each method returns the decoded JSON (None for an empty answer)."""

    def __init__(self, server: str, token: str | None = None, timeout_s: float = TIMEOUT_S):
        self.server = server.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s

    def get(self, path: str, **params) -> object:
        return self.send("GET", path, params=params)

    def post(self, path: str, body: dict | None = None) -> object:
        return self.send("POST", path, body=body)

    def delete(self, path: str) -> object:
        return self.send("DELETE", path)

    def every(self, path: str, **params) -> list:
        """Every item of a paginated list, following `next` to the end."""
        page = self.get(path, limit=1000, **params)
        items = list(page["results"])
        while page.get("next"):
            page = self.send("GET", page["next"])
            items.extend(page["results"])
        return items

    def send(self, method: str, path: str, body: dict | None = None, params: dict | None = None) -> object:
        url = path if path.startswith(("http://", "https://")) else self.server + path
        wanted = {key: value for key, value in (params or {}).items() if value is not None}
        if wanted:
            url += "?" + urllib.parse.urlencode(wanted, doseq=True)
        request = urllib.request.Request(url, method=method, headers=self.headers(body is not None))
        if body is not None:
            request.data = json.dumps(body).encode()
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                return decode(response.status, response.headers.get("Content-Type", ""), response.read(), url)
        except urllib.error.HTTPError as error:
            raise refusal(error, url) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise Unreachable(f"Cannot reach {self.server}: {reason}.") from None

    def headers(self, has_body: bool) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": f"fleet-cli/{VERSION}"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if has_body:
            headers["Content-Type"] = "application/json"
        return headers


def decode(status: int, content_type: str, raw: bytes, url: str) -> object:
    if status == 204 or not raw:
        return None
    if "json" not in content_type:
        raise Refused(f"{url} answered with {kind_of(content_type)}, not the GPU Fleet API: check the server URL.")
    try:
        return json.loads(raw)
    except ValueError:
        raise Refused(f"{url} answered with broken JSON: check the server URL.") from None


def refusal(error: urllib.error.HTTPError, url: str) -> Refused:
    """The API's reason for a 4xx or 5xx, on one line."""
    content_type = error.headers.get("Content-Type", "") if error.headers else ""
    raw = error.read() if error.fp else b""
    if "json" not in content_type:
        return Refused(
            f"{url} answered {error.code} with {kind_of(content_type)}, not the GPU Fleet API: check the URL."
        )
    try:
        body = json.loads(raw)
    except ValueError:
        body = {}
    detail = one_line(body.get("detail") or reason_of(body) or f"The server answered {error.code}.")
    if error.code == 401:
        return Refused(f"{detail} Run fleet login.")
    return Refused(detail)


def reason_of(body: dict) -> str:
    """The first field's message as "field: message", for an answer without a detail."""
    for field, messages in (body.get("errors") or {}).items():
        return f"{field}: {messages[0] if isinstance(messages, list) and messages else messages}"
    return ""


def one_line(text: object) -> str:
    return " ".join(str(text).split())


def kind_of(content_type: str) -> str:
    if "html" in content_type:
        return "an HTML page"
    return f"content of type {content_type.split(';')[0]}" if content_type else "content of no stated type"


def logged_in() -> Api:
    """The API as the stored (or FLEET_*) login reaches it."""
    from .config import current

    login = current()
    return Api(login.server, login.token)


def my_name(api: Api) -> str:
    return api.get("/api/token/current/")["username"]
