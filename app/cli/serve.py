"""`trainingrun serve`: command-line options and TRAININGRUN_* variables -> Settings, then
the app (app/web/app.py) on uvicorn. Every bad value is a one-line error naming the option or
the variable it came from."""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import webbrowser

from app.cli.flags import read_settings, settings_parser
from app.options import plan_check, plan_names
from app.routes.join import join_url, lan_address
from app.run.history import record_in_use
from app.run.rundir import check_run_dir
from app.settings import Settings
from app.web.app import WS_MAX_SIZE, create_app
from app.web.guard import Guard


def build_parser(table: type[Settings] = Settings) -> argparse.ArgumentParser:
    return settings_parser(
        "serve",
        table,
        "Serve the live training run on a web page. Every option can also be set "
        "as a TRAININGRUN_* environment variable (e.g. TRAININGRUN_PORT=9000); the defaults "
        "below are the built-in ones.",
    )


def settings_from_args(argv: list[str], table: type[Settings] = Settings) -> Settings:
    parser = build_parser(table)
    settings, where = read_settings(parser, "serve", table, parser.parse_args(argv))
    # The plan's rules (the engine's own), each naming the option or the variable.
    found = plan_check(settings, settings.effective_batch_size, plan_names(table, where.all()))
    if found:
        parser.error("; ".join(found))
    try:
        settings.run_config()  # the cluster's shape: gpus over servers, batch over gpus
    except ValueError as exc:
        parser.error(str(exc))
    problem = check_run_dir(settings.run_dir)
    if problem:
        parser.error(f"--run-dir: {problem}")
    # One server per run dir: it holds runs.sqlite exclusively while it runs.
    problem = record_in_use(settings.db_path)
    if problem:
        parser.error(f"--run-dir: {problem}")
    _choose_backend(parser, settings)
    return settings


def _choose_backend(parser: argparse.ArgumentParser, settings: Settings) -> None:
    """Check --backend / --device here, in one line (serve_main hands them to the worker)."""
    from app.engine import backend

    if settings.backend == "numpy" and settings.device != "cpu":
        parser.error("--device cuda: the numpy backend runs on the CPU; add --backend torch")
    if settings.backend == "torch":
        if not backend.torch_available():
            parser.error(
                "--backend torch needs PyTorch: pip install 'trainingrun[torch]' "
                "(or run with --backend numpy)"
            )
        if settings.device == "cuda" and not backend.cuda_available():
            print(
                f"{parser.prog}: --device cuda: CUDA is not available here (no GPU, or a "
                "CPU-only PyTorch): the run computes on the CPU",
                file=sys.stderr,
                flush=True,
            )


def serve_main(argv: list[str] | None = None) -> int:

    settings = settings_from_args(list(sys.argv[1:] if argv is None else argv))
    # The worker process inherits these and computes with that backend (worker.worker_main).
    os.environ["TRAININGRUN_BACKEND"] = settings.backend
    os.environ["TRAININGRUN_DEVICE"] = settings.device
    app = create_app(settings)
    guard: Guard = app.state.guard
    shown = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    url = f"http://{shown}:{settings.port}/"
    print(f"Training Run: {url}  (run dir {settings.run_dir})", flush=True)
    if guard.public:
        print(f"Public server: anyone can watch; to control open {url}?token={guard.token}")
    if settings.host in ("0.0.0.0", "::", "") and not settings.allowed_hosts:
        # The room reaches this machine by its network address: answer to it, and say it.
        lan = lan_address()
        if lan:
            settings.allowed_hosts.append(lan)
            guard.allowed_hosts.append(lan)
    if settings.host not in ("127.0.0.1", "::1", "localhost") or settings.allowed_hosts:
        print(f"Join link for the room: {join_url(settings)}  (QR code on the presenter's page)")
    if settings.host in ("0.0.0.0", "::", "") and not settings.allowed_hosts:
        print(
            "Listening on every interface, but answering only to localhost: for other "
            "machines add --allowed-host with the address or name they use "
            f"(this machine is {socket.gethostname()!r})",
            flush=True,
        )
    return run_server(app, settings, url)


def run_server(app, settings, url: str) -> int:
    """Open the page if asked, then serve `app` until Ctrl+C (serve and watch share this)."""
    import uvicorn

    from app.web.idle import header_deadline_protocol

    if settings.open_browser:
        threading.Timer(1.5, webbrowser.open, args=(url,)).start()
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        ws_max_size=WS_MAX_SIZE,
        # Frames are serialised once and sent to every viewer as they are; per-message
        # compression would redo that work for each viewer and each frame.
        ws_per_message_deflate=False,
        timeout_graceful_shutdown=5,
        # Sockets that send no complete header, or idle after a response, are closed.
        http=header_deadline_protocol(settings.header_timeout_s),
        timeout_keep_alive=settings.keep_alive_s,
        # No "server: uvicorn" on every response: the page's first load is ~90 of them.
        server_header=False,
    )
    try:
        uvicorn.Server(config).run()
    except KeyboardInterrupt:
        pass  # uvicorn re-raises Ctrl+C after its clean shutdown; that is a normal exit
    return 0
