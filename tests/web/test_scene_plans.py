"""The scene plays whatever the plan does, in a real browser on real planned runs.

Two runs of 8 GPUs on 2 servers: 2 copies x 2-way tensor split x 2 pipeline stages with 4
microbatches (1F1B), and 8 copies with 4 experts per layer shared out over pairs of GPUs. During
a step the pipeline's hand-offs climb up and come back down, the tensor-parallel joins flash,
idle stages wait hatched, and tokens travel to their experts; every GPU wears its role from
hello.roles; the placement is the live plan's; draw calls stay within the data-parallel run's
plus a constant and do not grow from 8 to 64 GPUs; a deep pipeline with many microbatches plays
without any GPU flashing; slow motion names the new kinds of work; a failure is still staged;
a reset that re-plans the run re-draws the roles. Screenshots of each plan at 1920x1080,
1024x768 and in projector mode are saved under tests/web/screenshots/.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from pageclock import page_clock

DEBUG = "window.trainingRun.stageDebug"
SMALL_VIEW = {"width": 1024, "height": 768}
BIG_VIEW = {"width": 1920, "height": 1080}
PIPELINE = ("--tp", "2", "--pp", "2", "--microbatches", "4", "--batch-size", "32")
EXPERTS = ("--experts", "4", "--ep", "2", "--batch-size", "32")
# What a planned step may draw beyond a data-parallel one: the hand-offs' capsules and their
# streaks, the joins' bridges and sparks, the tokens, and the role plates, brackets and words.
EXTRA_DRAW_CALLS = 8


def _server(web, tmp_path_factory, name: str, *args: str):
    srv = web.ServerProcess(
        tmp_path_factory.mktemp(name) / "run", "--gpus", "8", "--servers", "2", *args,
        "--speed", "2", "--checkpoint-every", "5",
    )  # fmt: skip
    return srv.start(fresh=True, timeout=90)


@pytest.fixture(scope="module")
def pipeline(web, tmp_path_factory):
    srv = _server(web, tmp_path_factory, "pipeline", *PIPELINE)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def experts(web, tmp_path_factory):
    srv = _server(web, tmp_path_factory, "experts", *EXPERTS)
    yield srv
    srv.stop()


@pytest.fixture
def open_at(browser, web):
    opened = []

    def _open(srv, query: str = "", viewport=SMALL_VIEW, clock: float | None = None):
        if clock is not None:
            ctx = browser.new_context(viewport=viewport)
            ctx.add_init_script(page_clock(clock))
            w = _Watch(ctx.new_page())
            w.page.goto(f"{srv.url}/{query}")
            w.page.wait_for_function(
                "window.trainingRun && window.trainingRun.connection === 'open'"
            )
        else:
            w = web.open_page(browser, srv.url, query, viewport=viewport)
        opened.append(w)
        web.wait_stage(w.page, timeout=90_000)
        return w

    yield _open
    for w in opened:
        w.page.context.close()


class _Watch:
    """A page and the errors it reports (the fixture's PageWatch, for a page opened here)."""

    def __init__(self, page) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))


