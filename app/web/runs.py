"""The runs a server holds: the class run and the runs the story's chapters need.

The class run is the one `trainingrun` starts (its id is "class"); nothing but a control on
it, from whoever holds control, ever changes it. A story chapter's run ("one-gpu.dp2": the
story, then the run the chapter names in scenes/stories/<id>.json) is started the first time
a page asks to watch it, with its own worker, record and checkpoints under
`<run dir>/side/<id>/`, and is shared by every page that watches it. A page may also start a
run of its own ("mine.<hex>", `own`): any page, rights or not, with a reset's choices on the
class run's settings, controlled only by the page that holds its key. A run nobody watches
rests after a few seconds; a story's run is stopped after `SIDE_IDLE_S` without a viewer, a
page's own after `OWN_IDLE_S`. A story's run with a recording of exactly its config in
`<run dir>/recordings/` (app/run/recording.py, made by `trainingrun record`, or from the
first `RECORD_STEPS` steps of a heavy run the first time it is watched) is played from it
(app/run/replay.py) instead of computed: the heavy chapters go at a page's pace. At
most `SIDE_RUNS_MAX` story runs and `OWN_RUNS_MAX` own runs (of at most `OWN_GPUS_MAX`
GPUs) run at once; a page asking for more is told why not.

Each run has its own hub of viewers; a page switching runs is handed from one hub to the
other on the same connection (`Hub.hand_over`), so the presenter, who speaks to every page
whatever it watches, keeps its followers (`Runs.viewers`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.engine.config import RunConfig
from app.protocol import CLASS_RUN
from app.run.choice import RunnerOptions
from app.run.history import History
from app.run.recording import Recorder, find_recording, recording_path
from app.run.replay import replay_main
from app.run.runner import Runner
from app.web.hub import Hub, Viewer

log = logging.getLogger("trainingrun.runs")

SIDE_RUNS_MAX = 8  # story runs alive at once (the story needs six)
SIDE_IDLE_S = 300.0  # a story run nobody has watched this long is stopped
OWN_RUNS_MAX = 4  # pages' own runs alive at once
OWN_GPUS_MAX = 64  # the largest cluster a page's own run may have
OWN_IDLE_S = 60.0  # a page's own run nobody has watched this long is stopped
SIDE_REST_S = 2.0  # a side run nobody watches stops stepping after this long
REAP_EVERY_S = 15.0
RECORD_STEPS = 30  # a heavy story run computed live keeps this many steps as its recording
RECORDED_LIVE = "recorded while it was first watched"


class RunError(Exception):
    """A run that cannot be watched: `code` and `message` go back to the page."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class RunEntry:
    id: str
    kind: str  # "class", "attached", "story" or "own"
    label: str
    runner: Any  # app/run/runner.py Runner, or an attached job (app/attached/run.py)
    hub: Hub
    history: History | None = None  # a side run's own record (the class run's is the app's)
    idle_since: float | None = None  # when it was first seen without viewers
    owner_key: str | None = None  # an own run: the key of the page that may control it

    def owned_by(self, key: str | None) -> bool:
        return (
            self.owner_key is not None
            and key is not None
            and secrets.compare_digest(self.owner_key, key)
        )

    def config(self) -> RunConfig | None:
        """The config the run trains with; None for an attached job (its own, not ours)."""
        view = getattr(self.runner, "view", None)
        return view.config if getattr(view, "info", None) is not None else None

    def describe(self) -> dict[str, Any]:
        status = self.runner.status()
        config = self.config()
        config = config.to_dict() if config is not None else {}
        keys = ("gpus", "servers", "n_layer", "experts", "tp", "pp", "ep", "microbatches")
        recording = getattr(self.runner, "recording", None)
        source = "recording" if recording else "live"
        return {
            "id": self.id,
            "kind": self.kind,
            "label": self.label,
            "source": "attached" if self.kind == "attached" else source,
            "recording": recording,
            "run_id": status.run_id,
            "state": status.state,
            "step": status.step,
            "viewers": self.hub.count,
            "config": {k: config[k] for k in keys if k in config},
            "schedule": config.get("schedule"),
        }


# (run id, the class run's settings) -> (config, label) of a side run the server may start,
# or None when there is no such run.
SideRuns = Callable[[str, RunConfig], tuple[RunConfig, str] | None]


