"""The `trainingrun` command: picks the command (`serve`, the default; `watch`, `train`,
`record`, `climb`, `memory`, `estimate`) and hands it the rest of the command line. Each command
is a module of its own beside this one, imported only when it runs."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable

from app.cli.parser import PROG  # argparse only: numpy is not imported yet

# The model's matrices are small: BLAS threads cost more in hand-offs than they gain, and on a
# small machine they fight the server for cores. Set before numpy is first imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def _entry(name: str) -> Callable[[list[str]], int]:
    """A command's entry point: `{name}_main` of app/cli/{name}.py, imported when it runs."""

    def run(argv: list[str]) -> int:
        module = importlib.import_module(f"app.cli.{name}")
        main: Callable[[list[str]], int] = getattr(module, f"{name}_main")
        return main(argv)

    return run


# name -> (one line for `trainingrun --help`, entry point); the first is the default.
COMMANDS: dict[str, tuple[str, Callable[[list[str]], int]]] = {
    "serve": ("serve the live training run on a web page (the default)", _entry("serve")),
    "watch": ("show a real PyTorch distributed job that reports to this server", _entry("watch")),
    "train": ("train headless: a progress bar, or JSON lines with --json", _entry("train")),
    "record": (
        "train the story's heavy runs now and keep them, to play at a page's pace",
        _entry("record"),
    ),
    "climb": (
        "train the tiny model 100,000 steps, a look at every tenfold, for the story",
        _entry("climb"),
    ),
    "memory": ("how much GPU memory a model needs to serve and to train", _entry("memory")),
    "estimate": (
        "time, GPU-hours, energy, cost and interruptions of a whole run",
        _entry("estimate"),
    ),
}


def help_text() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        f"usage: {PROG} [COMMAND] [OPTIONS]",
        "",
        "A real, small training run on a simulated GPU cluster, drawn live in the browser.",
        "",
        "commands:",
        *(f"  {name.ljust(width)}  {summary}" for name, (summary, _) in COMMANDS.items()),
        "",
        f"With no command, or with options only (e.g. `{PROG} --port 9000`), {PROG} serves.",
        f"`{PROG} COMMAND --help` lists a command's options.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(help_text())
        return 0
    if argv and not argv[0].startswith("-"):
        command, rest = argv[0], argv[1:]
    else:
        command, rest = "serve", argv
    if command not in COMMANDS:
        names = ", ".join(COMMANDS)
        print(f"{PROG}: unknown command {command!r} (try {names}, or --help)", file=sys.stderr)
        return 2
    return COMMANDS[command][1](rest)
