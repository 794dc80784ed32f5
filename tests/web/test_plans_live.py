"""Planned runs on the page: the swap-it cards re-plan the live run (with the presenter's
rights), and the steps of the new plan arrive with the card's kinds of traffic; without the
rights a card says it cannot change the run and shows the plan the run has; a plan the
cluster cannot take is refused on the card; the HUD's plan card says the plan in words, the
bubble the step measured and each kind of traffic, and the time bar adds up to the step.
"""

from __future__ import annotations

import pytest

# Steps arriving live are what these tests watch: the module's server keeps training.
TRAINS = True

SMALL_SCREEN = {"width": 1024, "height": 768}
FULL_HD = {"width": 1920, "height": 1080}
TOKEN = "presenter-t0ken-88"
# What each live card's plan puts in a step's trace (besides data, compute and waiting).
CARD_TRAFFIC = {
    "tensor_pipeline": {"tp_allreduce", "p2p"},
    "expert": {"all_to_all"},
    "data": set(),
}
PLAN_OF = {
    "tensor_pipeline": "p && p.tp === 2 && p.pp === 2 && p.microbatches === 4 && p.experts === 0",
    "expert": "p && p.experts === 8 && p.ep === 4 && p.top_k === 2 && p.tp === 1 && p.pp === 1",
    "data": "p && p.tp === 1 && p.pp === 1 && p.experts === 0 && p.microbatches === 1",
}
TRANSFERS = {"tp_allreduce", "p2p", "all_to_all"}


def tr(page, name: str):
    return page.evaluate(f"window.trainingRun.{name}")


def open_swap(page) -> None:
    page.wait_for_function("window.trainingRunLabs !== undefined", timeout=30_000)
    page.keyboard.press("w")
    page.wait_for_selector("#lab-swap .swap-card")


def card(page, placement: str):
    return page.locator(f"#lab-swap .swap-card[data-placement={placement}]")


def test_each_live_card_replans_the_run_and_its_steps_arrive(page_at, web) -> None:
    w = page_at()
    page = w.page
    web.wait_stage(page)
    open_swap(page)
    live_cards = page.evaluate("window.trainingRunLabs.swap.live")
    assert live_cards == ["data", "tensor_pipeline", "expert"]
    assert tr(page, "plan")["dp"] == 8 and tr(page, "plan")["tp"] == 1
    for placement in ["tensor_pipeline", "expert", "data"]:
        before = tr(page, "runId")
        card(page, placement).click()
        assert page.evaluate("window.trainingRun.placement") == placement
        page.wait_for_function(
            f"(() => {{ const p = window.trainingRun.plan; return {PLAN_OF[placement]}; }})()",
            timeout=30_000,
        )
        assert tr(page, "runId") != before  # a fresh run on the new plan
        # Steps of the new plan arrive, carrying the card's kinds of traffic.
        want = sorted(CARD_TRAFFIC[placement])
        page.wait_for_function(
            "(() => { const t = window.trainingRun; return t.planStats !== null && "
            f"{want!r}.every((k) => t.stepTraceKinds.includes(k)); }})()",
            timeout=30_000,
        )
        kinds = set(tr(page, "stepTraceKinds"))
        assert kinds & TRANSFERS == CARD_TRAFFIC[placement], kinds
        assert page.evaluate("window.trainingRun.placement") == placement
        detail = page.locator("#lab-swap .swap-detail").inner_text()
        assert "The live run trains this way now." in detail
        assert card(page, placement).get_attribute("data-live") == "true"
        measured = "document.querySelector('#lab-swap .swap-measured')?.textContent"
        page.wait_for_function(f"{measured}.startsWith('This step:')", timeout=15_000)
        if placement == "tensor_pipeline":
            assert "2 copies × 2-way tensor split × 2 pipeline stages" in detail
            web.landed(page)
            web.screenshot(page, "plans_swap_tensor_pipeline")
    # Fine-tuning is shown, not run: the run and its plan stay as they are.
    run_id = tr(page, "runId")
    card(page, "finetune").click()
    assert page.evaluate("window.trainingRun.placement") == "finetune"
    detail = page.locator("#lab-swap .swap-detail").inner_text()
    assert "Shown, not run" in detail
    assert "The live run: 8 copies of the whole model (data parallel)." in detail
    # Nothing to wait for: the check is that no reset comes. Two seconds is several steps.
    page.wait_for_timeout(2000)
    assert tr(page, "runId") == run_id
    # Closing the panel leaves the scene showing the live run's plan.
    page.keyboard.press("Escape")
    assert page.evaluate("window.trainingRun.placement") == "data"
    assert w.errors == []


