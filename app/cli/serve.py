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
from typing import Any

from pydantic import ValidationError

from app.cli.parser import CommandParser
from app.engine.config import RunConfig
from app.engine.plan import SCHEDULES, plan_problems
from app.engine.timing import PRESETS
from app.protocol import parse_speed
from app.routes.join import join_url, lan_address
from app.run.rundir import check_run_dir
from app.settings import Settings
from app.web.app import WS_MAX_SIZE, create_app
from app.web.guard import Guard

LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")  # uvicorn's


def _default(name: str) -> Any:
    return Settings.model_fields[name].default


def build_parser() -> argparse.ArgumentParser:
    p = CommandParser(
        prog="trainingrun serve",
        description="Serve the live training run on a web page. Every option can also be set "
        "as a TRAININGRUN_* environment variable (e.g. TRAININGRUN_PORT=9000); the defaults "
        "below are the built-in ones.",
    )
    p.add_argument("--host", help=f"address to listen on (default {_default('host')})")
    p.add_argument(
        "--port", type=int, help=f"port (default {_default('port')}; 0 picks a free one)"
    )
    p.add_argument(
        "--run-dir", help=f"data lake, checkpoints, runs.sqlite (default ./{_default('run_dir')})"
    )
    p.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help=f"simulated GPU and network hardware (default {_default('preset')})",
    )
    p.add_argument("--gpus", type=int, help=f"simulated GPUs in all (default {_default('gpus')})")
    p.add_argument(
        "--servers",
        type=int,
        help=f"servers the GPUs are spread evenly over (default {_default('servers')})",
    )
    p.add_argument(
        "--seed", type=int, help=f"the run's seed; same seed, same run (default {_default('seed')})"
    )
    p.add_argument(
        "--batch-size",
        type=int,
        help=f"global batch in sequences (default {RunConfig.batch_size}, or one per GPU)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=int,
        help=f"steps between checkpoints, 0 for none (default {_default('checkpoint_every')})",
    )
    p.add_argument(
        "--layers",
        type=int,
        help=f"transformer layers of the model (default {RunConfig.n_layer})",
    )
    p.add_argument(
        "--experts",
        type=int,
        help="experts per layer: each layer's MLP becomes a mixture of experts "
        f"(default {RunConfig.experts}: a dense MLP)",
    )
    p.add_argument(
        "--top-k",
        type=int,
        help=f"experts each token is routed to, with --experts (default {RunConfig.top_k})",
    )
    p.add_argument(
        "--tp",
        type=int,
        help="tensor parallel: GPUs each layer is split over, inside one server "
        f"(default {RunConfig.tp})",
    )
    p.add_argument(
        "--pp",
        type=int,
        help=f"pipeline parallel: stages the layers are split into (default {RunConfig.pp})",
    )
    p.add_argument(
        "--ep",
        type=int,
        help="expert parallel: GPUs that share out each layer's experts, needs --experts "
        f"(default {RunConfig.ep})",
    )
    p.add_argument(
        "--microbatches",
        type=int,
        help="microbatches each data-parallel copy's batch is cut into "
        f"(default {RunConfig.microbatches})",
    )
    p.add_argument(
        "--schedule",
        choices=SCHEDULES,
        help="pipeline schedule: all forwards then all backwards (gpipe), or one forward "
        f"one backward (1f1b) (default {RunConfig.schedule})",
    )
    p.add_argument(
        "--speed", help="lesson (a step every 2 s, the default), max, or steps per second"
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        default=None,
        help="start a new run, deleting the run dir's checkpoints (default: resume)",
    )
    p.add_argument(
        "--open",
        dest="open_browser",
        action="store_true",
        default=None,
        help="open the page in the default web browser once the server is up",
    )
    p.add_argument("--token", help="presenter token needed for controls on a public server")
    p.add_argument(
        "--public", action="store_true", default=None, help="require the token even on loopback"
    )
    p.add_argument(
        "--allowed-host",
        dest="allowed_hosts",
        action="append",
        metavar="NAME",
        help="another name or IP address people use to reach this server, besides localhost "
        "and --host (repeatable). Requests for any other name are refused, so a web page "
        "cannot reach the run by pointing a name of its own at this machine (DNS rebinding). "
        "For a classroom on --host 0.0.0.0, add the address or name the students type, "
        "e.g. --allowed-host 192.168.1.20 --allowed-host teacher-pc.local "
        "(find them with `hostname -I` and `hostname`)",
    )
    p.add_argument(
        "--rest-after",
        dest="rest_after_s",
        type=float,
        metavar="SECONDS",
        help=f"stop stepping after this many seconds with no viewer, 0 never "
        f"(default {_default('rest_after_s'):g})",
    )
    p.add_argument(
        "--max-fps",
        type=float,
        help=f"most step frames per second sent to each viewer (default {_default('max_fps'):g})",
    )
    p.add_argument(
        "--backend",
        choices=["numpy", "torch"],
        help="array library the model's maths runs in: numpy or torch (PyTorch tensors, the "
        f"same numbers; pip install 'trainingrun[torch]') (default {_default('backend')})",
    )
    p.add_argument(
        "--device",
        choices=["cpu", "cuda"],
        help="where the torch backend computes: cpu or cuda (a GPU; falls back to the CPU with "
        f"a message when CUDA is absent) (default {_default('device')})",
    )
    p.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        help=f"server log level (default {_default('log_level')})",
    )
    return p


