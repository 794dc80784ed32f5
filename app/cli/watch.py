"""`trainingrun watch`: a server with no built-in run, showing a real torch.distributed job
that reports to it (app/reporter/ in the job, app/attached/run.py here). The page opens at once and
says it is waiting until a job attaches."""

from __future__ import annotations

import argparse
import sys

from app.cli.flags import read_settings, settings_parser
from app.cli.serve import run_server
from app.settings import Settings
from app.web.app import create_app
from app.web.guard import Guard


def build_parser(table: type[Settings] = Settings) -> argparse.ArgumentParser:
    return settings_parser(
        "watch",
        table,
        "Show a real PyTorch distributed job on the page: start this, then the job "
        "with `from app.reporter import Reporter` (e.g. torchrun --nproc-per-node 4 "
        "examples/ddp_tiny.py --report http://127.0.0.1:8000). Options can also be set as "
        "TRAININGRUN_* environment variables.",
    )


def settings_from_args(argv: list[str], table: type[Settings] = Settings) -> Settings:
    parser = build_parser(table)
    settings, _where = read_settings(parser, "watch", table, parser.parse_args(argv))
    return settings


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
