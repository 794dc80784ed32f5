"""The "One GPU" story: its chapters as data (every run one the engine can plan), the route
that serves them with the memory lab's full-size figures and the side copies' drift, and a
real browser walking every chapter forward and back on a live server.

The walk checks, at every chapter: no console errors, no caption with an unfilled
placeholder, the chapter's run is the live one (window.trainingRun.plan); and the chapters
that make a point: the out-of-memory walls overflow, the expert split lowers memory per GPU,
the "what if" copies differ while the averaged ones are equal, and back-to-back microbatches
shrink the measured bubble. With $STORY_SHOTS set, the walk runs at 1920x1080 and writes a
screenshot of every chapter there, to look at; without it, it runs at the small size the
browser tests draw at and writes none (no check reads them).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from covered import PIECES_HIDDEN_JS
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pageclock import page_clock
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from app.engine.config import RunConfig
from app.engine.plan import plan_problems
from app.engine.trainer import Trainer
from app.paths import SCENES_DIR
from app.routes import story as story_routes

ROOT = Path(__file__).resolve().parents[2]

STORY = json.loads((SCENES_DIR / "stories" / "one-gpu.json").read_text())
CLIMB = json.loads((SCENES_DIR / "climb" / f"{STORY['climb']}.json").read_text())
# The seed's chapters, in its order.
SEED_ORDER = [
    "field", "cores", "walls", "layers", "next-token", "guess", "gradients", "step",
    "microbatches", "train", "slow", "new-run", "second-gpu", "what-if", "together", "bigger",
    "oom", "inside-layer", "split", "tokens-travel", "stages", "hand-up", "back-to-back",
    "deeper", "wider", "one-step", "copies", "again", "gpu-1",
]  # fmt: skip
# The class run; the story's chapters watch runs of their own (app/web/runs.py), which take
# its speed and checkpoints. The class run rests a second after its last viewer leaves for
# the story, so the machine trains only what the page watches.
SERVE = (
    "--gpus", "1", "--servers", "1", "--speed", "max", "--checkpoint-every", "0",
    "--rest-after", "1",
)  # fmt: skip
WAIT_MS = 240_000  # a reset plus a step of the 64-GPU team, on a busy 2-core machine


# ---- the chapters as data, and the route --------------------------------------------------


def test_chapters_follow_the_seed_and_every_module_exists() -> None:
    assert [c["id"] for c in STORY["chapters"]] == SEED_ORDER
    root = Path(story_routes.__file__).resolve().parents[2] / "static" / "js" / "story"
    for ch in STORY["chapters"]:
        if ch.get("module"):
            assert (root / f"{ch['module']}.js").is_file(), ch["module"]
    # The seed's buttons, each a chapter's "do it".
    labels = [c["do"]["label"] for c in STORY["chapters"] if c.get("do")]
    assert labels == [
        "Train it to step 1,000", "Copy the model onto a second GPU", "See if four more layers fit",
        "Give each GPU half the experts", "Run it for many more steps",
    ]  # fmt: skip


def test_every_run_is_a_plan_the_engine_accepts() -> None:
    runs = STORY["runs"]
    want = {"one": 1, "dp2": 2, "ep2": 2, "pp4": 4, "pp4mb": 4, "team64": 64}
    assert {k: r["gpus"] for k, r in runs.items()} == want
    assert runs["team64"]["pp"] == 8 and runs["team64"]["ep"] == 8
    for run in runs.values():
        cfg = RunConfig().with_(**run, batch_size=64)
        fields = ("gpus", "servers", "n_layer", "n_head", "n_embd", "batch_size", "tp", "pp")
        fields += ("ep", "microbatches", "schedule", "experts", "top_k")
        assert plan_problems(**{f: getattr(cfg, f) for f in fields}) == []


@pytest.fixture(scope="module")
def client() -> TestClient:
    app = FastAPI()
    app.include_router(story_routes.router)
    return TestClient(app)


def test_story_route_serves_chapters_and_full_size_figures(client: TestClient) -> None:
    r = client.get("/api/stories/one-gpu")
    assert r.status_code == 200
    body = r.json()
    assert len(body["chapters"]) == len(SEED_ORDER)
    f = body["figures"]
    assert f["bytes_per_weight"] == 18 and f["weight_grad_bytes"] + f["optimizer_bytes"] == 18
    assert f["layers4"]["fraction"] < 1 < f["layers8"]["fraction"]  # four fit, eight do not
    assert f["layers8"]["bytes"] == pytest.approx(18 * f["layers8"]["params"])
    assert 0.5 < f["expert_share"] < 1  # most of a layer's weights are in its experts
    # The climax's long run comes with the story, as shipped.
    assert body["climb"]["decades"] == CLIMB["decades"] and body["climb"]["steps"] >= 100_000


def test_story_route_refuses_bad_input(client: TestClient) -> None:
    assert client.get("/api/stories/two-gpus").status_code == 404
    assert client.get("/api/stories/one-gpu/drift?steps=0").status_code == 422
    assert client.get("/api/stories/one-gpu/drift?steps=99").status_code == 422
    assert client.get("/api/stories/one-gpu/first-step/nope").status_code == 404
    assert client.get("/api/stories/one-gpu/first-step/Bad%20Run").status_code == 422
    heavy = client.get(f"/api/stories/one-gpu/first-step/{STORY['recorded'][0]}")
    assert heavy.status_code == 404 and "recorded" in heavy.json()["detail"]


def test_a_runs_first_step_is_trained_on_a_side_copy(client: TestClient, tmp_path) -> None:
    """What a later chapter quotes of an earlier chapter's run it never watched: that run's
    first step, really trained with the settings the server gives it, and what the run
    itself shows later: the pipeline's bubble and step time (pp4), GPU 1's memory (dp2)."""
    firsts = {}
    for key, quoted in (("pp4", ("bubble", "sim_step")), ("dp2", ("memory", "sim_step"))):
        got = firsts[key] = client.get(f"/api/stories/one-gpu/first-step/{key}").json()
        config, _ = story_routes.side_run(f"one-gpu.{key}", RunConfig())
        trainer = Trainer(config.with_(checkpoint_every=0), tmp_path / key)
        try:
            trainer.train_step()
            later = trainer.train_step()
        finally:
            trainer.close()
        shown = {
            "bubble": later.plan_stats.bubble_fraction,
            "sim_step": later.sim_step_s,
            "memory": later.memory[0].total,
        }
        assert got["run"] == key and got["step"] == 1
        assert got["tokens_per_gpu"] == later.tokens / config.dp
        for name in quoted:
            assert got[name] == pytest.approx(shown[name], rel=1e-3), (key, name)
    assert 0.3 < firsts["pp4"]["bubble"] < 0.7  # four stages, one microbatch: half waiting


def test_a_broken_story_is_named(tmp_path, monkeypatch) -> None:
    bad = json.loads(json.dumps(STORY))
    bad["runs"]["ep2"]["ep"] = 3  # 3 does not divide 16 experts nor 2 copies
    (tmp_path / "one-gpu.json").write_text(json.dumps(bad))
    monkeypatch.setattr(story_routes, "STORIES_DIR", tmp_path)
    with pytest.raises(ValueError, match="run 'ep2'"):
        story_routes.load_story("one-gpu")


def test_a_story_whose_climb_is_missing_is_named(tmp_path, monkeypatch) -> None:
    (tmp_path / "one-gpu.json").write_text(json.dumps({**STORY, "climb": "gone"}))
    monkeypatch.setattr(story_routes, "STORIES_DIR", tmp_path)
    with pytest.raises(ValueError, match="climb 'gone'"):
        story_routes.load_story("one-gpu")


# ---- the walk, in a real browser ----------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def team_recording(tmp_path_factory):
    """The run folder the walk serves, and `recorded()`: the 64-GPU team's chapters play a
    recording of a real run (`trainingrun record`, one step: the walk needs their plan and a
    step). It is made while the module's other tests run (the walk comes last), so the walk
    reads chapters instead of waiting on it; `recorded()` waits for it if it is not done."""
    run_dir = tmp_path_factory.mktemp("story") / "run"
    record = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "record", "one-gpu.team64", "--steps", "1",
         "--run-dir", str(run_dir), *SERVE],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip

    def recorded() -> None:
        _out, err = record.communicate(timeout=240)
        assert record.returncode == 0, err

    try:
        yield run_dir, recorded
    finally:
        record.kill()
        record.communicate()


@pytest.fixture
def story_server(team_recording, web):
    """The walk's server, on the folder the team's recording is made in."""
    run_dir, recorded = team_recording
    srv = web.ServerProcess(run_dir, *SERVE)
    try:
        srv.start(fresh=True, timeout=120)
        yield srv, recorded
    finally:
        # The walk checks the chapters, not the shutdown: not waited for.
        srv.kill()


def shots_dir() -> Path | None:
    """Where to write the chapters' screenshots, or None: only when someone asked to see them
    (STORY_SHOTS=docs/img/story, at STORY_SHOTS_SIZE=1920x1080 or 1024x768)."""
    if not os.environ.get("STORY_SHOTS"):
        return None
    out = Path(os.environ["STORY_SHOTS"])
    out.mkdir(parents=True, exist_ok=True)
    return out


def shots_size() -> dict[str, int]:
    w, h = os.environ.get("STORY_SHOTS_SIZE", "1920x1080").split("x")
    return {"width": int(w), "height": int(h)}


def story(page) -> dict:
    return page.evaluate("window.trainingRun.story")


def plan_is(plan: dict, cfg_gpus: int, run: dict) -> bool:
    keys = ("tp", "pp", "ep", "microbatches", "experts", "top_k")
    return cfg_gpus == run["gpus"] and all(plan[k] == run[k] for k in keys)


PAGE_STATE = """(() => { const r = window.trainingRun, s = r.story;
  return { chapter: s.chapter, ready: s.ready, liveRun: s.liveRun, note: s.note,
    source: s.source, caption: s.caption, watching: r.watching, runId: r.runId,
    step: r.step, stepShown: r.stepShown, serverErrors: r.serverErrors }; })()"""


def wait_ready(page, n: int, watch, srv, web) -> None:
    """Chapter n shown and ready; on a timeout, the failure says what the page held (its
    run, its last step, its note), the server's runs and the end of its log."""
    try:
        page.wait_for_function(f"window.trainingRun.story.chapter === {n}")
        page.wait_for_function("window.trainingRun.story.ready", timeout=WAIT_MS)
    except PlaywrightTimeout:
        held = page.evaluate(PAGE_STATE)
        runs = web.get_json(f"{srv.url}/api/runs")
        pytest.fail(
            f"chapter {n} never got ready: the page held {held}; page errors {watch.errors};"
            f" the server's runs {runs}; its log ends {srv.log()[-3000:]}"
        )


