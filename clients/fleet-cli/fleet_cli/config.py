"""Where the CLI finds its server and token: FLEET_SERVER and FLEET_TOKEN, else the user's config file.

The file (`$XDG_CONFIG_HOME/gpu-fleet/config.toml`, else `~/.config/gpu-fleet/config.toml`) holds a
secret, so it is written whole to a new file of mode 0600 and moved into place: a reader never sees half
of it, and no moment exists where it is readable by others.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

KEYS = ("server", "token", "token_name", "username")


class NotLoggedIn(Exception):
    """No server or no token: the user has to log in first."""


@dataclass
class Login:
    """A server and the token to send it."""

    server: str
    token: str
    from_environment: bool = False


def path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "gpu-fleet" / "config.toml"


def read() -> dict[str, str]:
    """The stored values; empty when there is no file."""
    import tomllib

    try:
        with open(path(), "rb") as file:
            data = tomllib.load(file)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as error:
        raise NotLoggedIn(f"{path()} is not valid TOML ({error}); delete it and run fleet login.") from None
    return {key: str(data[key]) for key in KEYS if key in data}


def write(values: dict[str, str]) -> Path:
    """Store `values` (strings) as the whole file, readable only by its owner."""
    target = path()
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    # A JSON string is a valid TOML basic string: the same escapes, \uXXXX for the rest.
    text = "".join(f"{key} = {json.dumps(values[key])}\n" for key in KEYS if values.get(key))
    fresh = target.with_name(f".{target.name}.{os.getpid()}")
    descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        os.fchmod(file.fileno(), 0o600)  # the mode is kept even under a permissive umask
        file.write(text)
    os.replace(fresh, target)
    return target


def current() -> Login:
    """The server and token to use: the environment's override the file's."""
    stored = read()
    server = os.environ.get("FLEET_SERVER") or stored.get("server")
    token = os.environ.get("FLEET_TOKEN") or stored.get("token")
    if not server:
        raise NotLoggedIn("No server: run fleet login --server URL (or set FLEET_SERVER).")
    if not token:
        raise NotLoggedIn(f"Not logged in to {server}: run fleet login --server {server}.")
    return Login(server.rstrip("/"), token, from_environment="FLEET_TOKEN" in os.environ)