def test_a_plan_the_cluster_cannot_take_is_refused_on_the_card(browser, tmp_path, web) -> None:
    srv = web.ServerProcess(tmp_path / "run", "--gpus", "2", "--servers", "1", "--speed", "4")
    srv.start(fresh=True)
    try:
        w = web.open_page(browser, srv.url)
        page = w.page
        page.wait_for_function("window.trainingRun.plan !== null", timeout=30_000)
        run_id = tr(page, "runId")
        open_swap(page)
        card(page, "tensor_pipeline").click()
        page.wait_for_function("window.trainingRunLabs.swap.problem !== null", timeout=15_000)
        error = page.locator("#lab-swap .swap-detail .lab-error").inner_text()
        assert error.startswith("This cluster cannot run it:")
        assert "tp * pp (4) must divide gpus (2)" in error
        # The run goes on as it was, and the scene shows it again.
        step = tr(page, "step")
        page.wait_for_function(f"window.trainingRun.step > {step}", timeout=15_000)
        assert tr(page, "runId") == run_id and tr(page, "plan")["tp"] == 1
        assert page.evaluate("window.trainingRun.placement") == "data"
        # The browser logs nothing of its own; the refusal is the server's answer.
        assert w.errors == []
        page.context.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("viewport", [FULL_HD, SMALL_SCREEN], ids=["1920", "1024"])
def test_without_control_a_card_explains_and_shows_the_runs_plan(
    browser, tmp_path, web, viewport
) -> None:
    srv = web.ServerProcess(tmp_path / "run", *web.SMALL, "--public", "--token", TOKEN)
    srv.start(fresh=True)
    try:
        w = web.open_page(browser, srv.url, viewport=viewport)
        page = w.page
        page.wait_for_function("window.trainingRun.plan !== null", timeout=30_000)
        web.wait_stage(page)
        run_id = tr(page, "runId")
        open_swap(page)
        lede = page.locator("#lab-swap .lab-lede").inner_text()
        assert "re-planned" not in lede
        card(page, "tensor_pipeline").click()
        detail = page.locator("#lab-swap .swap-detail").inner_text()
        assert "Only the presenter can change the run" in detail
        assert "The live run: 8 copies of the whole model (data parallel)." in detail
        # The scene shows where the model would live; the run itself is untouched.
        assert page.evaluate("window.trainingRun.placement") == "tensor_pipeline"
        # Nothing to wait for: the check is that no reset comes. 2.5 s is several steps.
        page.wait_for_timeout(2500)
        assert tr(page, "runId") == run_id and tr(page, "plan")["tp"] == 1
        name = str(viewport["width"])
        web.screenshot(page, f"plans_swap_view_only_{name}")
        page.keyboard.press("Escape")
        assert page.evaluate("window.trainingRun.placement") == "data"
        assert w.errors == []
        page.context.close()
    finally:
        srv.stop()