# How the card begins the line that says where a recorded run's steps come from, in each
# language: the words before the first number of each of its two lines.
RECORDED = (
    "Played from a recording of a real run of this model"
    " (steps {first}–{last}, recorded {date}), not computed now."
)
RECORDING_ENDS = "The recording of this real run ends at step {last}."


def source_starts(lang: str) -> tuple[str, str]:
    words = {}
    if lang != "en":
        words = json.loads((SCENES_DIR / "locales" / lang / "story.json").read_text())
    return tuple(words.get(k, k).split("{")[0] for k in (RECORDED, RECORDING_ENDS))


def check_chapter(page, n: int, watch, srv, web, lang: str = "en") -> dict:
    wait_ready(page, n, watch, srv, web)
    s = story(page)
    ch = STORY["chapters"][n - 1]
    assert s["chapterId"] == ch["id"]
    for text in (s["caption"], s["title"]):
        assert not re.search(r"\{\w+\}", text), text
        # '…' waits for a number, a lone '–' is one the page does not know (ranges like
        # "1–8" are fine).
        assert "…" not in text and "NaN" not in text, text
        assert not re.search(r"(?<!\d)–(?!\d)", text), text
    run = STORY["runs"][ch["run"]]
    assert plan_is(
        page.evaluate("window.trainingRun.plan"), page.evaluate("window.trainingRun.gpus"), run
    )
    assert s["liveRun"] == ch["run"]
    # The team's chapters play the recording made for the walk, and say so; the others
    # compute their runs live and say nothing of it.
    if ch["run"] in STORY["recorded"]:
        page.wait_for_function("window.trainingRun.story.source !== ''")
        s = story(page)
        assert s["source"].startswith(source_starts(lang)), s["source"]
    else:
        assert s["source"] == "", s["source"]
    assert watch.errors == [], watch.errors
    return s


def test_again_climbs_to_a_million_on_a_real_long_run(browser, tmp_path, web) -> None:
    """Chapter 28 with motion, on a page clock four times real time: the counter climbs on a
    log scale; at each tenfold the field takes that tenfold's shade and the model's writing
    at that step appears; past the steps really trained the field keeps the last shade, the
    counter says it goes on alone. "Run it for many more steps" climbs again from the start.
    The page that is watched skips the WebGL draw, so every frame updates the field however
    busy the machine; a second page, with reduced motion, shows the end for the pictures.
    The server holds no story runs: the climb is the chapter's own, not the team's."""
    srv = web.ServerProcess(tmp_path / "run", *SERVE, "--side-runs", "0", "--paused")
    srv.start(fresh=True, timeout=120)
    ctx = browser.new_context(viewport={"width": 1024, "height": 768})
    ctx.add_init_script(page_clock(4.0))
    shots = browser.new_context(viewport={"width": 1024, "height": 768}, reduced_motion="reduce")
    try:
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{srv.url}/?story=one-gpu&chapter=28&draw=0")
        page.wait_for_function(
            "window.trainingRun && window.trainingRun.story.figure"
            " && window.trainingRun.story.figure.step > 0",
            timeout=60_000,
        )
        trained = CLIMB["steps"]
        # "Run it for many more steps" climbs again from the start, now that the field is up.
        page.wait_for_function("window.trainingRun.field.on")
        page.keyboard.press(" ")
        page.wait_for_function("window.trainingRun.story.figure.step < 10")
        seen: list[dict] = []
        for _ in range(2000):  # bounded: the climb takes about 3.5 s at this clock
            s = page.evaluate(
                "({ c: window.trainingRun.story.figure, f: window.trainingRun.field.decade })"
            )
            seen.append(s)
            if s["c"]["done"]:
                break
        assert seen[-1]["c"]["done"], seen[-1]
        steps = [s["c"]["step"] for s in seen]
        assert steps == sorted(steps) and steps[-1] == 1_000_000
        for s in seen:
            c = s["c"]
            below = [d for d in CLIMB["decades"] if d["step"] <= c["step"]]
            assert [x["writing"] for x in c["lines"]] == [d["writing"] for d in below]
            assert c["decade"] == len(str(min(c["step"], trained))) - 1
            assert c["past"] == (c["step"] > trained)
        # The field took every shade the run really reached, in order, and no other: from
        # the frame the restarted climb is first drawn (before it, no shade: -1).
        shades = list(itertools.dropwhile(lambda f: f == -1, (s["f"] for s in seen)))
        assert sorted(set(shades)) == list(range(len(CLIMB["decades"]))), shades
        assert shades == sorted(shades)
        page.wait_for_function("window.trainingRun.field.decade === 5")
        assert "Trained for real to step 100,000" in page.inner_text("#story-figure")
        assert errors == [], errors

        look = shots.new_page()
        look.goto(f"{srv.url}/?story=one-gpu&chapter=28")
        look.wait_for_function(
            "window.trainingRun && window.trainingRun.story.figure"
            " && window.trainingRun.story.figure.done && window.trainingRun.field.decade === 5"
            " && window.trainingRun.frames > 0",
            timeout=60_000,
        )
        web.landed(look, timeout=60_000)
        web.screenshot(look, "story_again_1024")
        look.set_viewport_size(web.FULL_HD)
        web.landed(look, timeout=60_000)
        web.screenshot(look, "story_again_1920")
    finally:
        ctx.close()
        shots.close()
        srv.stop()


def test_a_viewer_without_rights_watches_the_chapters_run(browser, tmp_path, web) -> None:
    """A viewer without the token opens a chapter: the page watches the chapter's own run
    (the class run is not touched), and "do it" is refused with a note that stays."""
    token = "story-presenter-7"
    srv = web.ServerProcess(tmp_path / "run", "--gpus", "1", "--servers", "1", "--public",
                            "--token", token, "--speed", "max", "--rest-after", "0")  # fmt: skip
    srv.start(fresh=True, timeout=120)
    try:
        class_run = web.get_json(f"{srv.url}/api/run")["run_id"]
        watch = web.open_page(
            browser, srv.url, "?story=one-gpu&chapter=13", viewport={"width": 1024, "height": 768}
        )
        page = watch.page
        page.wait_for_function("window.trainingRun.story.ready", timeout=120_000)
        s = story(page)
        assert s["run"] == "dp2" and s["liveRun"] == "dp2" and s["note"] == ""
        assert page.evaluate("window.trainingRun.watching") == "one-gpu.dp2"
        assert page.evaluate("window.trainingRun.gpus") == 2
        run_id = page.evaluate("window.trainingRun.runId")
        assert run_id != class_run
        pressed_at = page.evaluate("window.trainingRun.step")
        page.keyboard.press(" ")  # "Copy the model onto a second GPU": not this viewer's to do
        page.wait_for_function("window.trainingRun.story.note.includes('Only the presenter')")
        # No reset comes while the run goes on a few steps (each re-renders the chapter), and
        # the refusal stays said.
        page.wait_for_function(f"window.trainingRun.step >= {pressed_at + 5}")
        assert page.evaluate("window.trainingRun.runId") == run_id
        assert "Only the presenter" in story(page)["note"]
        status = web.get_json(f"{srv.url}/api/run")
        assert status["run_id"] == class_run
        assert watch.errors == [], watch.errors
        if shots := shots_dir():
            page.screenshot(path=str(shots / "viewer-1024.png"), timeout=120_000)
    finally:
        srv.stop()


