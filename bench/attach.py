"""What reporting costs a real job: steps/s of examples/ddp_tiny.py under torchrun (CPU ranks
over gloo) without --report, reporting to a live `trainingrun watch` server, reporting to a
server that is not there at all, and with the server killed mid-run. Prints each figure, its
ratio to the unreported job, and the share of the job's time reporting itself took (its own
time in the training loop plus its sender thread's CPU, as the reporter measures them). Not a
timed test: on a busy machine the steps/s move more than reporting costs.

Run: python bench/attach.py [--ranks 4] [--steps 600] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "ddp_tiny.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def watch_server(run_dir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [sys.executable, "-m", "app.cli", "watch", "--port", str(port)]
    cmd += ["--run-dir", str(run_dir), "--log-level", "warning"]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(url + "/api/health", timeout=1).read()
            return proc, url
        except OSError:
            time.sleep(0.2)
    raise SystemExit("the watch server did not come up")


def kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def job(
    ranks: int, steps: int, url: str | None, step_log: Path | None = None
) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks)]
    cmd += ["--master-addr", "127.0.0.1", "--master-port", str(free_port())]
    cmd += [str(EXAMPLE), "--steps", str(steps)]
    if url:
        cmd += ["--report", url]
    if step_log:
        cmd += ["--step-log", str(step_log)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )


SHARES: dict[str, list[float]] = {}  # what reporting cost rank 0, as a share of its time


def rate(proc: subprocess.Popen[str], mode: str = "") -> float:
    """The job's own steps/s (its training loop, not torchrun's start-up)."""
    out, _ = proc.communicate(timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"the job failed ({proc.returncode})")
    done = json.loads(out.strip().splitlines()[-1])
    SHARES.setdefault(mode, []).append(done["reporter_s"] / done["seconds"])
    return float(done["steps_per_s"])


def killed_mid_run(ranks: int, steps: int, tmp: Path) -> tuple[float, float]:
    """steps/s of rank 0 in the third of the run before the kill and the third after it."""
    server, url = watch_server(tmp / "killed")
    log = tmp / "steps.jsonl"
    proc = job(ranks, steps, url, log)
    try:
        while True:
            rows = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
            if rows and rows[-1]["step"] >= steps // 3:
                break
            if proc.poll() is not None:
                raise SystemExit("the job ended before the kill")
            time.sleep(0.05)
    finally:
        kill(server)
    rate(proc)
    rows = [json.loads(x) for x in log.read_text().splitlines()]
    at = next(i for i, r in enumerate(rows) if r["step"] >= steps // 3)
    n = min(at - 1, len(rows) - at - 1, steps // 3)
    before = n / (rows[at]["t"] - rows[at - n]["t"])
    after = n / (rows[at + n]["t"] - rows[at]["t"])
    return before, after


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args()
    figures: dict[str, list[float]] = {"off": [], "live": [], "dead": []}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for i in range(args.repeat):
            # Each round runs the three in a different order, so drift in the machine's load
            # does not favour one of them.
            order = ["off", "live", "dead"][i % 3 :] + ["off", "live", "dead"][: i % 3]
            for mode in order:
                server = None
                url = None
                if mode == "live":
                    server, url = watch_server(tmp / f"live-{i}")
                elif mode == "dead":
                    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
                try:
                    figures[mode].append(rate(job(args.ranks, args.steps, url), mode))
                finally:
                    if server is not None:
                        kill(server)
                print(f"  round {i + 1} {mode:5s} {figures[mode][-1]:8.1f} steps/s", flush=True)
        before, after = killed_mid_run(args.ranks, args.steps, tmp)
    off = statistics.median(figures["off"])
    print(f"\nexamples/ddp_tiny.py, {args.ranks} CPU ranks (gloo), {args.steps} steps, "
          f"median of {args.repeat}:")  # fmt: skip
    print(f"  without --report                {off:8.1f} steps/s")
    for mode, words in (("live", "reporting to a live server"), ("dead", "server never there")):
        v = statistics.median(figures[mode])
        share = statistics.median(SHARES[mode])
        print(f"  {words:31s} {v:8.1f} steps/s   ratio {v / off:.3f}   reporting {share:.3%}")
    print(f"  server killed mid-run: {before:.1f} steps/s before, {after:.1f} after   "
          f"ratio {after / before:.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
