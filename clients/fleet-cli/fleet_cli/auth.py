"""login, logout, whoami: a named API token per user, stored in the config file or given in FLEET_TOKEN."""

from __future__ import annotations

import getpass
import socket

from . import config
from .client import Api, Refused, normal_server
from .output import local_time

CURRENT = "/api/token/current/"


def login(args) -> None:
    server = normal_server(args.server)
    if args.token:
        token, me = args.token.strip(), Api(server, args.token.strip()).get(CURRENT)
    else:
        token, me = with_password(server, args)
    where = config.write({"server": server, "token": token, "token_name": me["name"], "username": me["username"]})
    print(f"Logged in to {server} as {me['username']} (token {me['name']!r}); saved in {where}.")


def with_password(server: str, args) -> tuple[str, dict]:
    """Trade a username and password, asked on the terminal, for a new named token."""
    username = args.username or input("Username: ").strip()
    password = getpass.getpass("Password: ")
    if not username or not password:
        raise Refused("Give a username and a password.")
    name = args.name or f"fleet-cli on {socket.gethostname()}"[:100]
    body = {"username": username, "password": password, "name": name, "expires_in_days": args.expires_days}
    made = Api(server).post("/api/token/", body)
    return made["token"], Api(server, made["token"]).get(CURRENT)


def logout(args) -> None:
    login = config.current()
    try:
        Api(login.server, login.token).delete(CURRENT)
        said = "Token revoked"
    except Refused as refused:
        if "fleet login" not in str(refused):  # a token the server refuses already is as good as revoked
            raise
        said = "The server no longer takes this token"
    if login.from_environment:
        print(f"{said}; unset FLEET_TOKEN too.")
        return
    stored = config.read()
    stored.pop("token", None)
    stored.pop("token_name", None)
    config.write(stored)
    print(f"{said}; logged out of {login.server}.")


def whoami(args) -> None:
    login = config.current()
    me = Api(login.server, login.token).get(CURRENT)
    expires = local_time(me["expires_at"]) or "never"
    admin = " (admin)" if me["is_staff"] else ""
    print(f"{me['username']}{admin} on {login.server}, token {me['name']!r} ({me['prefix']}…), expires {expires}.")