def test_a_page_in_the_story_leaves_the_class_run_and_its_pages_alone(
    browser, tmp_path, web
) -> None:
    """Two pages: one on the class run, one (with the rights) walking into the story. The
    class page keeps its run, its plan and its hello; the story page watches the chapter's
    run, and leaving the story brings it back to the class run, which went on meanwhile."""
    srv = web.ServerProcess(tmp_path / "run", "--gpus", "8", "--servers", "2", "--speed", "max",
                            "--checkpoint-every", "0", "--rest-after", "0")  # fmt: skip
    srv.start(fresh=True, timeout=120)
    try:
        ctx = browser.new_context(viewport={"width": 960, "height": 540})
        hellos: list[str] = []  # every hello the class page is sent

        def on_socket(ws) -> None:
            ws.on("framereceived", lambda f: hellos.append(f) if '"type":"hello"' in f else None)

        room = ctx.new_page()
        room.on("websocket", on_socket)
        room.goto(f"{srv.url}/?draw=0")
        room.wait_for_function("window.trainingRun && window.trainingRun.step > 0", timeout=120_000)
        class_run = room.evaluate("window.trainingRun.runId")
        assert len(hellos) == 1
        reader = web.open_page(browser, srv.url, "?draw=0&story=one-gpu&chapter=13")
        page = reader.page
        page.wait_for_function("window.trainingRun.story.ready", timeout=120_000)
        assert page.evaluate("window.trainingRun.watching") == "one-gpu.dp2"
        assert page.evaluate("window.trainingRun.gpus") == 2
        page.keyboard.press("PageDown")  # chapter 14, the same run: no new ask
        page.keyboard.press("PageDown")
        page.keyboard.press("PageDown")
        page.keyboard.press("PageDown")
        page.keyboard.press("PageDown")
        page.keyboard.press("PageDown")  # chapter 19: the expert split, its own run
        page.wait_for_function(
            "window.trainingRun.story.chapter === 19 && window.trainingRun.story.ready",
            timeout=120_000,
        )
        assert page.evaluate("window.trainingRun.watching") == "one-gpu.ep2"
        runs = {r["id"]: r for r in web.get_json(f"{srv.url}/api/runs")["runs"]}
        assert set(runs) >= {"class", "one-gpu.dp2", "one-gpu.ep2"}
        assert runs["class"]["run_id"] == class_run and runs["class"]["config"]["gpus"] == 8
        # The class page: the same run, the same eight GPUs, no hello since, still stepping.
        at = room.evaluate("window.trainingRun.step")
        room.wait_for_function(f"window.trainingRun.step > {at}")
        assert room.evaluate("window.trainingRun.runId") == class_run
        assert room.evaluate("window.trainingRun.gpus") == 8
        assert len(hellos) == 1
        # Leaving the story: back on the class run.
        page.keyboard.press("Escape")
        page.wait_for_function(
            f"window.trainingRun.runId === {class_run!r} && window.trainingRun.gpus === 8"
        )
        assert page.evaluate("window.trainingRun.watching") == "class"
        assert reader.errors == [], reader.errors
        ctx.close()
    finally:
        srv.stop()


# Every piece of GPU 1's close-up, as the test hook names it.
CLOSE_UP = {"gpu": 1, "compute": 1, "strip": 1, "wall": 2, "capacity": 8, "lid": 1}


def _pieces(page) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for p in page.evaluate("window.trainingRun.figure"):
        out.setdefault(p["name"], []).append(p["rect"])
    return out


def _heights(page) -> dict[str, list[tuple[float, float]]]:
    """Each piece's bottom and top in the scene (world units, y up)."""
    out: dict[str, list[tuple[float, float]]] = {}
    for p in page.evaluate("window.trainingRun.figure"):
        out.setdefault(p["name"], []).append((p["box"]["min"][1], p["box"]["max"][1]))
    return out


def test_gpu_one_opens_up_close_in_the_scene(page_at, web) -> None:
    """Chapters 2 and 3 draw GPU 1 large in the scene: the camera flies in from the field
    (a flight, not a cut); its compute block with a strip of cores, two memory walls with a
    tick at each quarter and a lid, each piece on screen and clear of the story card. In
    chapter 2 the lid is shut; in chapter 3 it lifts, the walls fill to GPU 1's live memory
    account and the strip lights with the work of the step playing. In chapter 4 the GPU
    stays open and four layers drop in as slabs between the walls, one by one, the walls
    filling with each to near the top tick, hairlines over the top slab for the layers a
    real model adds. Chapter 5 keeps them, with the batch as four trays of text at the GPU's
    door: the top one the live probe's prompt, its tokens entering the door as a step
    begins, the others the texts the live step trained on."""
    watch = page_at("?story=one-gpu&chapter=1", viewport={"width": 1024, "height": 768})
    page = watch.page
    page.wait_for_function(
        "window.trainingRun.story.chapter === 1 && window.trainingRun.story.ready"
    )
    assert page.evaluate("window.trainingRun.figure") == []
    page.keyboard.press("PageDown")
    page.wait_for_function("window.trainingRun.cameraFlying === true")
    page.wait_for_function(
        "window.trainingRun.figure.length > 0 && !window.trainingRun.cameraFlying"
    )
    shut = _pieces(page)
    assert {k: len(v) for k, v in shut.items()} == CLOSE_UP
    assert story(page)["figure"]["open"] == 0
    card = page.evaluate(
        "(() => { const r = document.querySelector('.story-box').getBoundingClientRect();"
        " return { left: r.left, top: r.top, right: r.right, bottom: r.bottom }; })()"
    )
    stage = page.evaluate(
        "(() => { const r = document.getElementById('stage').getBoundingClientRect();"
        " return { left: r.left, top: r.top, right: r.right, bottom: r.bottom }; })()"
    )
    for name in ("gpu", "compute", "strip", "wall"):
        for r in shut[name]:
            assert r["left"] >= stage["left"] - 1 and r["right"] <= stage["right"] + 1, (name, r)
            cut = r["left"] < card["right"] and card["left"] < r["right"]
            assert not (cut and r["top"] < card["bottom"] and card["top"] < r["bottom"]), (name, r)
    # No part's label is left on top of the close-up.
    assert page.evaluate("document.querySelectorAll('#labels .label:not(.off)').length") == 0

    page.keyboard.press("PageDown")
    page.wait_for_function(
        "window.trainingRun.story.chapter === 3 && window.trainingRun.story.figure"
        " && window.trainingRun.story.figure.open === 1"
    )
    lifted = _pieces(page)
    assert lifted["lid"][0]["top"] < shut["lid"][0]["top"] - 10, (lifted["lid"], shut["lid"])
    # The walls hold GPU 1's memory to scale, and the strip lights with the step's work.
    # The strip's colour is the kind of GPU 1's work at a moment of the live step's trace
    # (read in one go: the next step may bring other kinds, a checkpoint's among them).
    page.wait_for_function(
        "(() => { const r = window.trainingRun, lit = r.story.figure.lit;"
        " return lit !== null && r.stepTraceKinds.includes(lit); })()",
        timeout=60_000,
    )
    fig = story(page)["figure"]
    # The card's wall and the scene's walls read the same account: a sliver of 80 GB.
    card_total = float(page.evaluate("document.querySelector('.sf-wall').dataset.total"))
    assert 0 < fig["memory"] < 0.01
    assert fig["memory"] == pytest.approx(card_total, rel=0.05)
    web.screenshot(page, "story_gpu_open_1024")

    # Chapter 4: the layers drop in, one at a time, stacked up from the compute block.
    page.keyboard.press("PageDown")
    page.wait_for_function(
        "window.trainingRun.story.chapter === 4 && window.trainingRun.story.figure"
        " && window.trainingRun.story.figure.layers >= 1"
    )
    seen = page.evaluate("window.trainingRun.story.figure.layers")
    assert seen < 4, "the slabs drop in one by one, not all at once"
    page.wait_for_function(
        "window.trainingRun.story.figure.landed === 4 && !window.trainingRun.cameraFlying"
    )
    stacked = _pieces(page)
    assert len(stacked["slab"]) == 4 and len(stacked["more"]) == 3, stacked.keys()
    tops = [r["top"] for r in stacked["slab"]]
    assert tops == sorted(tops, reverse=True), "each slab lands on the one below"
    compute = stacked["compute"][0]
    assert all(r["bottom"] <= compute["bottom"] for r in stacked["slab"]), stacked["slab"]
    assert max(r["top"] for r in stacked["more"]) < min(tops), "hairlines above the top slab"
    # The walls hold the four full-size layers: most of the GPU, not the live sliver.
    assert 0.5 < story(page)["figure"]["memory"] <= 1, story(page)["figure"]
    web.screenshot(page, "story_gpu_layers_1024")

    # Chapter 5: the layers stay in place, and the batch waits on four trays at the GPU's
    # door, the top one the prompt the live probe asks about, in the model's own words.
    page.keyboard.press("PageDown")
    page.wait_for_function(
        "window.trainingRun.story.chapter === 5 && window.trainingRun.story.figure"
        " && window.trainingRun.story.figure.batch"
    )
    page.wait_for_function("window.trainingRun.story.figure.landed === 4")
    # The other trays read the live step's texts (GPU 1's), each cut to its first words.
    page.wait_for_function(SAME_TEXTS.replace("{i}", "0").replace("{replica}", "0"))
    assert story(page)["figure"]["batch"][0]["texts"][0] == "Once upon a ___"
    # As a step begins, the prompt's three tokens fly from the top tray into the door.
    page.wait_for_function("window.trainingRun.story.figure.batch[0].entered >= 3", timeout=60_000)
    at = {n: [p["box"] for p in page.evaluate("window.trainingRun.figure") if p["name"] == n]
          for n in ("batch-tray", "door", "gpu")}  # fmt: skip
    assert len(at["batch-tray"]) == 4 and len(at["door"]) == 1
    door, gpu = at["door"][0], at["gpu"][0]
    mid = [(t["min"][0] + t["max"][0]) / 2 for t in at["batch-tray"]]
    assert all(x < door["min"][0] for x in mid), "the trays by the door"
    assert door["max"][0] <= gpu["min"][0] + 0.3, "the door on the GPU's side"
    tops = [t["max"][1] for t in at["batch-tray"]]
    assert tops == sorted(tops, reverse=True), "a column of trays, the prompt on top"
    assert watch.errors == [], watch.errors