def _settings_error(parser: argparse.ArgumentParser, exc: ValidationError, given: dict) -> str:
    """One line naming each bad setting as the user gave it: an option or a variable."""
    options = {a.dest: a.option_strings[-1] for a in parser._actions if a.option_strings}
    problems = []
    for err in exc.errors():
        field = str(err["loc"][0]) if err["loc"] else "settings"
        if field in given and field in options:
            where = options[field]
        else:
            where = f"TRAININGRUN_{field.upper()}"
        problems.append(f"{where}: {err['msg']} (got {err.get('input')!r})")
    return "; ".join(problems)


# RunConfig's names for the settings that differ (the rest are the same).
CONFIG_TO_SETTING = {"n_layer": "layers"}
NOT_OPTIONS = {"n_head": "the model's heads", "n_embd": "the model's width"}


def _plan_problems(parser: argparse.ArgumentParser, settings: Settings, given: dict) -> list[str]:
    """The plan's rules (the engine's own), each naming the option or the variable the value
    came from."""
    options = {a.dest: a.option_strings[-1] for a in parser._actions if a.option_strings}

    def where(field: str) -> str:
        if field in NOT_OPTIONS:
            return NOT_OPTIONS[field]
        name = CONFIG_TO_SETTING.get(field, field)
        if name in given or name not in settings.model_fields_set:
            return options.get(name, field)
        return f"TRAININGRUN_{name.upper()}"

    fields = (
        "gpus", "batch_size", "n_layer", "experts", "top_k", "tp", "pp", "ep",
        "microbatches", "schedule", "n_head", "n_embd",
    )  # fmt: skip
    return plan_problems(
        gpus=settings.gpus,
        servers=settings.servers,
        n_layer=settings.layers,
        n_head=RunConfig.n_head,
        n_embd=RunConfig.n_embd,
        batch_size=settings.effective_batch_size,
        tp=settings.tp,
        pp=settings.pp,
        ep=settings.ep,
        microbatches=settings.microbatches,
        schedule=settings.schedule,
        experts=settings.experts,
        top_k=settings.top_k,
        names={f: where(f) for f in fields},
    )


def settings_from_args(argv: list[str]) -> Settings:
    parser = build_parser()
    args = parser.parse_args(argv)
    given: dict[str, Any] = {k: v for k, v in vars(args).items() if v is not None}
    if "speed" in given:
        try:
            given["speed"] = parse_speed(given["speed"])
        except ValueError as exc:
            parser.error(f"--speed: {exc}")
    try:
        settings = Settings(**given)
    except ValidationError as exc:
        parser.error(_settings_error(parser, exc, given))
    # Settings from the environment skip argparse's choices; check them the same way.
    if settings.preset not in PRESETS:
        parser.error(f"preset must be one of {', '.join(sorted(PRESETS))}, not {settings.preset!r}")
    if settings.log_level not in LOG_LEVELS:
        parser.error(f"log level must be one of {', '.join(LOG_LEVELS)}")
    problems = _plan_problems(parser, settings, given)
    if problems:
        parser.error("; ".join(problems))
    try:
        settings.run_config()  # the cluster's shape: gpus over servers, batch over gpus
    except ValueError as exc:
        parser.error(str(exc))
    problem = check_run_dir(settings.run_dir)
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
    )
    try:
        uvicorn.Server(config).run()
    except KeyboardInterrupt:
        pass  # uvicorn re-raises Ctrl+C after its clean shutdown; that is a normal exit
    return 0
