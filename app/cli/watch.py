"""`trainingrun watch`: a server with no built-in run, showing a real torch.distributed job
that reports to it (app/attach/ in the job, app/attached/run.py here). The page opens at once and
says it is waiting until a job attaches."""

from __future__ import annotations

import argparse
import sys

from pydantic import ValidationError

from app.cli.parser import CommandParser
from app.cli.serve import LOG_LEVELS, run_server
from app.settings import Settings
from app.web.app import create_app
from app.web.guard import Guard

DEFAULT_RUN_DIR = "runs/watch"


def build_parser() -> argparse.ArgumentParser:
    p = CommandParser(
        prog="trainingrun watch",
        description="Show a real PyTorch distributed job on the page: start this, then the job "
        "with `from app.attach import Reporter` (e.g. torchrun --nproc-per-node 4 "
        "examples/ddp_tiny.py --report http://127.0.0.1:8000). Options can also be set as "
        "TRAININGRUN_* environment variables.",
    )
    p.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default 8000; 0 picks a free one)")
    p.add_argument(
        "--run-dir", help=f"where the server keeps its files (default ./{DEFAULT_RUN_DIR})"
    )
    p.add_argument(
        "--token", help="token the job's reporter must send when the server is not loopback-only"
    )
    p.add_argument(
        "--public", action="store_true", default=None, help="require the token even on loopback"
    )
    p.add_argument(
        "--allowed-host",
        dest="allowed_hosts",
        action="append",
        metavar="NAME",
        help="another name or address the ranks or viewers use to reach this server "
        "(repeatable; see `trainingrun serve --help`)",
    )
    p.add_argument(
        "--open",
        dest="open_browser",
        action="store_true",
        default=None,
        help="open the page in the default web browser once the server is up",
    )
    p.add_argument("--max-fps", type=float, help="most step frames per second to each viewer")
    p.add_argument("--log-level", choices=LOG_LEVELS, help="server log level (default info)")
    return p


def settings_from_args(argv: list[str]) -> Settings:
    parser = build_parser()
    args = parser.parse_args(argv)
    given = {k: v for k, v in vars(args).items() if v is not None}
    given.setdefault("run_dir", DEFAULT_RUN_DIR)
    try:
        return Settings(**given)
    except ValidationError as exc:
        problems = [
            f"--{str(e['loc'][0]).replace('_', '-')}: {e['msg']}" if e["loc"] else e["msg"]
            for e in exc.errors()
        ]
        parser.error("; ".join(problems))


def watch_main(argv: list[str] | None = None) -> int:

    settings = settings_from_args(list(sys.argv[1:] if argv is None else argv))
    app = create_app(settings, watch=True)
    guard: Guard = app.state.guard
    shown = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    url = f"http://{shown}:{settings.port}"
    print(f"Training Run, watching: {url}/  (no built-in run)", flush=True)
    print(
        f"Attach a job: torchrun --nproc-per-node 4 examples/ddp_tiny.py --report {url}",
        flush=True,
    )
    if guard.public:
        print(f"Not loopback-only: reporters need token={guard.token} (or TRAININGRUN_TOKEN)")
    return run_server(app, settings, url + "/")