# Frame by frame, what the step inside GPU 1 shows: phase, the layer the band or ring is on,
# the ticks left; until an update has drained the ticks after a full pass up and down.
WATCH_STEP = """() => new Promise((done) => {
  const seen = [];
  const t0 = performance.now();
  const look = () => {
    const s = window.trainingRun.story.figure?.step;
    const names = window.trainingRun.figure.map((p) => p.name);
    if (s) seen.push({ phase: s.phase, at: s.at, ticks: s.ticks, piled: s.piled, tray: s.tray,
      readout: s.readout,
      band: names.includes('band'), ring: names.includes('ring'),
      tickShown: names.filter((n) => n === 'tick').length });
    const phases = seen.map((x) => x.phase);
    const layers = (p) => new Set(seen.filter((x) => x.phase === p).map((x) => x.at)).size;
    const f = phases.indexOf('forward', phases.indexOf('update')); // a step from its start
    const b = phases.indexOf('backward', f);
    const u = b < 0 ? -1 : phases.indexOf('update', b);
    const full = phases.indexOf('update') >= 0 && f >= 0 && b > f && u > b
      && phases.indexOf('forward', u) > u
      && layers('forward') >= 3 && layers('backward') >= 3;
    if (full || performance.now() - t0 > 90000) done(seen);
    else requestAnimationFrame(look);
  };
  look();
})"""


# The trays of batch {i} read the step's texts of replica {replica}, each from its first word
# (the prompt's tray aside): a JS expression, true once they match.
SAME_TEXTS = """(() => {
  const b = window.trainingRun.story.figure?.batch?.[{i}];
  const own = window.trainingRun.stepTexts.filter((x) => x.replica === {replica})
    .map((x) => x.text.replace(/^[.,!?;:]+\\s*/, ''));
  const shown = (b?.texts ?? []).filter((x) => x && !x.startsWith('Once upon a '));
  return shown.length > 0 && shown.every((w, k) => own[k]?.startsWith(w.replace(/ …$/, '')));
})()"""


def phases_from(seen: list[dict], phase: str) -> int:
    """Where `phase` first shows in the frames seen."""
    return next(i for i, x in enumerate(seen) if x["phase"] == phase)


def test_the_step_plays_inside_gpu_one(page_at, web) -> None:
    """Chapter 7 opens GPU 1 with its four layers in place and draws the live step through
    them from GPU 1's lane of the trace: an amber band climbing the layers in the forward
    pass, a pink ring coming back down in the backward pass, leaving a tick on each layer it
    passed, once for each of the run's two microbatches with the ticks piling up, then the
    update draining them; a readout names each phase. Chapter 8 draws the same step beside
    its 16 live weights; chapter 9 adds the two microbatches as trays, each lit in turn;
    chapter 10 trains on inside it, and chapter 11 flies back out."""
    watch = page_at("?story=one-gpu&chapter=7", viewport={"width": 1024, "height": 768})
    page = watch.page
    page.wait_for_function(
        "window.trainingRun.story.chapter === 7 && window.trainingRun.story.figure"
        " && window.trainingRun.story.figure.landed === 4 && !window.trainingRun.cameraFlying",
        timeout=60_000,
    )
    seen = page.evaluate(WATCH_STEP)
    phases = [x["phase"] for x in seen]
    assert "forward" in phases and "backward" in phases and "update" in phases, set(phases)
    seen = seen[phases.index("forward", phases.index("update")) :]  # a step from its start
    runs: list[list[dict]] = []  # the frames of each phase in turn
    for x in seen:
        if not runs or runs[-1][0]["phase"] != x["phase"]:
            runs.append([])
        runs[-1].append(x)
    up = [x for x in seen if x["phase"] == "forward"]
    back = [x for x in seen if x["phase"] == "backward"]
    # Each forward pass climbs (never back down), each backward pass comes down, over the
    # layers: the band from the bottom, the ring from the top.
    for run in runs:
        ats = [x["at"] for x in run]
        if run[0]["phase"] == "forward":
            assert ats == sorted(ats), ats
        if run[0]["phase"] == "backward":
            assert ats == sorted(ats, reverse=True), ats
    assert len({x["at"] for x in up}) >= 3 and len({x["at"] for x in back}) >= 3, runs
    assert all(x["band"] and not x["ring"] for x in up), up[:3]
    assert all(x["ring"] and not x["band"] for x in back), back[:3]
    # A tick on every layer the ring has passed, none before the first backward pass; the
    # run cuts its batch into microbatches, and each one's gradients pile onto the ticks
    # until the one update.
    assert all(x["ticks"] == 0 for x in runs[0]), runs[0][:3]
    assert all(x["ticks"] >= 4 - x["at"] and x["ticks"] == x["tickShown"] for x in back), back
    microbatches = page.evaluate("window.trainingRun.plan.microbatches")
    assert microbatches == 2
    assert max(x["piled"] for x in seen) == microbatches, [x["piled"] for x in seen]
    after = [x for x in seen[phases_from(seen, "update") :] if x["phase"] == "forward"]
    assert after and all(x["ticks"] == 0 for x in after), "the next step starts with no ticks"
    # The readout names the phase as it happens.
    assert {x["readout"] for x in up} == {"forward"}
    assert {x["readout"] for x in back} == {"backward"}
    web.screenshot(page, "story_step_inside_1024")

    page.keyboard.press("PageDown")
    page.wait_for_function(
        "window.trainingRun.story.chapter === 8 && window.trainingRun.story.figure"
        " && window.trainingRun.story.figure.landed === 4"
    )
    again = page.evaluate(WATCH_STEP)
    assert {"forward", "backward", "update"} <= {x["phase"] for x in again}
    assert story(page)["figure"]["step"]["steps"] >= 1
    assert _pieces(page).get("microbatch") is None, "no trays before the microbatches chapter"
    # Once the backward pass has noted the texts' gradients, the prompt's blank is filled
    # with what the text said and every text has its tick.
    page.wait_for_function(
        "(() => { const b = window.trainingRun.story.figure.batch[0];"
        " return b.ticks === 4 && b.texts[0] === 'Once upon a time'; })()",
        timeout=60_000,
    )
    assert len(_pieces(page)["text-tick"]) == 4

    # Chapter 9: the two microbatches as trays beside the GPU, each lit in turn while its
    # pass climbs and comes down; none lit during the update.
    page.keyboard.press("PageDown")
    page.wait_for_function(
        "window.trainingRun.story.chapter === 9 && window.trainingRun.story.figure"
        " && window.trainingRun.story.figure.landed === 4 && !window.trainingRun.cameraFlying"
    )
    assert len(_pieces(page)["microbatch"]) == 2
    trays = page.evaluate(WATCH_STEP)
    working = [x for x in trays if x["phase"] in ("forward", "backward")]
    assert {x["tray"] for x in working} == {0, 1}, working
    assert all(x["tray"] == -1 for x in trays if x["phase"] == "update")
    web.screenshot(page, "story_microbatches_1024")

    # Chapter 10 trains on inside GPU 1; chapter 11 times the step beside the batch's four
    # texts; in chapter 12 (a fresh run) the trays are empty outlines, '+ more'.
    page.keyboard.press("PageDown")
    page.wait_for_function(
        "window.trainingRun.story.chapter === 10 && window.trainingRun.story.figure"
        " && window.trainingRun.story.figure.landed === 4"
    )
    page.keyboard.press("PageDown")
    page.wait_for_function("window.trainingRun.story.chapter === 11")
    page.wait_for_function(SAME_TEXTS.replace("{i}", "0").replace("{replica}", "0"))
    assert story(page)["figure"]["batch"][0]["texts"][3], "four of the step's texts"
    page.keyboard.press("PageDown")
    page.wait_for_function(
        "window.trainingRun.story.chapter === 12"
        " && window.trainingRun.story.figure?.batch?.[0]?.dim && !window.trainingRun.cameraFlying"
    )
    fresh = _pieces(page)
    assert len(fresh["batch-tray"]) == 4 and len(fresh["plus-more"]) == 1
    assert story(page)["figure"]["batch"][0]["texts"] == [None] * 4
    # Arriving at chapter 12 starts its run over, and the card says so once it has.
    page.wait_for_function("document.querySelector('.sf-fresh')", timeout=60_000)
    assert watch.errors == [], watch.errors