def _control(srv, **body) -> dict:
    r = httpx.post(f"{srv.url}/api/run/control", json={"type": "control", **body}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _hello(page) -> dict:
    return page.evaluate(
        "import('/static/js/store.js')"
        ".then(({ store }) => JSON.parse(JSON.stringify(store.state.hello)))"
    )


def _wait_seen(page, condition: str, timeout: float = 90_000) -> dict:
    try:
        page.wait_for_function(
            f"(() => {{ const s = {DEBUG}.seen; return {condition}; }})()", timeout=timeout
        )
    except Exception:
        raise AssertionError(page.evaluate(f"{DEBUG}.seen")) from None
    return page.evaluate(f"{DEBUG}.seen")


def _expected_tag(role: dict, plan: dict) -> str:
    parts = []
    if plan["pp"] > 1:
        parts.append(f"S{role['stage'] + 1}")
    a, b = role["experts"]
    if plan["ep"] > 1 and b > a:
        parts.append(f"E{a + 1}" if b - a == 1 else f"E{a + 1}–{b}")
    return " ".join(parts)


def _gpu_view(page, web, name: str) -> None:
    """The GPU servers' view, once the flight there is over, then a screenshot."""
    page.keyboard.press("2")
    web.landed(page)
    web.screenshot(page, name)


def test_a_pipeline_step_hands_off_joins_and_waits(pipeline, open_at, web) -> None:
    w = open_at(pipeline)
    seen = _wait_seen(
        w.page,
        "s.steps >= 1 && s.handoffs > 0 && s.maxHandoffsUp > 0 && s.maxHandoffsDown > 0"
        " && s.tpJoins > 0 && s.maxWaiting > 0 && s.forward > 0 && s.backward > 0",
    )
    # Both copies' pipelines hand off at once: one capsule per tensor rank and copy.
    assert seen["maxHandoffs"] >= 2, seen
    # Each TP group joins: one bridge per (copy, stage), up to four lit at once.
    assert 1 <= seen["maxTpJoins"] <= 4, seen
    # One data-parallel ring per (stage, tensor rank), from the step's own trace.
    assert w.page.evaluate(f"{DEBUG}.rings") == 4
    assert not w.errors, w.errors


def test_tokens_travel_to_their_experts(experts, open_at) -> None:
    w = open_at(experts)
    seen = _wait_seen(w.page, "s.steps >= 1 && s.tokens > 0 && s.forward > 0 && s.backward > 0")
    # Every GPU of every expert pair sends a train of tokens to its partner.
    assert seen["maxTokens"] >= 8, seen
    assert seen["handoffs"] == 0 and seen["tpJoins"] == 0, seen
    assert not w.errors, w.errors


@pytest.mark.parametrize("which", ["pipeline", "experts"])
def test_every_gpu_wears_its_role_from_hello(which, request, open_at) -> None:
    srv = request.getfixturevalue(which)
    w = open_at(srv)
    hello = _hello(w.page)
    plan, roles = hello["plan"], hello["roles"]
    w.page.wait_for_function(f"{DEBUG} && {DEBUG}.roleTags && {DEBUG}.roleTags.length === 8")
    tags = w.page.evaluate(f"{DEBUG}.roleTags")
    assert tags == [{"gpu": r["gpu"], "text": _expected_tag(r, plan)} for r in roles]
    assert all(t["text"] for t in tags)
    plates = w.page.evaluate(f"{DEBUG}.rolePlates")
    if which == "pipeline":
        # One plate per tensor-parallel group: each (copy, stage).
        assert plates == plan["dp"] * plan["pp"] == 4
        assert {t["text"] for t in tags} == {"S1", "S2"}
    else:
        # One per pair of GPUs sharing out the experts.
        assert plates == plan["dp"] // plan["ep"] == 4
        assert {t["text"] for t in tags} == {"E1–2", "E3–4"}
    assert not w.errors, w.errors


def test_a_data_parallel_run_shows_no_roles(page_at, web) -> None:
    w = page_at(viewport=SMALL_VIEW)
    web.wait_stage(w.page)
    w.page.wait_for_function(f"{DEBUG} && {DEBUG}.roleTags !== undefined")
    dbg = w.page.evaluate(DEBUG)
    assert dbg["roleTags"] == [] and dbg["rolePlates"] == 0 and dbg["roleTagsShown"] is False
    assert dbg["rings"] == 1
    assert not w.errors, w.errors


@pytest.mark.parametrize("which", ["pipeline", "experts"])
def test_the_placement_shown_is_the_live_plans(which, request, open_at) -> None:
    srv = request.getfixturevalue(which)
    w = open_at(srv)
    hello = _hello(w.page)
    # "Swap it" open: the model's stacks show, and they are the live plan's, from its roles.
    w.page.evaluate(
        "import('/static/js/store.js').then(({ store }) => store.set('placementPreview', true))"
    )
    w.page.wait_for_function(f"{DEBUG}.placementSlabs > 0")
    dbg = w.page.evaluate(DEBUG)
    assert dbg["placementLive"] is True
    layers = sum(r["layers"][1] - r["layers"][0] for r in hello["roles"])
    experts = sum(min(4, r["experts"][1] - r["experts"][0]) for r in hello["roles"])
    assert dbg["placementSlabs"] == layers + experts
    assert not w.errors, w.errors


def _one_step_draw_calls(browser, web, srv) -> tuple[int, int]:
    """The most draw calls any frame of one whole step needed, and the scene's objects. The
    server starts paused, so the page draws nothing before the one step it is shown."""
    w = web.open_page(browser, srv.url, viewport=SMALL_VIEW)
    try:
        web.wait_stage(w.page, timeout=90_000)
        w.page.wait_for_function("window.trainingRun.runState === 'paused'", timeout=30_000)
        w.page.wait_for_function(f"!{DEBUG}.playing", timeout=60_000)
        steps = w.page.evaluate(f"{DEBUG}.seen.steps")
        _control(srv, action="step")
        w.page.wait_for_function(f"{DEBUG}.seen.steps > {steps}", timeout=60_000)
        w.page.wait_for_function(f"!{DEBUG}.playing", timeout=90_000)
        dbg = w.page.evaluate(DEBUG)
        assert not w.errors, w.errors
        return dbg["seen"]["maxDrawCalls"], dbg["drawables"]
    finally:
        w.page.context.close()


def test_draw_calls_stay_near_data_parallel_and_flat_from_8_to_64_gpus(browser, web, tmp_path):
    runs = {
        "dp8": ("--gpus", "8", "--servers", "2", "--batch-size", "32"),
        "plan8": ("--gpus", "8", "--servers", "2", *PIPELINE),
        "plan64": (
            "--gpus", "64", "--servers", "16", "--tp", "2", "--pp", "2",
            "--microbatches", "4", "--batch-size", "128",
        ),
    }  # fmt: skip
    servers = {
        name: web.ServerProcess(tmp_path / name, *args, "--paused", "--checkpoint-every", "0")
        for name, args in runs.items()
    }
    try:
        # The three start side by side; the page then looks at one at a time.
        with ThreadPoolExecutor(len(servers)) as pool:
            for started in [
                pool.submit(s.start, fresh=True, timeout=120) for s in servers.values()
            ]:
                started.result()
        (dp, _), (plan8, objects8), (plan64, objects64) = (
            _one_step_draw_calls(browser, web, servers[name]) for name in runs
        )
    finally:
        for srv in servers.values():
            srv.stop()
    print(f"draw calls: data parallel {dp}, planned 8 GPUs {plan8}, planned 64 GPUs {plan64}")
    assert 0 < dp and plan8 <= dp + EXTRA_DRAW_CALLS, (dp, plan8)
    assert plan64 <= dp + EXTRA_DRAW_CALLS, (dp, plan64)
    # Which parts happen to be lit in the same frame varies a little from step to step; the
    # ceiling (every object the scene holds) does not grow at all.
    assert plan64 <= plan8 * 1.1, (plan8, plan64)
    assert objects64 == objects8


# A deep pipeline from the engine: 4 stages, 8 microbatches, GPipe, 2 copies (16 GPUs).
PLAY = """async ([trace, kinds]) => {
  const { Timeline } = await import('/static/js/scene/timeline.js');
  const tl = new Timeline();
  tl.setKinds(kinds);
  tl.onStep({ step: 1, trace, events: [] }, 0, 'lesson');
  const lanes = Array.from({ length: trace.gpus }, () => []);
  let t = 0;
  for (; t < 60000; t += 1000 / 60) {
    const s = tl.at(t);
    if (!s.active) { if (t > 100) break; continue; }
    for (let g = 0; g < trace.gpus; g++) {
      const show = s.lane(g)?.show ?? null;
      const seq = lanes[g];
      if (!seq.length || seq[seq.length - 1].show !== show) seq.push({ show, t });
    }
  }
  const runs = tl.paced.runs.map((lane) => lane.map((u) => u.show));
  return { lanes, runs, duration: tl.duration, blocks: tl.blocks.length, ended: t };
}"""


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_a_deep_pipeline_with_many_microbatches_plays_readably(page_at, schedule) -> None:
    import tempfile
    from dataclasses import asdict

    from app.engine.config import RunConfig
    from app.engine.trainer import Trainer
    from app.protocol import TraceMsg, trace_kinds

    cfg = RunConfig(
        gpus=16, servers=2, pp=4, n_layer=4, microbatches=8, batch_size=64, schedule=schedule,
        checkpoint_every=0,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as d:
        trace = Trainer(cfg, d, fresh=True).train_step().trace
    compact = TraceMsg.model_validate(asdict(trace)).model_dump(mode="json")
    w = page_at(viewport={"width": 800, "height": 600})
    out = w.page.evaluate(PLAY, [compact, [k.model_dump() for k in trace_kinds()]])
    # A whole step in a few seconds, in a few dozen blocks at most.
    assert 2.0 <= out["duration"] <= 15.0, out["duration"]
    assert out["blocks"] <= 40, out["blocks"]
    for g, seq in enumerate(out["lanes"]):
        shows = [x["show"] for x in seq if x["show"] is not None]
        # Every run of every lane plays, in its true order: none skipped.
        assert shows == out["runs"][g], (g, shows, out["runs"][g])
        # No GPU changes what it shows more than three times in any one second.
        times = [x["t"] for x in seq]
        for i in range(len(times) - 3):
            assert times[i + 3] - times[i] >= 1000, (g, seq)
    # The pipeline is visible as such: stages start one after another and wait between.
    first_forward = [
        next(x["t"] for x in seq if x["show"] == "forward") for seq in out["lanes"][:4]
    ]
    assert first_forward == sorted(first_forward) and first_forward[0] < first_forward[3]
    assert all("wait" in runs for runs in out["runs"][1:4])
    assert not w.errors


def _slow_step(page, timeout: float = 150_000) -> list[dict]:
    page.keyboard.press("o")
    page.wait_for_function("window.trainingRun.slowMotion", timeout=5_000)
    page.wait_for_function("!window.trainingRun.slowMotion", timeout=timeout)
    return page.evaluate(f"{DEBUG}.seen.slowBlocks")


def _play_out_fast(page) -> list[dict]:
    """The rest of a slow-motion step, at four times real time on a small view (its pictures
    are taken): every block's time is still measured on the page's own clock."""
    page.set_viewport_size(SMALL_VIEW)
    page.evaluate("window.__clockRate(4)")
    page.wait_for_function("!window.trainingRun.slowMotion", timeout=150_000)
    return page.evaluate(f"{DEBUG}.seen.slowBlocks")


def test_slow_motion_names_hand_offs_joins_and_waiting(pipeline, open_at, web) -> None:
    w = open_at(pipeline, viewport=BIG_VIEW, clock=1.0)
    page = w.page
    page.wait_for_function("window.trainingRun.step > 0", timeout=30_000)
    page.keyboard.press("2")
    # A hand-off in slow motion, seen from the GPU servers' view.
    page.keyboard.press("o")
    _capture(
        page,
        web,
        f"{DEBUG}.handoffs > 0 && {DEBUG}.waiting > 0",
        "plan_pipeline_slow_handoff_1920",
        2,
        between=2.0,
    )
    _capture(page, web, f"{DEBUG}.tpJoins > 0", "plan_pipeline_slow_join_1920", 2, between=2.0)
    blocks = _play_out_fast(page)
    said = " ".join(f"{b['caption']} {b['also']}" for b in blocks)
    for words in (
        "Pipeline hand-off",
        "Tensor-parallel join",
        "Waiting for a turn",
        "Forward",
        "Backward",
    ):
        assert words in said, (words, [(b["kind"], b["caption"][:40], b["also"]) for b in blocks])
    assert len({b["seq"] for b in blocks}) == 1
    assert all(b["ms"] >= 1500 for b in blocks[:-1]), [(b["kind"], b["ms"]) for b in blocks]
    assert not w.errors, w.errors


def test_slow_motion_names_tokens_to_experts(experts, open_at, web) -> None:
    w = open_at(experts, viewport=BIG_VIEW, clock=1.0)
    page = w.page
    page.wait_for_function("window.trainingRun.step > 0", timeout=30_000)
    page.keyboard.press("2")
    page.keyboard.press("o")
    _capture(page, web, f"{DEBUG}.tokens > 0", "plan_experts_slow_tokens_1920", 2, between=2.0)
    blocks = _play_out_fast(page)
    said = " ".join(f"{b['caption']} {b['also']}" for b in blocks)
    assert "Tokens to experts" in said, [(b["kind"], b["also"]) for b in blocks]
    assert not w.errors, w.errors


@pytest.mark.parametrize(
    ("which", "viewport", "query", "name"),
    [
        ("pipeline", BIG_VIEW, "", "plan_pipeline_1920"),
        ("pipeline", SMALL_VIEW, "", "plan_pipeline_1024"),
        ("pipeline", BIG_VIEW, "?projector", "plan_pipeline_projector"),
        ("experts", BIG_VIEW, "", "plan_experts_1920"),
        ("experts", SMALL_VIEW, "", "plan_experts_1024"),
        ("experts", BIG_VIEW, "?projector", "plan_experts_projector"),
    ],
)
def test_screenshots_of_each_plan(which, viewport, query, name, request, open_at, web) -> None:
    srv = request.getfixturevalue(which)
    w = open_at(srv, query, viewport=viewport, clock=0.25)
    page = w.page
    web.screenshot(page, f"{name}_overview")
    # Up close, during the moment that tells the plan apart, the GPUs wearing their roles:
    # the flight and the wait at twice real time, the picture at a quarter.
    page.evaluate("window.__clockRate(2)")
    page.keyboard.press("2")
    web.landed(page, timeout=30_000)
    moment = f"{DEBUG}.handoffs > 0" if which == "pipeline" else f"{DEBUG}.tokens > 0"
    _capture(page, web, f"{moment} && {DEBUG}.roleTagsShown", f"{name}_gpus", between=2.0)
    assert not w.errors, w.errors


def _capture(page, web, moment: str, name: str, tries: int = 6, between: float = 0.0) -> None:
    """A screenshot during `moment`: taken once it holds, and again (a few times at most)
    when it was over before the picture was. With `between`, the page's clock runs that many
    times real time while the test waits for the moment, and at a quarter while the picture
    is taken (on a page opened with the test's clock)."""
    for _ in range(tries):
        if between:
            page.evaluate(f"window.__clockRate({between})")
        page.wait_for_function(moment, timeout=90_000)
        if between:
            page.evaluate("window.__clockRate(0.25)")
        web.screenshot(page, name)
        if page.evaluate(moment):
            return
        page.wait_for_function(f"!({moment})", timeout=90_000)


def test_a_failure_is_staged_on_a_planned_run(pipeline, open_at, web) -> None:
    w = open_at(pipeline)
    page = w.page
    page.wait_for_function("window.trainingRun.step >= 6", timeout=90_000)
    page.keyboard.press("2")
    _control(pipeline, action="fail_gpu", gpu=2)
    _wait_seen(page, "s.maxFailed > 0 && s.stallMs > 1000", timeout=30_000)
    web.screenshot(page, "plan_pipeline_failure")
    # Then the weights flow back from the checkpoints.
    _wait_seen(page, "s.maxReloading > 0", timeout=30_000)
    # Afterwards the pipeline plays on.
    before = page.evaluate(f"{DEBUG}.seen.handoffs")
    page.wait_for_function(f"{DEBUG}.seen.handoffs > {before}", timeout=90_000)
    assert not w.errors, w.errors


def test_a_reset_that_re_plans_the_run_re_draws_the_roles(experts, open_at) -> None:
    w = open_at(experts)
    page = w.page
    page.wait_for_function(f"{DEBUG}.roleTags && {DEBUG}.roleTags.length === 8")
    run = page.evaluate("window.trainingRun.runId")
    _control(experts, action="reset", tp=2, pp=2, ep=1, experts=0, microbatches=4)
    page.wait_for_function(f"window.trainingRun.runId !== '{run}'", timeout=60_000)
    page.wait_for_function(
        f"{DEBUG}.roleTags && {DEBUG}.roleTags.length === 8 && {DEBUG}.roleTags[2].text === 'S2'",
        timeout=30_000,
    )
    hello = _hello(page)
    tags = page.evaluate(f"{DEBUG}.roleTags")
    assert tags == [
        {"gpu": r["gpu"], "text": _expected_tag(r, hello["plan"])} for r in hello["roles"]
    ]
    # The new plan's steps play: hand-offs, and one ring per data-parallel group.
    _wait_seen(page, "s.handoffs > 0")
    page.wait_for_function(f"{DEBUG}.rings === 4", timeout=30_000)
    assert not w.errors, w.errors
