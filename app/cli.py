"""The `trainingrun` command: `serve` (the default), `train` (headless) and `memory`."""

from __future__ import annotations

import os
import sys

# The model's matrices are small: BLAS threads cost more in hand-offs than they gain, and on a
# small machine they fight the server for cores. Set before numpy is first imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and not argv[0].startswith("-") else "serve"
    rest = argv[1:] if argv and argv[0] == command else argv
    if command == "serve":
        from app.server import serve_main

        return serve_main(rest)
    if command == "train":
        from app.train_cli import train_main

        return train_main(rest)
    if command == "memory":
        from app.labs.cli import memory_main

        return memory_main(rest)
    print(f"trainingrun: unknown command {command!r} (try serve, train or memory)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