def _chapter(page_at, n: int, ready: str):
    """The story opened at chapter n (1024x768), once `ready` (a JS expression) holds and
    the camera has landed."""
    watch = page_at(f"?story=one-gpu&chapter={n}", viewport={"width": 1024, "height": 768})
    try:
        watch.page.wait_for_function(
            f"window.trainingRun.story.chapter === {n} && !window.trainingRun.cameraFlying"
            f" && ({ready})",
            timeout=WAIT_MS,
        )
    except PlaywrightTimeout:
        raise AssertionError(f"chapter {n} never got ready: {_where(watch)}") from None
    return watch


def _where(watch) -> dict:
    """What a page waiting on a chapter shows: its run, step, card and figure, and errors."""
    return {
        **watch.page.evaluate(
            "(() => { const r = window.trainingRun, s = r.story;"
            " return { watching: r.watching, step: r.step, flying: r.cameraFlying,"
            " frames: r.frames, refused: r.serverErrors, chapter: s.chapter, ready: s.ready,"
            " note: s.note, figure: s.figure }; })()"
        ),
        "errors": watch.errors,
    }


def test_opening_the_story_at_a_fresh_chapter_starts_its_run_over(page_at, web) -> None:
    """Chapter 12 says its run starts afresh. Opened there directly, on a run that has
    already trained, the run is started over (a new run), and only then does the card call
    it fresh."""
    before = _chapter(page_at, 11, "window.trainingRun.story.ready && window.trainingRun.step >= 3")
    trained = before.page.evaluate("window.trainingRun.runId")
    before.page.context.close()
    watch = page_at("?story=one-gpu&chapter=12", viewport={"width": 1024, "height": 768})
    try:
        watch.page.wait_for_function(
            "window.trainingRun.story?.chapter === 12 && document.querySelector('.sf-fresh')",
            timeout=WAIT_MS,
        )
    except PlaywrightTimeout:
        raise AssertionError(f"chapter 12 never called its run fresh: {_where(watch)}") from None
    assert watch.page.evaluate("window.trainingRun.runId") != trained
    assert watch.errors == [], watch.errors


def test_a_chapter_opened_directly_quotes_the_runs_before_it(page_at, web) -> None:
    """Chapter 23 quotes the bubble chapter 22's run measured. Opened directly, the page
    never watched that run: the server trains its first step on a side copy, and the
    chapter is ready with the figure, not waiting for ever on "from … with one"."""
    watch = page_at("?story=one-gpu&chapter=23", viewport={"width": 1024, "height": 768})
    watch.page.wait_for_function(
        "window.trainingRun.story?.chapter === 23 && window.trainingRun.story.ready",
        timeout=90_000,
    )
    caption = story(watch.page)["caption"]
    assert re.search(r"from \d+% with one", caption), caption
    assert watch.errors == [], watch.errors


def test_a_second_gpu_is_copied_beside_gpu_one(page_at, web) -> None:
    """Chapter 13 draws GPU 2 beside GPU 1 in the scene: a socket traced on the floor, GPU 2
    landing in it empty, then GPU 1's four layers copied across one at a time (a copy in
    flight, a thread back to each layer) until an equals sign settles between the two; GPU 2
    to the right of GPU 1, both on screen. Chapter 14 puts the pair in a dashed "what if"
    frame with a not-equal sign; chapter 15 has the equals sign again, and at the live
    step's all-reduce a bead leaves each layer of both GPUs and they meet in the gap."""
    watch = page_at("?story=one-gpu&chapter=13", viewport={"width": 1024, "height": 768})
    page = watch.page
    page.wait_for_function(
        "window.trainingRun.story.chapter === 13 && window.trainingRun.story.figure?.pair",
        timeout=WAIT_MS,
    )
    # The copy under way: layers arrive in GPU 2 one by one, one copy in flight at a time.
    seen = page.evaluate(
        """() => new Promise((done) => {
          const seen = [];
          const look = () => {
            const p = window.trainingRun.story.figure?.pair;
            const names = window.trainingRun.figure.map((x) => x.name);
            if (p) seen.push({ copied: p.copied, sign: p.sign, arrived: p.arrived,
              flying: names.filter((n) => n === 'copy').length,
              slabs: names.filter((n) => n === 'gpu2-slab').length,
              threads: names.filter((n) => n === 'thread').length });
            if (p && p.copied === 4) done(seen); else requestAnimationFrame(look);
          };
          look();
        })"""
    )
    copied = [x["copied"] for x in seen]
    assert copied == sorted(copied) and len(set(copied)) >= 3, copied
    assert all(x["flying"] <= 1 and x["slabs"] == x["copied"] for x in seen), seen
    assert {x["sign"] for x in seen if x["copied"] < 4} == {"→"}
    page.wait_for_function("!window.trainingRun.cameraFlying")
    done = _pieces(page)
    assert story(page)["figure"]["pair"]["sign"] == "="
    assert len(done["gpu2-slab"]) == 4 and len(done["thread"]) == 4 and len(done["socket"]) == 1
    one, two = done["gpu"][0], done["gpu2-gpu"][0]
    assert two["left"] > one["right"] - 5, (one, two)
    sign = done["sign"][0]
    assert one["right"] - 5 < (sign["left"] + sign["right"]) / 2 < two["left"] + 5, sign
    width, height = 1024, 768
    for r in (one, two):
        assert 0 <= r["left"] and r["right"] <= width and 0 <= r["top"] and r["bottom"] <= height
    web.screenshot(page, "story_second_gpu_1024")

    page.keyboard.press("PageDown")
    page.wait_for_function(
        "window.trainingRun.story.chapter === 14 && window.trainingRun.story.figure?.pair"
    )
    apart = story(page)["figure"]["pair"]
    assert apart["mode"] == "apart" and apart["sign"] == "≠", apart
    page.wait_for_function("!window.trainingRun.cameraFlying")
    assert len(_pieces(page)["what-if"]) == 1 and len(_pieces(page)["gpu2-slab"]) == 4
    # The batch's trays split, two under each GPU, each with the texts its own copy read.
    page.wait_for_function(SAME_TEXTS.replace("{i}", "0").replace("{replica}", "0"))
    page.wait_for_function(SAME_TEXTS.replace("{i}", "1").replace("{replica}", "1"))
    trays = _pieces(page)["batch-tray"]
    one, two = _pieces(page)["gpu"][0], _pieces(page)["gpu2-gpu"][0]
    under = [[t for t in trays if g["left"] - 5 < (t["left"] + t["right"]) / 2 < g["right"] + 5
              and t["top"] > g["top"]] for g in (one, two)]  # fmt: skip
    assert [len(u) for u in under] == [2, 2], (trays, one, two)

    page.keyboard.press("PageDown")
    page.wait_for_function(
        "window.trainingRun.story.chapter === 15 && window.trainingRun.story.figure?.pair"
    )
    assert story(page)["figure"]["pair"]["sign"] == "="
    assert "what-if" not in _pieces(page)
    # The beads: out at the live step's all-reduce, one from each GPU's layer.
    out = page.wait_for_function(
        "(() => { const f = window.trainingRun.figure;"
        " return f.filter((p) => p.name === 'bead').length >= 4 ? f : null; })()",
        timeout=60_000,
    ).json_value()
    web.screenshot(page, "story_together_1024")
    pieces: dict[str, list[dict]] = {}
    for p in out:
        pieces.setdefault(p["name"], []).append(p["rect"])
    one, two = pieces["gpu"][0], pieces["gpu2-gpu"][0]
    beads = pieces["bead"]
    assert all(one["left"] < (b["left"] + b["right"]) / 2 < two["right"] for b in beads), beads
    assert story(page)["figure"]["pair"]["beadFrames"] > 0
    assert watch.errors == [], watch.errors


