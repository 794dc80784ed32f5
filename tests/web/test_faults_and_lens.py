"""Faults at scale and the model lens on the page, in a real browser against a real server
(32 GPUs, the default cluster): each fault kind injected from the faults menu shows where it
happens in the scene and in the time bar; the lens flips the time bar from the tiny model's
communication-bound step to a 70B model's compute-bound one on 1,024 H100s, and says which
step it shows and why; an all-reduce hidden under the backward pass stays out of the bar's
sum and is labelled as such."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
SHOTS = Path("/work/helper/shots/faults-lens")
SEEN = "window.trainingRun.stageDebug.seen"
SMALL = {"width": 1024, "height": 768}


@pytest.fixture(scope="module")
def server32(tmp_path_factory, web) -> Iterator[Any]:
    srv = web.ServerProcess(
        tmp_path_factory.mktemp("run") / "run", "--speed", "2", "--checkpoint-every", "5"
    )
    srv.start(fresh=True, timeout=90)
    try:
        yield srv
    finally:
        srv.stop()


class Opened:
    """A page and the errors it logs (as conftest's PageWatch), opened with patience: this
    page loads the whole scene, and a busy test machine can take a while."""

    def __init__(self, browser, url: str, viewport: dict[str, int]) -> None:
        self.page = browser.new_context(viewport=viewport).new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.set_default_timeout(60_000)
        self.page.goto(url)
        self.page.wait_for_function(
            "window.trainingRun && window.trainingRun.connection === 'open'", timeout=120_000
        )


@pytest.fixture
def page_on(browser, server32) -> Iterator[Opened]:
    opened: list[Opened] = []

    def _open(viewport: dict[str, int] = SMALL) -> Opened:
        w = Opened(browser, server32.url, viewport)
        opened.append(w)
        return w

    yield _open
    for w in opened:
        w.page.context.close()


def shot(page, name: str) -> None:
    """A screenshot in tests/web/screenshots (and beside the others looked at, when there)."""
    path = SCREENSHOTS / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), timeout=240_000)
    if SHOTS.parent.is_dir():
        SHOTS.mkdir(exist_ok=True)
        shutil.copy(path, SHOTS / path.name)


READ = """() => ({
  source: document.getElementById('timebar').dataset.source,
  shares: JSON.parse(document.getElementById('timebar').dataset.shares || '{}'),
  title: document.querySelector('.time-panel .panel-head h2').innerText,
  which: document.getElementById('time-which').innerText,
  why: document.getElementById('time-why').innerText,
  hidden: document.getElementById('time-hidden').innerText,
  computeBasis: parseFloat(document.querySelector('.seg-compute').style.flexBasis),
})"""


def communication(s: dict[str, float]) -> float:
    return s.get("tensor", 0) + s.get("experts", 0) + s.get("allreduce", 0)


def choose_lens(page, model: str, gpus: str) -> None:
    page.evaluate(
        """([model, gpus]) => {
          const m = document.getElementById('lens-model');
          const g = document.getElementById('lens-gpus');
          m.value = model;
          if (model) g.value = gpus;
          m.dispatchEvent(new Event('change'));
        }""",
        [model, gpus],
    )


def test_the_lens_flips_the_bar_from_communication_to_compute(page_on) -> None:
    page = page_on(SMALL).page
    # A plain step (one that writes a checkpoint is mostly the others waiting for the writers).
    plain = f"""() => {{
      const kinds = window.trainingRun.stepTraceKinds;
      const bar = document.getElementById('timebar').dataset.source;
      return bar === 'live' && kinds.length && !kinds.includes('checkpoint') ? ({READ})() : null;
    }}"""
    live = page.wait_for_function(plain, timeout=90_000).json_value()
    assert communication(live["shares"]) > 0.5, live
    assert live["why"].startswith("Communication-bound"), live
    assert live["which"].startswith("Live step") and live["title"] == "One step, simulated"
    shot(page, "lens_off_1024x768")

    choose_lens(page, "70B", "1024")
    page.wait_for_function(
        "document.getElementById('timebar').dataset.source === 'lens:70B:1024'", timeout=60_000
    )
    lens = page.evaluate(READ)
    assert lens["shares"]["compute"] > 0.8, lens
    assert lens["title"] == "What this step would cost for a Llama 3 70B model"
    assert lens["which"].startswith("Not the live run") and "1,024×" in lens["which"], lens
    assert lens["why"].startswith("Compute-bound"), lens
    # Its memory per GPU: the sharded training state and the first stage's activations.
    assert (
        "Memory per GPU: 32.8 GB = 9.9 GB of weights, gradients and optimizer state" in lens["why"]
    ), lens
    assert "(the attention’s scores recomputed)" in lens["why"] and "238 GB." in lens["why"]
    # The bar itself: the compute segment takes most of it.
    assert lens["computeBasis"] > 75, lens
    # The gradient all-reduce mostly hides under the backward: beside the bar, not in it.
    assert lens["hidden"].startswith("All-reduce hidden under backward"), lens
    shot(page, "lens_70b_1024x768")

    choose_lens(page, "", "")
    page.wait_for_function(
        "document.getElementById('timebar').dataset.source === 'live'", timeout=60_000
    )
    assert page.evaluate(READ)["title"] == "One step, simulated"


TOTAL = "document.getElementById('time-total').innerText"


def test_the_lens_lays_the_step_out_with_the_schedule_chosen(page_on) -> None:
    """Llama 3 405B on 16,384 GPUs (its published tp 8 x pp 16): 1F1B leaves a wide bubble;
    interleaved 1F1B with 4 chunks of layers a stage narrows it, so the step is shorter and
    more of the peak is used; the plan names the schedule. A schedule the lens cannot lay
    out (interleaving on a model with one stage) is refused in words."""
    page = page_on(SMALL).page
    page.wait_for_function("window.trainingRun.stageReady")
    page.locator(".time-panel .drawer-toggle").click()  # the drawer holds the lens at 1024
    choose_lens(page, "405B", "16384")
    page.wait_for_function(
        "document.getElementById('timebar').dataset.source === 'lens:405B:16384'"
        " && document.getElementById('time-which').dataset.lens === '405B:priced'",
        timeout=60_000,
    )
    plain = page.evaluate(READ) | {"total": page.evaluate(TOTAL)}
    assert ", 1F1B" in plain["which"], plain["which"]
    page.select_option("#lens-schedule", "interleaved:4")
    page.wait_for_function(
        "document.getElementById('time-which').innerText.includes('interleaved 1F1B, 4 chunks')"
        " && document.getElementById('time-which').dataset.lens === '405B:priced'",
        timeout=60_000,
    )
    woven = page.evaluate(READ) | {"total": page.evaluate(TOTAL)}
    assert woven["shares"]["wait"] < plain["shares"]["wait"], (plain["shares"], woven["shares"])
    mfu = lambda r: float(re.search(r"([\d.]+)% of peak", r["total"]).group(1))  # noqa: E731
    assert mfu(woven) > mfu(plain), (plain["total"], woven["total"])
    shot(page, "lens_405b_interleaved_1024x768")
    # Llama 3 8B trains on one stage: nothing to interleave, and the lens says why.
    choose_lens(page, "8B", "1024")
    page.wait_for_function(
        "document.getElementById('time-which').dataset.lens === '8B:refused'", timeout=60_000
    )
    assert "at least 2 stages" in page.evaluate(READ)["which"]


HIDDEN_STEP = """async () => {
  // A step whose first gradient bucket starts while the backward is still going, as a larger
  // model's does (app/engine/gradsync.py): the live step with a copy of its ring moved
  // beside the end of the backward as "allreduce_hidden". Read in one go, before the next
  // live step replaces it.
  const { store } = await import('/static/js/store.js');
  const before = Number(document.getElementById('timebar').dataset.total);
  const step = JSON.parse(JSON.stringify(store.state.step));
  const ring = step.trace.rings.find((r) => r.kind === 'allreduce');
  const back = step.trace.spans.find((s) => s.kind === 'backward');
  const hiddenS = ring.pass_s.reduce((a, [s, n]) => a + s * n, 0);
  step.trace.rings.push({ ...ring, kind: 'allreduce_hidden', t0: back.t0 + back.dur - hiddenS });
  step.seq += 1;
  step.step += 1;
  store.apply(step);
  const rows = [...document.querySelectorAll('.timelegend li.beside')];
  const row = rows.find((li) => li.innerText.includes('hidden under backward'));
  return {
    before,
    after: Number(document.getElementById('timebar').dataset.total),
    hiddenS,
    row: row ? { hidden: row.hidden, text: row.innerText } : null,
    legend: document.querySelector('.timelegend').innerText,
    width: parseFloat(document.querySelector('.timebar-beside .seg-allreduce_hidden').style.width),
    note: document.getElementById('time-hidden').innerText,
    assumption: document.getElementById('time-assumption').innerText,
  };
}"""


def test_the_hud_keeps_a_hidden_all_reduce_out_of_the_bar(page_on) -> None:
    page = page_on(SMALL).page
    page.wait_for_function(
        "document.getElementById('timebar').dataset.source === 'live'", timeout=90_000
    )
    got = page.evaluate(HIDDEN_STEP)
    # Not added: the bar's sum is the same step's, whatever ran beside the backward.
    assert got["after"] == pytest.approx(got["before"], rel=1e-6)
    assert got["hiddenS"] > 0
    assert got["row"] and not got["row"]["hidden"], got
    assert "exposed" in got["legend"]
    assert got["width"] > 0
    assert got["note"].startswith("All-reduce hidden under backward") and "not added" in got["note"]
    assert "BF16" in got["assumption"]


FAULTS = [
    # kind, target, what the scene shows while it acts (stage debug counters)
    ("straggler", "5", f"{SEEN}.stragglerLate > 0"),
    ("data_stall", "5", f"{SEEN}.loaderStalled > 0"),
    ("link", "1", f"{SEEN}.maxRingCut >= 1 && {SEEN}.maxRingDetours >= 1"),
    ("dead", "6", f"{SEEN}.maxFailed >= 1 && window.trainingRun.rollbacks >= 1"),
]
NOTE = {"straggler": "slower", "data_stall": "stall", "link": "cut"}


def inject(page, kind: str, target: str) -> None:
    page.evaluate(
        """([kind, target]) => {
          document.getElementById('btn-faults').click();
          document.querySelector(`.fault-kinds button[data-kind=${kind}]`).click();
          document.getElementById('fault-target').value = target;
          document.getElementById('fault-steps').value = '10';
          document.getElementById('fault-go').click();
        }""",
        [kind, target],
    )


@pytest.mark.parametrize(("kind", "target", "shown"), FAULTS, ids=[f[0] for f in FAULTS])
def test_each_fault_is_shown_where_it_happens(page_on, server32, web, kind, target, shown) -> None:
    w = page_on(SMALL)
    page = w.page
    web.wait_stage(page, timeout=90_000)
    page.wait_for_function("window.trainingRun.step >= 6", timeout=90_000)
    # The moment the others wait for a slow GPU is short, and a busy page can play past the
    # fault's steps before it draws one: the run waits paused, takes the first step the fault
    # acts on, and slow motion replays that step block by block.
    straggler = kind == "straggler"
    if straggler:
        web.control(server32, action="pause")
        page.wait_for_function("window.trainingRun.runState === 'paused'", timeout=30_000)
    try:
        before = len(web.tr(page, "faults"))
        inject(page, kind, target)
        assert page.evaluate("!document.getElementById('faults').hidden")
        page.wait_for_function(f"window.trainingRun.faults.length === {before + 1}", timeout=30_000)
        fault = web.tr(page, "faults")[-1]
        assert fault["kind"] == kind and fault["target"] == int(target)
        page.evaluate("document.getElementById('btn-faults').click()")  # the menu closes
        assert page.evaluate("document.getElementById('faults').hidden")
        if straggler:
            web.control(server32, action="step")
            page.wait_for_function(
                f"window.trainingRun.stageDebug.sceneStep >= {fault['start']}", timeout=30_000
            )
            page.wait_for_function("!window.trainingRun.stageDebug.playing", timeout=60_000)
            page.evaluate("document.getElementById('btn-slow').click()")
        if kind in NOTE:
            # In the time bar: the fault named over it, and the time it costs in the bar.
            page.wait_for_function(
                "document.querySelector('#fault-note li.acting')"
                f"?.innerText.includes('{NOTE[kind]}')",
                timeout=30_000,
            )
            assert page.evaluate("document.querySelectorAll('.time-panel.faulted').length") == 1
            if kind != "link":
                page.wait_for_function(
                    "JSON.parse(document.getElementById('timebar').dataset.shares).wait > 0.1",
                    timeout=30_000,
                )
        page.wait_for_function(shown, timeout=120_000)
        shot(page, f"fault_{kind}_1024x768")
    finally:
        if straggler:
            web.control(server32, action="resume")
    assert w.errors == []


def test_bad_fault_input_gets_a_clear_error_and_the_run_goes_on(page_on, web) -> None:
    page = page_on(SMALL).page
    page.wait_for_function("window.trainingRun.step >= 1", timeout=90_000)
    page.evaluate(
        """() => {
          document.getElementById('btn-faults').click();
          document.querySelector('.fault-kinds button[data-kind=straggler]').click();
          const t = document.getElementById('fault-target');
          t.append(new Option('GPU 99', '99'));
          t.value = '99';
          document.getElementById('fault-go').click();
        }"""
    )
    toast = page.locator(".toast-error", has_text="gpu must be between 0 and 31").first
    toast.wait_for(timeout=20_000)
    shot(page, "fault_refused_1024x768")
    step = web.tr(page, "step")
    page.wait_for_function(f"window.trainingRun.step > {step}", timeout=30_000)


def test_the_cost_panel_shows_interruptions_and_the_whole_run_estimate(page_on) -> None:
    page = page_on(SMALL).page
    page.wait_for_function("window.trainingRunLabs !== undefined", timeout=60_000)
    page.keyboard.press("c")
    page.wait_for_function(
        "window.trainingRunLabs.cost && window.trainingRunLabs.cost.estimate", timeout=60_000
    )
    got = page.evaluate(
        """() => ({
          info: window.trainingRunLabs.cost,
          outs: document.querySelector('#lab-cost .cost-outs').innerText,
          estimate: document.getElementById('cost-estimate').innerText,
          rules: document.getElementById('cost-estimate-rules').innerText,
        })"""
    )
    e = got["info"]["estimate"]
    # The figures on screen are the server's (app/labs/cost.py `estimate`).
    assert f"{e['flops']:.2e}" in got["estimate"]
    assert "GPU-hours" in got["estimate"] and "MWh" in got["estimate"]
    assert "Interruptions" in got["estimate"] and "a day" in got["outs"]
    assert "419 in 54 days on 16,384 H100s" in got["rules"]
    shot(page, "cost_estimate_1024x768")