READ_HUD = """(() => {
  const card = document.getElementById('plan-card');
  const shown = (e) => e.checkVisibility();
  return {
    trafficShown: shown(card.querySelector('.plan-traffic')),
    legendBytes: Object.fromEntries([...document.querySelectorAll('#timelegend li')]
      .filter((li) => shown(li.querySelector('.b'))).map((li) => [li.children[1].textContent,
        li.querySelector('.b').textContent])),
    hidden: card.hidden,
    layout: card.querySelector('.plan-layout').textContent,
    detail: card.querySelector('.plan-detail').textContent,
    pct: card.querySelector('.plan-bubble-pct')?.textContent ?? null,
    textbook: card.querySelector('.plan-textbook').textContent,
    traffic: [...card.querySelectorAll('.plan-traffic li')].map((li) => li.dataset.kind),
    stats: window.trainingRun.planStats,
    total: Number(document.getElementById('timebar').dataset.total),
    sim: window.trainingRun.stepShown.simStepS,
  };
})()"""


@pytest.mark.parametrize(
    ("viewport", "query"),
    [(FULL_HD, ""), (SMALL_SCREEN, ""), (FULL_HD, "?projector")],
    ids=["1920", "1024", "1920-projector"],
)
def test_the_hud_plan_card_shows_the_plan_its_bubble_and_traffic(
    browser, tmp_path, web, viewport, query
) -> None:
    srv = web.ServerProcess(
        tmp_path / "run",
        *web.SMALL,
        "--tp", "2", "--pp", "2", "--microbatches", "4", "--schedule", "1f1b",
    )  # fmt: skip
    srv.start(fresh=True)
    try:
        w = web.open_page(browser, srv.url, query, viewport=viewport)
        page = w.page
        web.wait_stage(page)
        page.wait_for_function("window.trainingRun.planStats !== null", timeout=30_000)
        # Where room is short the step panel is a drawer: the plan card is read opened.
        if page.evaluate("document.querySelector('.time-panel').classList.contains('folded')"):
            page.locator(".time-panel .drawer-toggle").click()
        hud = page.evaluate(READ_HUD)
        assert not hud["hidden"]
        assert hud["layout"].endswith("2 copies × 2-way tensor split × 2 pipeline stages")
        assert hud["detail"] == "4 microbatches, 1F1B"
        bubble = hud["stats"]["bubble_fraction"]
        assert 0 < bubble < 1
        assert hud["pct"] == f"{100 * bubble:.1f}%"
        # Beside it, the textbook's (p - 1) / (m + p - 1) = 1/5, and why the measured one
        # is larger: the tiny stage's work is short beside a hand-off on its link.
        assert hud["textbook"].startswith("Textbook, (p − 1) / (m + p − 1): 20.0%"), hud
        if bubble > 0.22:
            assert "each hand-off between stages takes" in hud["textbook"], hud["textbook"]
        assert {"p2p", "tp_allreduce"} <= set(hud["traffic"])
        assert set(hud["traffic"]) == {k for k, v in hud["stats"]["traffic_bytes"].items() if v}
        if query:
            # A projector's big type leaves no room for both: the bytes join the time legend.
            assert not hud["trafficShown"]
            assert {
                "tensor-parallel all-reduce",
                "pipeline send / receive (beside compute)",
            } <= set(hud["legendBytes"]), hud["legendBytes"]
        else:
            assert hud["trafficShown"] and hud["legendBytes"] == {}
        # The bar is the lanes' sum: pipeline sends run beside compute and are not added.
        assert hud["total"] == pytest.approx(hud["sim"], rel=1e-9)
        assert page.locator(".timebar-beside .seg-pipeline").count() == 1
        name = str(viewport["width"]) + ("_projector" if query else "")
        web.landed(page)
        web.screenshot(page, f"plans_hud_{name}")
        # The panel with the card stays clear of the loss chart below it.
        panel = page.locator(".time-panel").bounding_box()
        chart = page.locator(".chart-panel").bounding_box()
        assert panel["y"] + panel["height"] < chart["y"]
        assert w.errors == []
        page.context.close()
    finally:
        srv.stop()