def test_four_more_layers_are_blocked_and_overflow_the_walls(page_at, web) -> None:
    """Chapter 16 keeps both GPUs in the scene and drops four more layers, dashed, onto the
    top of each box, where they stop; each GPU's walls hold the four layers in two bands
    (the weight and its gradient, the optimizer's bookkeeping), under the top. Chapter 17
    (eight layers) overflows them: hatched bands climb past the top of every wall, marked
    "doesn't fit"."""
    watch = _chapter(page_at, 16, "window.trainingRun.story.figure?.blocked === 8")
    page = watch.page
    four = _heights(page)
    assert len(four["blocked"]) == 4 and len(four["gpu2-blocked"]) == 4, four.keys()
    for prefix in ("", "gpu2-"):
        top = max(y1 for _, y1 in four[f"{prefix}capacity"])  # the wall's top tick
        assert min(y0 for y0, _ in four[f"{prefix}blocked"]) >= top, "stopped on top of the box"
        assert len(four[f"{prefix}band"]) == 4, four.get(f"{prefix}band")  # 2 walls x 2 bands
        assert f"{prefix}overflow" not in four
        assert max(y1 for _, y1 in four[f"{prefix}band"]) <= top, "four layers fit"
    assert "doesnt-fit" not in four
    web.screenshot(page, "story_blocked_1024")

    page.keyboard.press("PageDown")
    page.wait_for_function(
        "window.trainingRun.story.chapter === 17 && window.trainingRun.story.figure?.overflow"
        " && window.trainingRun.figure.some((p) => p.name === 'overflow')"
        " && !window.trainingRun.cameraFlying",
        timeout=60_000,
    )
    eight = _heights(page)
    for prefix in ("", "gpu2-"):
        top = max(y1 for _, y1 in eight[f"{prefix}capacity"])
        assert len(eight[f"{prefix}overflow"]) >= 2, eight.keys()
        assert max(y1 for _, y1 in eight[f"{prefix}overflow"]) > top + 0.5, "far past the top"
        assert min(y0 for y0, _ in eight[f"{prefix}overflow"]) >= top - 0.2, "hatched above"
    assert len(eight["doesnt-fit"]) == 1
    # The sign stands over the gap between the two GPUs, at the top of the overflow.
    sign = _pieces(page)["doesnt-fit"][0]
    one, two = _pieces(page)["gpu"][0], _pieces(page)["gpu2-gpu"][0]
    assert one["left"] < (sign["left"] + sign["right"]) / 2 < two["right"], (sign, one, two)
    web.screenshot(page, "story_overflow_1024")
    assert watch.errors == [], watch.errors


def test_one_layer_opens_over_gpu_one(page_at, web) -> None:
    """Chapter 18 opens GPU 1's bottom layer over the GPU: attention along its base, the
    router's notch, the live model's experts above; the token comes up through attention to
    the router and on to the experts the live router chose for it in layer 1, which light."""
    watch = _chapter(
        page_at,
        18,
        "(() => { const f = window.trainingRun.story.figure;"
        " return f && f.route && f.layer && f.layer.lit.length === f.route.experts.length; })()",
    )
    page = watch.page
    # The scene's lit experts, the card's and the router's choice agree once a frame has drawn
    # the latest step (read in one go: each step brings the router's new choice).
    page.wait_for_function(
        "(() => { const f = window.trainingRun.story.figure, key = (a) => [...a].sort().join();"
        " return key(f.layer.lit) === key(f.route.experts) && key(f.lit) === key(f.route.experts);"
        " })()",
        timeout=30_000,
    )
    fig = story(page)["figure"]
    experts = page.evaluate("window.trainingRun.plan.experts")
    high = _heights(page)
    assert len(high["attention"]) == 1 and len(high["router"]) == 1
    assert len(high["expert"]) + len(high["expert-lit"]) == fig["layer"]["experts"] == experts
    assert len(high["expert-lit"]) == len(fig["route"]["experts"])
    wall_top = max(y1 for _, y1 in high["capacity"])
    attention, router = high["attention"][0], high["router"][0]
    assert attention[0] > wall_top, "opened over the GPU"
    assert router[0] >= attention[1] - 0.05 and min(y0 for y0, _ in high["expert"]) > router[1]
    # The token goes up through the layer and out to an expert, again and again.
    where = page.evaluate(
        """() => new Promise((done) => {
          const seen = new Set();
          const t0 = performance.now();
          const look = () => {
            seen.add(window.trainingRun.story.figure?.layer?.token);
            if (seen.size >= 4 || performance.now() - t0 > 15000)
              done([...seen]);
            else requestAnimationFrame(look);
          };
          look();
        })"""
    )
    assert {"below", "attention", "router", "experts"} <= set(where), where
    web.screenshot(page, "story_open_layer_1024")
    assert watch.errors == [], watch.errors


def test_the_experts_are_split_between_two_gpus(page_at, web) -> None:
    """Chapter 19 draws both GPUs with every layer's row of experts: the ones each GPU keeps
    (from the split run's roles) in the experts' colour, the rest dashed, a cut down every
    row where one GPU's experts end, each GPU's range named over it."""
    watch = _chapter(
        page_at,
        19,
        "window.trainingRun.story.figure?.split"
        " && window.trainingRun.figure.some((p) => p.name === 'gpu2-cut')",
    )
    page = watch.page
    roles = page.evaluate("window.trainingRun.roles.slice(0, 2).map((r) => r.experts)")
    experts = page.evaluate("window.trainingRun.plan.experts")
    assert roles[0][1] <= roles[1][0] and roles[1][1] - roles[0][0] == experts, roles
    pieces = _pieces(page)
    assert len(pieces["experts"]) == 4 and len(pieces["gpu2-experts"]) == 4
    # The cut stands where GPU 1's experts end: the same share of the row on both GPUs.
    for prefix in ("", "gpu2-"):
        row, cut = pieces[f"{prefix}experts"][0], pieces[f"{prefix}cut"][0]
        at = ((cut["left"] + cut["right"]) / 2 - row["left"]) / (row["right"] - row["left"])
        assert abs(at - roles[0][1] / experts) < 0.1, (prefix, at, roles)
    web.screenshot(page, "story_experts_split_1024")
    assert watch.errors == [], watch.errors


# Chapter 21's card and caption quote the same bytes on GPU 1 (a number and its unit).
STAGES_AGREE = """(() => {
  const legend = document.querySelector('#story-figure .sf-legend')?.textContent ?? '';
  const used = /\\d[\\d.,]*\\s[KMGT]?B/.exec(legend);
  return used !== null && window.trainingRun.story.caption.includes(used[0]);
})()"""


