"""`fleet`: the command table and the exit codes (0 done, 1 refused, 2 usage error, 130 interrupted).

Only argparse is imported to build the table; each command's module is imported when that command runs,
so `fleet --help` starts as fast as Python does.
"""

from __future__ import annotations

import argparse
import sys

from . import VERSION
from . import specs as read

DONE, REFUSED, USAGE, INTERRUPTED = 0, 1, 2, 130
# Flags whose value may start with "-": given as "--for -1h", argparse would read the value as a flag.
SIGNED_VALUES = ("--for", "--gpus", "--nodes", "--booking")


class Parser(argparse.ArgumentParser):
    """argparse with a one-line error: the command, what is wrong, where to read more."""

    def error(self, message: str):
        self.exit(USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    argv, command = split_command(argv)
    parser = build()
    args = parser.parse_args(join_signed(argv))
    if not getattr(args, "handler", None):
        parser.print_help()
        return USAGE
    if command is not None and (args.command_name != "run" or not command):
        what = "nothing after --: give the command to run" if args.command_name == "run" else "only fleet run takes --"
        parser.exit(USAGE, f"fleet {args.command_name}: {what} (see fleet {args.command_name} --help)\n")
    args.command = command
    return dispatch(args)


def dispatch(args) -> int:
    from importlib import import_module

    from .client import Refused
    from .config import NotLoggedIn

    module, function = args.handler.split(":")
    try:
        result = getattr(import_module(f".{module}", __package__), function)(args)
    except (Refused, NotLoggedIn) as refused:
        print(f"fleet {args.command_name}: {refused}", file=sys.stderr)
        return REFUSED
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return INTERRUPTED
    return DONE if result is None else result


def split_command(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """`fleet run … -- COMMAND ARGS…`: what follows the first `--` is the run's command, word for word."""
    if "--" not in argv:
        return argv, None
    at = argv.index("--")
    return argv[:at], argv[at + 1 :]


def join_signed(argv: list[str]) -> list[str]:
    joined, words = [], iter(argv)
    for word in words:
        if word in SIGNED_VALUES:
            value = next(words, None)
            joined.append(word if value is None else f"{word}={value}")
        else:
            joined.append(word)
    return joined


def build() -> Parser:
    parser = Parser(prog="fleet", description="The GPU Fleet command line (docs/cli.md).")
    parser.add_argument("--version", action="version", version=f"fleet {VERSION}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    json_out = Parser(add_help=False)
    json_out.add_argument("-o", "--output", choices=("table", "json"), default="table", help="json for scripts")

    def command(name: str, handler: str, help: str, output: bool = False) -> Parser:
        sub = commands.add_parser(name, help=help, description=help, parents=[json_out] if output else [])
        sub.set_defaults(handler=handler, command_name=name)
        return sub

    add_auth(command)
    add_fleet(command)
    add_bookings(command)
    add_runs(command)
    add_reports(command)
    return parser


def add_auth(command) -> None:
    login = command("login", "auth:login", "Store a token for a server: asks for your password, or takes --token.")
    login.add_argument("--server", required=True, help="the server's address, e.g. https://fleet.example.org")
    login.add_argument("--token", help="a token made on Settings → API tokens, instead of a password")
    login.add_argument("--username", help="asked on the terminal when not given")
    login.add_argument("--name", help="the new token's name (default: fleet-cli on this host)")
    login.add_argument("--expires-days", type=read.positive, default=90, help="the new token's life (default 90)")
    command("logout", "auth:logout", "Revoke the stored token and forget it.")
    command("whoami", "auth:whoami", "Who the token belongs to, on which server.")


def add_fleet(command) -> None:
    status = command("status", "gpus:status", "Every GPU: node, model, use, memory, users, bookings.", output=True)
    status.add_argument("--free", action="store_true", help="only GPUs free for you now")
    status.add_argument("--model", help="only this model (e.g. T4, 'A100 80GB')")
    status.add_argument("--node", help="only this node")
    ps = command("ps", "gpus:ps", "Every process on the fleet's GPUs, with its owner.", output=True)
    ps.add_argument("--user", help="only this researcher's processes (me: yours)")
    ps.add_argument("--node", help="only this node")
    kill = command("kill", "gpus:kill", "End a process (of a run: the whole run), as the page's End does.")
    kill.add_argument("process", type=read.process, metavar="PID@NODE")


def add_bookings(command) -> None:
    find = command("find", "bookings:find", "The soonest windows with COUNT GPUs of MODEL free.", output=True)
    find.add_argument("want", type=read.count_of_model, metavar="COUNTxMODEL")
    find.add_argument("--for", dest="length", type=read.duration, required=True, help="how long, e.g. 8h")
    find.add_argument("--before", type=read.moment, help="only windows that end before this date")
    find.add_argument("--node", help="only on this node")
    book = command("book", "bookings:book", "Book GPUs: COUNTxMODEL, or named ones with --gpu.", output=True)
    book.add_argument("want", type=read.count_of_model, nargs="?", metavar="COUNTxMODEL")
    book.add_argument("--gpu", action="append", default=[], metavar="UUID", help="a GPU by UUID (repeat it)")
    length = book.add_mutually_exclusive_group(required=True)
    length.add_argument("--for", dest="length", type=read.duration, help="how long, e.g. 4h")
    length.add_argument("--until", type=read.moment, help="when it ends")
    book.add_argument("--start", type=read.moment, help="when it starts (default: now)")
    book.add_argument("--node", help="on this node")
    book.add_argument("--purpose", default="", help="what it is for, shown to others")
    command("bookings", "bookings:bookings", "Your bookings.", output=True)
    unbook = command("unbook", "bookings:unbook", "Cancel a booking (one that has started ends now).")
    unbook.add_argument("booking", metavar="ID")


def add_runs(command) -> None:
    run = command("run", "runs:run", "Start a run: your command after --, or a built-in --workload.", output=True)
    run.add_argument("--workload", help="a built-in workload instead of a command (digits_cnn, synthetic, …)")
    run.add_argument("--param", action="append", type=read.parameter, default=[], metavar="K=V", help="a workload's")
    run.add_argument("--gpus", type=read.positive, metavar="N", help="N free GPUs (per node with --nodes)")
    run.add_argument("--gpu", action="append", default=[], metavar="UUID", help="a GPU by UUID (repeat it)")
    run.add_argument("--model", help="only GPUs of this model")
    run.add_argument("--node", help="only GPUs of this node")
    run.add_argument("--nodes", type=read.positive, default=1, metavar="K", help="spread over K nodes (ddp)")
    run.add_argument("--booking", metavar="ID", help="one of your bookings: the run takes its GPUs")
    run.add_argument("--strategy", help="single, ddp, fsdp, hogwild (default: the server's)")
    where = run.add_mutually_exclusive_group()
    where.add_argument("--venv", metavar="PATH", help="a virtualenv on the node")
    where.add_argument("--conda", metavar="PATH", help="a conda environment on the node")
    where.add_argument("--image", help="a container image")
    run.add_argument("--env", action="append", type=read.variable, default=[], metavar="K=V", help="a variable")
    run.add_argument("--workdir", metavar="DIR", help="an absolute directory on the node")
    run.add_argument("--setup", metavar="CMD", help="a shell line run first")
    run.add_argument("--name", dest="run_name", default="", help="the run's name")
    run.add_argument("--project", help="the project to charge")
    run.add_argument("--follow", "-f", action="store_true", help="print the log to the end; exit 0 if it succeeded")
    runs = command("runs", "runs:runs", "Runs you may see, newest first.", output=True)
    runs.add_argument("--mine", action="store_true", help="only yours")
    runs.add_argument("--status", help="only runs in this state (queued, running, succeeded, failed, …)")
    show = command("show", "runs:show", "One run: state, GPUs, cost, command, environment.", output=True)
    show.add_argument("run", type=read.positive, metavar="RUN")
    logs = command("logs", "follow:logs", "A run's log; -f follows it to the end.")
    logs.add_argument("run", type=read.positive, metavar="RUN")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing until the run ends")
    cancel = command("cancel", "runs:cancel", "Stop a run and wait until its processes are gone.")
    cancel.add_argument("run", type=read.positive, metavar="RUN")
    cancel.add_argument("--no-wait", action="store_true", help="ask and return at once")
    resume = command("resume", "runs:resume", "Continue an ended run from its last checkpoint.", output=True)
    resume.add_argument("run", type=read.positive, metavar="RUN")


def add_reports(command) -> None:
    alerts = command("alerts", "reports:alerts", "Your open alerts (--all: resolved ones too).", output=True)
    alerts.add_argument("--all", action="store_true", help="resolved ones too")
    costs = command("costs", "reports:costs", "This month's GPU costs.", output=True)
    whose = costs.add_mutually_exclusive_group()
    whose.add_argument("--me", action="store_true", help="only yours")
    whose.add_argument("--project", help="only this project")
    costs.add_argument("--month", help="YYYY-MM (default: this month)")


if __name__ == "__main__":
    raise SystemExit(main())