class Runs:
    """The class run and the side runs started on demand. Event loop only."""

    def __init__(
        self,
        class_entry: RunEntry,
        *,
        side_runs: SideRuns,
        make_hub: Callable[[], Hub],
        options: RunnerOptions,
        max_side: int = SIDE_RUNS_MAX,
        idle_s: float = SIDE_IDLE_S,
        max_own: int = OWN_RUNS_MAX,
        own_idle_s: float = OWN_IDLE_S,
        clock: Callable[[], float] = time.monotonic,
        recorded: Callable[[str], bool] = lambda run_id: False,
        record_steps: int = RECORD_STEPS,
    ) -> None:
        self.entries: dict[str, RunEntry] = {CLASS_RUN: class_entry}
        self._side_runs = side_runs
        self._make_hub = make_hub
        self._options = options
        self.max_side = max_side
        self.idle_s = idle_s
        self.max_own = max_own
        self.own_idle_s = own_idle_s
        self._clock = clock
        self._recorded = recorded  # the story runs worth a recording (its "recorded" list)
        self.record_steps = record_steps
        self._starting: dict[str, asyncio.Future[RunEntry]] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def class_run(self) -> RunEntry:
        return self.entries[CLASS_RUN]

    def base_config(self) -> RunConfig:
        """What a page's own run starts from: the class run's config now (after any reset),
        or the server's settings when the class run is an attached job."""
        return self.class_run.config() or self._options.config

    def viewers(self) -> list[Viewer]:
        """Every page, whatever run it watches (the presenter speaks to all of them)."""
        return [v for e in list(self.entries.values()) for v in e.hub.viewers()]

    def describe(self) -> list[dict[str, Any]]:
        return [e.describe() for e in self.entries.values()]

    def start_reaper(self) -> None:
        self._reaper = asyncio.ensure_future(self._reap_loop())

    # --- watching --------------------------------------------------------------------------

    async def open(self, run_id: str) -> RunEntry:
        """The run `run_id`, started if it is a side run not running yet. Raises RunError."""
        entry = self.entries.get(run_id)
        if entry is not None:
            return entry
        if self._closing:
            raise RunError("unavailable", "the server is shutting down")
        starting = self._starting.get(run_id)
        if starting is not None:
            return await asyncio.shield(starting)
        side = self._side_runs(run_id, self._options.config)
        if side is None:
            raise RunError("unknown_run", f"this server holds no run {run_id!r}")
        stories = sum(1 for e in self.entries.values() if e.kind == "story")
        if self.max_side == 0:
            raise RunError("no_side_runs", "this server holds no runs beside the class run")
        if stories + len(self._starting) >= self.max_side:
            raise RunError(
                "too_many_runs",
                f"this server runs at most {self.max_side} side runs at once; "
                "try again when one is no longer watched",
            )
        future: asyncio.Future[RunEntry] = asyncio.get_running_loop().create_future()
        self._starting[run_id] = future
        try:
            entry = await self._start(run_id, *side)
        except Exception as exc:
            log.exception("the run %s could not start", run_id)
            error = RunError("unavailable", f"the run {run_id!r} could not start: {exc}")
            future.set_exception(error)
            future.exception()  # retrieved: nobody else may be waiting
            raise error from None
        finally:
            self._starting.pop(run_id, None)
        self.entries[run_id] = entry
        future.set_result(entry)
        return entry

    async def own(self, key: str, config: RunConfig) -> RunEntry:
        """A new run of the page holding `key`, on `config`. Raises RunError past the bounds."""
        if self._closing:
            raise RunError("unavailable", "the server is shutting down")
        if config.gpus > OWN_GPUS_MAX:
            raise RunError(
                "too_big",
                f"a run of your own may have at most {OWN_GPUS_MAX} GPUs "
                f"({config.gpus} asked for): one computer does every GPU's work",
            )
        mine = [e for e in self.entries.values() if e.kind == "own" and not e.owned_by(key)]
        if len(mine) >= self.max_own:
            raise RunError(
                "too_many_runs",
                f"this server runs at most {self.max_own} runs of students' own at once; "
                "try again in a minute, or watch the class run",
            )
        run_id = f"mine.{secrets.token_hex(4)}"
        entry = await self._start(run_id, config, "a run of your own", kind="own", fresh=True)
        entry.owner_key = key
        entry.hub.may_control = lambda v: v.can_control or entry.owned_by(v.key)  # type: ignore[method-assign]
        self.entries[run_id] = entry
        return entry

    async def retire(self, entry: RunEntry) -> None:
        """Stop an own run its page has left for a new one (unless others watch it)."""
        if entry.kind == "own" and entry.id in self.entries and not entry.hub.count:
            await self._stop(entry.id)

    async def _start(
        self,
        run_id: str,
        config: RunConfig,
        label: str,
        *,
        kind: str = "story",
        fresh: bool = False,
    ) -> RunEntry:
        # A story's run recorded on exactly this config is played, not computed again.
        shape = config.to_dict()
        if kind == "story" and find_recording(self._options.run_dir, run_id, shape):
            recorded = recording_path(self._options.run_dir, run_id, shape)
            try:
                return await self._start_runner(run_id, config, label, kind, fresh, recorded)
            except Exception as exc:
                # A recording whose head reads but whose steps do not: set aside, computed live.
                aside = recorded.with_name(recorded.name + ".damaged")
                with contextlib.suppress(OSError):
                    recorded.replace(aside)
                log.error(
                    "the recording of %s could not be played (%s); set aside as %s, "
                    "the run is computed instead",
                    run_id,
                    exc,
                    aside.name,
                )
        return await self._start_runner(run_id, config, label, kind, fresh, None)

    async def _start_runner(
        self,
        run_id: str,
        config: RunConfig,
        label: str,
        kind: str,
        fresh: bool,
        recorded: Path | None,
    ) -> RunEntry:
        o = self._options
        # A played run keeps its own record: its steps never mix with a computed run's.
        run_dir = o.run_dir / "side" / (run_id if recorded is None else f"{run_id}.played")
        run_dir.mkdir(parents=True, exist_ok=True)
        options = dataclasses.replace(
            o,
            run_dir=run_dir,
            config=config,
            explicit=frozenset(),
            fresh=fresh,
            paused=False,
            rest_after_s=SIDE_REST_S,
        )
        history = History(run_dir / "runs.sqlite")
        hub = self._make_hub()
        if recorded is not None:
            play = functools.partial(replay_main, str(recorded))
            runner = Runner(options, hub, history, worker_target=play)
        else:
            runner = Runner(options, hub, history)
            if kind == "story" and self._recorded(run_id):
                # The first time a heavy run is watched it is computed; its first steps
                # become its recording, played from then on.
                path = recording_path(o.run_dir, run_id, config.to_dict())
                runner.recorder = Recorder(path, run_id, self.record_steps, RECORDED_LIVE)
        runner.view.watching = run_id
        try:
            await runner.start()
        except BaseException:
            with contextlib.suppress(Exception):
                await runner.stop()
            history.close()
            raise
        how = "played from its recording" if recorded is not None else label
        log.info("started the side run %s (%s)", run_id, how)
        return RunEntry(run_id, kind, label, runner, hub, history, idle_since=self._clock())

    # --- stopping ------------------------------------------------------------------------

    async def _reap_loop(self) -> None:
        while not self._closing:
            await asyncio.sleep(REAP_EVERY_S)
            await self.reap()

    async def reap(self) -> list[str]:
        """Stop the side runs nobody has watched for `idle_s`; their ids."""
        now = self._clock()
        gone = []
        for run_id, e in list(self.entries.items()):
            if run_id == CLASS_RUN:
                continue
            if e.hub.count:
                e.idle_since = None
            elif e.idle_since is None:
                e.idle_since = now  # first seen without viewers
            elif now - e.idle_since >= (self.own_idle_s if e.kind == "own" else self.idle_s):
                gone.append(run_id)
                await self._stop(run_id)
        return gone

    async def _stop(self, run_id: str) -> None:
        e = self.entries.pop(run_id)
        await e.hub.close_all()
        await e.runner.stop()
        if e.history is not None:
            e.history.close()
        log.info("stopped the side run %s (nobody watched it)", run_id)

    async def close(self) -> None:
        """Stop every side run (the class run is the app's to stop)."""
        self._closing = True
        if self._reaper is not None:
            self._reaper.cancel()
        side = [r for r in self.entries if r != CLASS_RUN]
        # Together: each saves a final checkpoint in its own worker process.
        await asyncio.gather(*(self._stop(r) for r in side), return_exceptions=True)