def test_the_stages_stack_by_height(page_at, web) -> None:
    """Chapter 21 stacks the pipeline's stages by height over GPU 1: stage 1's GPUs at the
    bottom, stage 2's over them, each row named with its stage and layers and every GPU whose
    memory fits checked. In chapter 22 every GPU plays its own lane of the step, and a GPU
    idle in the pipeline's bubble is veiled, "waiting"."""
    watch = _chapter(
        page_at,
        21,
        "(() => { const s = window.trainingRun.story.figure?.stack;"
        " return s && s.landed === 1 && s.fits === 4; })()",
    )
    page = watch.page
    # The card's "fits" line quotes GPU 1's bytes as the caption does, past the first steps
    # (which still change them: the card once kept the first step's).
    page.wait_for_function("window.trainingRun.step >= 3", timeout=WAIT_MS)
    page.wait_for_function(STAGES_AGREE, timeout=10_000)
    roles = page.evaluate("window.trainingRun.roles")
    assert {r["stage"] for r in roles} == {0, 1} and len(roles) == 4
    high = _heights(page)
    assert len(high["stage"]) == 2 and len(high["fits"]) == 4
    # Every GPU of stage 2 stands over the top of stage 1's walls.
    top = max(y1 for _, y1 in high["capacity"])
    for r in roles:
        if r["stage"] == 1:
            assert min(y0 for y0, _ in high[f"gpu{r['gpu'] + 1}-gpu"]) > top, r
    web.screenshot(page, "story_stages_1024")

    page.keyboard.press("PageDown")
    page.wait_for_function(
        "window.trainingRun.story.chapter === 22"
        " && window.trainingRun.story.figure?.stack?.landed === 1"
    )
    # Watch a few steps: each stage works and waits in turn, never both waiting at once.
    seen = page.evaluate(
        """() => new Promise((done) => {
          const seen = [];
          const t0 = performance.now();
          const look = () => {
            const s = window.trainingRun.story.figure?.stack;
            if (s) seen.push(s.waiting);
            if (performance.now() - t0 > 8000) done(seen); else requestAnimationFrame(look);
          };
          look();
        })"""
    )
    stage_of = {r["gpu"]: r["stage"] for r in roles}
    waited = {stage_of[g] for w in seen for g in w}
    assert waited == {0, 1}, waited
    web.screenshot(page, "story_bubble_1024")
    assert watch.errors == [], watch.errors


def test_the_guess_stands_over_the_layers(page_at, web) -> None:
    """Chapter 6 draws the live probe's five best guesses as bars over GPU 1's layers, each
    as tall as its probability under a line at certain; the "time" bar carries a pink
    bracket from its top up to that line: the error."""
    watch = _chapter(
        page_at,
        6,
        "window.trainingRun.story.figure?.guess?.bars.length === 5"
        " && window.trainingRun.story.figure.guess.bars.includes('time')",
    )
    page = watch.page
    guess, high = page.evaluate(
        "[window.trainingRun.story.figure.guess, window.trainingRun.figure]"
    )
    assert guess["bars"] == [g["token"] for g in guess["top"]]
    heights: dict[str, list[tuple[float, float]]] = {}
    for p in high:
        heights.setdefault(p["name"], []).append((p["box"]["min"][1], p["box"]["max"][1]))
    high = heights
    certain = high["certain"][0][1]
    base = min(y0 for y0, _ in high["bar"] + high["bar-time"])
    assert all(y1 < certain + 0.01 for _, y1 in high["bar"] + high["bar-time"])
    p_time = next(g["p"] for g in guess["top"] if g["token"] == "time")
    time_top = high["bar-time"][0][1]
    assert (time_top - base) / (certain - base) == pytest.approx(p_time, abs=0.03)
    error = high["error"][0]
    assert error[0] == pytest.approx(time_top, abs=0.02) and error[1] == pytest.approx(
        certain, abs=0.03
    )
    assert guess["error"] == pytest.approx(1 - p_time, abs=1e-6)
    web.screenshot(page, "story_guess_1024")
    assert watch.errors == [], watch.errors


def test_one_step_colours_the_team_with_its_work(page_at, web) -> None:
    """Chapter 26 colours every cell of the 64-GPU team with the work its GPU is doing at
    that moment of the live step (its lane of the trace), under a legend."""
    # The cells take the colours of the live step as it plays (every colour a cell has
    # taken is kept: a frame between two steps may show all of them idle).
    watch = _chapter(
        page_at,
        26,
        "(() => { const f = window.trainingRun.story.figure;"
        " return f && f.cells === 64"
        " && f.shown.some((k) => k === 'forward' || k === 'backward'); })()",
    )
    kinds = story(watch.page)["figure"]["shown"]
    assert set(kinds) <= {"forward", "backward", "wait", "update", "allreduce", "idle"}, kinds
    assert watch.page.locator(".sf-kinds .sf-swatch").count() == 4
    # In the scene the same team is one block of GPUs, a row of 8 a stage stacked by height,
    # each box in the colour of its GPU's work.
    try:
        watch.page.wait_for_function(
            "window.trainingRun.story.figure.team?.shown.some((k) => k === 'forward'"
            " || k === 'backward') && !window.trainingRun.cameraFlying",
            timeout=60_000,
        )
    except PlaywrightTimeout:
        raise AssertionError(f"the team block never played a step: {_where(watch)}") from None
    assert _team_rows(watch.page) == [8] * 8
    web.screenshot(watch.page, "story_one_step_1024")
    # Chapter 24, two back, draws the stages two GPUs wide: the model's depth first.
    watch.page.keyboard.press("PageUp")
    watch.page.keyboard.press("PageUp")
    watch.page.wait_for_function(
        "window.trainingRun.story.chapter === 24 && window.trainingRun.story.figure?.team?.gpus"
        " === 16 && !window.trainingRun.cameraFlying"
    )
    assert _team_rows(watch.page) == [2] * 8
    assert watch.errors == [], watch.errors


def test_the_team_is_copied_into_the_field(page_at, web) -> None:
    """Chapter 27 copies the live 64-GPU block behind itself, one copy after another, until
    the field's 512 GPUs stand there: the front block the live run, seven mirrors behind,
    bracketed 'Expert parallelism · 8 across' along the foot and 'Data · 64-way' down the
    side, a counter over it rolling to 512."""
    watch = _chapter(page_at, 27, "window.trainingRun.story.figure?.team?.copies?.landed === 8")
    team = story(watch.page)["figure"]["team"]
    assert team["copies"] == {"copies": 8, "landed": 8, "gpus": 512}
    assert team["gpus"] == 64 and _team_rows(watch.page) == [8] * 8  # the live block
    scene = watch.page.evaluate("window.trainingRun.figure")
    boxes = {}
    for p in scene:
        boxes.setdefault(p["name"], []).append(p["box"])
    assert len(boxes["copy"]) == 7 and len(boxes["bracket"]) == 2
    # Each copy stands behind the one before it, the live block in front.
    fronts = [b["max"][2] for b in boxes["copy"]]
    live_back = min(b["min"][2] for b in boxes["team-gpu"])
    assert fronts == sorted(fronts, reverse=True) and fronts[0] < live_back
    # The brackets and the counter are on screen, in the card's words.
    words = watch.page.evaluate(
        "window.trainingRun.figure.filter((p) => p.words).map((p) => p.words)"
    )
    assert {"Expert parallelism · 8 across", "Data · 64-way", "8 × 64 = 512 GPUs"} <= set(words)
    web.screenshot(watch.page, "story_copies_1024")
    assert watch.errors == [], watch.errors


def test_the_story_ends_back_inside_gpu_one(page_at, web) -> None:
    """Chapter 29 dives from the field back into GPU 1: open, the live step playing through
    the 4 of 32 layers it holds, each with its experts (1–8 of 64) kept and the rest dashed,
    and named over it."""
    watch = _chapter(page_at, 29, "window.trainingRun.story.figure?.landed === 4")
    pieces = _pieces(watch.page)
    assert len(pieces["slab"]) == 4 and len(pieces["experts"]) == 4 and len(pieces["caption"]) == 1
    # The words over it are the card's.
    assert watch.page.locator(".sf-sum").inner_text() == "layers 1–4 of 32 · experts 1–8 of 64"
    web.screenshot(watch.page, "story_gpu_one_again_1024")
    assert watch.errors == [], watch.errors


def _team_rows(page) -> list[int]:
    """The team block's GPUs in each row, bottom row first (rows by height in the scene),
    each row's boxes side by side."""
    boxes = [
        p["box"] for p in page.evaluate("window.trainingRun.figure") if p["name"] == "team-gpu"
    ]
    rows: dict[float, list[float]] = {}
    for b in boxes:
        rows.setdefault(round(b["min"][1], 2), []).append(b["min"][0])
    assert all(len(set(xs)) == len(xs) for xs in rows.values()), rows
    return [len(rows[y]) for y in sorted(rows)]


# What a chapter draws, for telling two pictures apart: the lasting pieces in the scene
# (not what comes and goes with the step: the band, a bead), whether the field is up, and
# the card figure's kinds of element and its words (numbers aside).
PICTURE_JS = """(() => ({
  scene: [...new Set(window.trainingRun.figure.map((p) => p.name)
    .filter((n) => !/^(gpu\\d+-)?(band|ring|tick|readout|bead|copy|token|text-tick|waiting)$/
      .test(n)))]
    .sort(),
  field: Boolean(window.trainingRun.field?.on),
  card: [...new Set([...document.querySelectorAll('#story-figure *')]
    .map((e) => String(e.className).replace(/ ?sf-k-\\w+/g, '')).filter(Boolean))].sort(),
  words: document.getElementById('story-figure').textContent.replace(/[0-9.,%]+/g, '#'),
}))()"""
# The picture once it has settled: drawn (something in the card, the scene or the field) and
# the same over ten frames running (the close-up mounts a moment after the card).
SETTLED_JS = f"""() => new Promise((done) => {{
  const seen = [];
  const t0 = performance.now();
  const look = () => {{
    const p = JSON.stringify({PICTURE_JS});
    seen.push(p);
    const drawn = p !== JSON.stringify({{ scene: [], field: false, card: [], words: '' }});
    const still = seen.length >= 10 && seen.slice(-10).every((x) => x === p);
    if ((drawn && still) || performance.now() - t0 > 20000) done(JSON.parse(p));
    else next();
  }};
  // The next frame, or 100 ms when no frame comes (a page that stops drawing under load):
  // the 20 s cap above holds either way.
  const next = () => {{
    let went = false;
    const go = () => {{ if (!went) {{ went = true; look(); }} }};
    requestAnimationFrame(go);
    setTimeout(go, 100);
  }};
  look();
}})"""


# The walk's sizes: forward on a wide screen (the card along the bottom) and a laptop's
# 1366x768, back on a projector's 1024x768 (the card docked right) and a phone's 390x844 (the
# card under the scene). The page's layout follows its width alone, so one page is resized.
FORWARD = ({"width": 1920, "height": 1080}, {"width": 1366, "height": 768})
BACK = ({"width": 1024, "height": 768}, {"width": 390, "height": 844})


def hidden_at(page, sizes, n: int, cid: str, web) -> list[str]:
    """Chapter n's pieces that a panel covers (or that fall off screen) at each size, the page
    left at the last one."""
    hits: list[str] = []
    for size in sizes:
        if page.viewport_size != size:
            since = web.tr(page, "frames")
            page.set_viewport_size(size)
            web.drawn(page, since)
            web.landed(page)
        hits += [
            f"{n} {cid} at {size['width']}: {h}" for h in page.evaluate(PIECES_HIDDEN_JS)["hits"]
        ]
    return hits


@pytest.mark.parametrize("lang", ["en", "de", "es"])
def test_walk_every_chapter_forward_and_back(browser, story_server, tmp_path, web, lang) -> None:
    story_server, recorded = story_server
    shots = shots_dir() if lang == "en" else None
    hidden: list[str] = []
    # The walk checks each chapter's state, not its pixels: without screenshots to take, the
    # page skips its WebGL draws (?draw=0).
    query = f"?story=one-gpu&chapter=1&lang={lang}" + ("" if shots else "&draw=0")
    # At every size, no piece of a chapter's picture is under a panel.
    forward = (shots_size(),) if shots else FORWARD
    back = (shots_size(),) if shots else BACK
    watch = web.open_page(
        browser, story_server.url, query, reduced_motion="reduce", viewport=forward[0]
    )
    page = watch.page
    page.set_default_timeout(120_000)
    n_chapters = len(STORY["chapters"])
    # The stage and the story's chapters load side by side: wait for both.
    page.wait_for_function(
        f"window.trainingRun.stageReady && window.trainingRun.story.chapters === {n_chapters}"
    )
    seen: dict[str, dict] = {}
    pictures: list[tuple[str, dict]] = []
    first_recorded = min(
        i for i, ch in enumerate(STORY["chapters"], 1) if ch["run"] in STORY["recorded"]
    )
    for n in range(1, n_chapters + 1):
        if n == first_recorded - 3:
            recorded()  # before the page warms the team's run, two distinct runs ahead
        if n > 1:
            if page.viewport_size != forward[0]:
                page.set_viewport_size(forward[0])
            page.keyboard.press("PageDown")
        s = check_chapter(page, n, watch, story_server, web, lang)
        cid = s["chapterId"]
        picture = None
        if cid in ("what-if", "together"):
            page.wait_for_function("window.trainingRun.story.figure !== null", timeout=WAIT_MS)
        elif cid == "bigger":
            page.wait_for_function("window.trainingRun.story.figure !== null")
            assert story(page)["figure"]["overflow"] is False
            picture = page.evaluate(SETTLED_JS)  # the chapter's own picture, before "do it"
            page.keyboard.press(" ")  # "See if four more layers fit"
            page.wait_for_function("window.trainingRun.story.figure.overflow === true")
        elif cid in ("split", "back-to-back"):
            page.wait_for_function("window.trainingRun.story.figure !== null")
        elif cid == "inside-layer":
            # The experts lit are the live router's choice for the prompt's last word.
            page.wait_for_function(
                "(() => { const f = window.trainingRun.story.figure;"
                " return f && f.route && f.lit.length === f.route.experts.length; })()"
            )
            fig = story(page)["figure"]
            assert sorted(fig["lit"]) == sorted(fig["route"]["experts"])
            assert abs(sum(fig["route"]["gates"]) - 1) < 1e-6
        elif cid == "again":
            # With reduced motion the climb shows its end at once: every tenfold's writing,
            # the field in the shade of the last tenfold really trained, the counter past it.
            page.wait_for_function(
                "(() => { const f = window.trainingRun.field, c = window.trainingRun.story.figure;"
                " const now = document.querySelector('.sf-tone-now small');"
                " return f.on && c && c.step === 1000000 && f.decade === c.decade && now"
                f" && now.textContent === (10 ** f.decade).toLocaleString('{lang}'); }})()"
            )
            climb = story(page)["figure"]
            assert climb["past"] is True and climb["decade"] == len(CLIMB["decades"]) - 1
            assert climb["lines"] == [
                {"step": d["step"], "writing": d["writing"]} for d in CLIMB["decades"]
            ]
        elif cid == "gpu-1":
            page.wait_for_function("window.trainingRun.field.on === false")
        seen[cid] = story(page)
        pictures.append((cid, picture or page.evaluate(SETTLED_JS)))
        hidden += hidden_at(page, forward, n, cid, web)
        if shots:
            width = shots_size()["width"]
            page.screenshot(
                path=str(shots / f"{n:02d}-{cid}-{width}.jpg"), quality=70, timeout=120_000
            )
        assert page.evaluate("new URL(location.href).searchParams.get('chapter')") == str(n)

    # Each chapter draws something the one before it did not: in the scene or in the card.
    same = [f"{a} -> {b}" for (a, p), (b, q) in zip(pictures, pictures[1:], strict=False) if p == q]
    assert not same, f"chapters that draw the same picture as the one before: {same}"

    # The out-of-memory chapter: the walls overflow, in weights + gradients and optimizer.
    oom = seen["oom"]["figure"]
    assert oom["overflow"] is True and oom["fraction"] > 1
    # The expert split: less memory per GPU than the chapter before it, from the accounts.
    split = seen["split"]["figure"]
    assert split["before"] and split["now"] and split["now"] < split["before"]
    # What if: apart, the copies' weights differ; together, they are equal.
    drift = seen["together"]["drift"]
    assert drift["apart"]["identical"] is False and drift["apart"]["differing"] > 0
    assert drift["apart"]["weights"][0] != drift["apart"]["weights"][1]
    assert drift["together"]["identical"] is True
    assert drift["together"]["weights"][0] == drift["together"]["weights"][1]
    # The pipeline: back-to-back microbatches shrink the measured bubble.
    bubble = seen["back-to-back"]["figure"]
    assert 0 < bubble["bubble"] < bubble["before"]
    # Data parallelism: each of two GPUs reads half the text one GPU read.
    memo = seen["together"]["memo"]
    assert memo["dp2"]["tokens_per_gpu"] * 2 == memo["one"]["tokens_per_gpu"]

    # ... and back, chapter by chapter, each on its own run again.
    for n in range(n_chapters - 1, 0, -1):
        if page.viewport_size != back[0]:
            page.set_viewport_size(back[0])
        page.keyboard.press("PageUp")
        cid = check_chapter(page, n, watch, story_server, web, lang)["chapterId"]
        page.evaluate(SETTLED_JS)
        hidden += hidden_at(page, back, n, cid, web)
    assert hidden == [], hidden
    page.keyboard.press("Escape")
    page.wait_for_function("window.trainingRun.story.chapter === null")
    assert "story=" not in page.url
    assert watch.errors == [], watch.errors
