"""The page reads the same trace the server records: the browser's expansion of a real step's
compact trace is Python's, event for event, and the HUD's time bar is the lanes' sum."""

from __future__ import annotations

import pytest

EXPAND = """async (url) => {
  const { expandTrace, TraceView } = await import('/static/js/scene/trace.js');
  const step = window.trainingRun.stepShown.step;
  const compact = await (await fetch(`/api/steps/${step}/trace?format=compact`)).json();
  const python = await (await fetch(`/api/steps/${step}/trace?format=lanes`)).json();
  const ours = expandTrace(compact).map((lane) =>
    lane.map((e) => Object.fromEntries(Object.entries(e).filter(([, v]) => v !== null))));
  // Spot checks of the lazy reader against the full expansion, mid-event on every lane.
  const view = new TraceView(compact);
  const misses = [];
  ours.forEach((lane, g) => lane.forEach((e) => {
    const at = view.eventAt(g, e.t0 + e.dur / 2);
    const same = (k) => (at[k] ?? null) === (e[k] ?? null);
    if (!at || !same('kind') || Math.abs(at.t0 - e.t0) > 1e-9 * e.dur
        || !same('index') || !same('chunk') || !same('peer')) {
      misses.push({ g, e, at });
    }
  }));
  return { step, ours, python: python.lanes, misses: misses.slice(0, 3) };
}"""


def test_browser_expands_a_real_step_exactly_as_python_does(page_at, web) -> None:
    w = page_at()
    page = w.page
    page.wait_for_function("window.trainingRun.stepShown && window.trainingRun.stepShown.step > 1")
    out = page.evaluate(EXPAND)
    assert len(out["ours"]) == 8
    # data, forward, backward, 14 ring passes, update (and a checkpoint on some steps).
    assert all(len(lane) in (18, 19) for lane in out["ours"])
    assert out["ours"] == out["python"]
    assert out["misses"] == []
    assert w.errors == []


def test_time_bar_is_the_sum_of_the_lanes(page_at, web) -> None:
    w = page_at()
    page = w.page
    page.wait_for_function("window.trainingRun.stepShown !== null")
    shown = page.evaluate(
        """async () => {
          const { TraceView } = await import('/static/js/scene/trace.js');
          const { store } = await import('/static/js/store.js');
          const bar = document.getElementById('timebar');
          const rows = [...document.querySelectorAll('#timelegend li')]
            .filter((li) => !li.hidden).map((li) => li.textContent);
          const waits = store.state.step.trace.spans.filter((s) => s.kind === 'wait').length;
          const step = window.trainingRun.stepShown;
          return { total: Number(bar.dataset.total), step, rows, waits };
        }"""
    )
    assert shown["total"] == pytest.approx(shown["step"]["simStepS"], rel=1e-9)
    labels = " ".join(shown["rows"])
    for group in ("data", "compute", "all-reduce"):
        assert group in labels
    # In a data-parallel step only a checkpoint makes GPUs wait (for the ones writing it);
    # the row, once shown, stays in place, at 0 s for steps without one.
    waiting = [r for r in shown["rows"] if r.startswith("waiting")]
    if shown["waits"] == 0:
        assert waiting in ([], ["waiting0 s"]), shown["rows"]


# Planned runs: pipeline stages with microbatches and tensor-parallel joins (sends and
# receives between stages beside the compute), and experts shared out over two GPUs (an
# all-to-all for the tokens). The same comparison, and the lazy reader checked against it:
# mid-event the lane's work (never the send beside it) and, beside it, its transfers.
PLANS = {
    "dp2_tp2_pp2": ("--tp", "2", "--pp", "2", "--microbatches", "4", "--batch-size", "32"),
    "moe_ep2": ("--experts", "4", "--ep", "2", "--batch-size", "32"),
}

EXPAND_PLANNED = """async ([compact, python, kinds]) => {
  const { expandTrace, TraceView } = await import('/static/js/scene/trace.js');
  const ours = expandTrace(compact).map((lane) =>
    lane.map((e) => Object.fromEntries(Object.entries(e).filter(([, v]) => v !== null))));
  const view = new TraceView(compact, { kinds });
  const overlapping = new Set(kinds.filter((k) => k.overlaps).map((k) => k.kind));
  const misses = [];
  const beside = [];
  ours.forEach((lane, g) => lane.forEach((e) => {
    if (!(e.dur > 0)) return;
    const t = e.t0 + e.dur / 2;
    if (overlapping.has(e.kind)) {
      // The lane's work wins; the send or receive is among the transfers beside it.
      const at = view.eventAt(g, t);
      const same = (x, k) => (x[k] ?? null) === (e[k] ?? null);
      const found = view.transfersAt(g, t).some((x) => x.t0 === e.t0 && x.phase === e.phase
        && same(x, 'peer') && same(x, 'src') && same(x, 'mb'));
      if (!found || (at && overlapping.has(at.kind))) beside.push({ g, e, at });
      return;
    }
    const at = view.eventAt(g, t);
    const same = (k) => (at?.[k] ?? null) === (e[k] ?? null);
    if (!at || !same('kind') || Math.abs(at.t0 - e.t0) > 1e-9 * e.dur || !same('index')
        || !same('chunk') || !same('peer') || !same('src') || !same('mb') || !same('bytes')) {
      misses.push({ g, e, at });
    }
  }));
  const seconds = view.groupSeconds();
  const sum = Object.values(seconds).reduce((a, b) => a + b, 0);
  return { ours, equal: JSON.stringify(ours) === JSON.stringify(python), misses: misses.slice(0, 3),
           beside: beside.slice(0, 3), sum, stepS: compact.step_s, seconds, planned: view.planned };
}"""


def _kinds() -> list[dict]:
    from app.protocol import trace_kinds

    return [k.model_dump() for k in trace_kinds()]


def _check_planned(out: dict, python: list, *, kinds_expected: set[str]) -> None:
    assert out["ours"] == python
    assert out["misses"] == [] and out["beside"] == []
    assert out["planned"] is True
    kinds = {e["kind"] for lane in out["ours"] for e in lane}
    assert kinds_expected <= kinds, kinds
    # Every event of a planned step names its microbatch where it has one.
    assert any("mb" in e for lane in out["ours"] for e in lane)
    # The time bar is the lanes' sum: the sends beside the work add nothing.
    assert out["sum"] == pytest.approx(out["stepS"], rel=1e-9), out["seconds"]
    assert "pipeline" not in out["seconds"]


@pytest.fixture(scope="module", params=sorted(PLANS))
def planned(request, tmp_path_factory, web):
    name = request.param
    srv = web.ServerProcess(
        tmp_path_factory.mktemp(name) / "run", "--gpus", "8", "--servers", "2",
        *PLANS[name], "--speed", "4", "--checkpoint-every", "0",
    )  # fmt: skip
    srv.start(fresh=True, timeout=60)
    try:
        yield name, srv
    finally:
        srv.stop()


def test_browser_expands_a_real_planned_step_exactly_as_python_does(browser, planned, web):
    import httpx

    name, srv = planned
    w = web.open_page(browser, srv.url, viewport={"width": 800, "height": 600})
    try:
        page = w.page
        page.wait_for_function(
            "window.trainingRun.stepShown && window.trainingRun.stepShown.step > 1", timeout=60_000
        )
        step = page.evaluate("window.trainingRun.stepShown.step")
        base = f"{srv.url}/api/steps/{step}/trace"
        compact = httpx.get(f"{base}?format=compact", timeout=10).json()
        python = httpx.get(f"{base}?format=lanes", timeout=10).json()["lanes"]
        out = page.evaluate(EXPAND_PLANNED, [compact, python, _kinds()])
        if name == "dp2_tp2_pp2":
            _check_planned(out, python, kinds_expected={"p2p", "tp_allreduce", "wait", "allreduce"})
            assert len(compact["p2p"]) > 0 and len(compact["all_to_all"]) == 0
        else:
            _check_planned(out, python, kinds_expected={"all_to_all", "allreduce"})
            assert len(compact["all_to_all"]) > 0
        assert w.errors == []
    finally:
        w.page.context.close()


def test_browser_expands_an_engine_pipeline_exactly_as_python_does(page_at) -> None:
    """A deeper pipeline than the served ones, straight from the engine: 4 stages, 8
    microbatches, GPipe, two copies, experts on top."""
    import tempfile
    from dataclasses import asdict

    from app.engine.config import RunConfig
    from app.engine.trace import expand
    from app.engine.trainer import Trainer
    from app.protocol import TraceMsg

    cfg = RunConfig(
        gpus=8, servers=2, pp=4, n_layer=4, microbatches=8, batch_size=32, schedule="gpipe",
        experts=4, ep=2, checkpoint_every=0,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as d:
        trace = Trainer(cfg, d, fresh=True).train_step().trace
    compact = TraceMsg.model_validate(asdict(trace)).model_dump(mode="json")
    python = [
        [{k: v for k, v in vars(e).items() if v is not None} for e in lane]
        for lane in expand(trace)
    ]
    w = page_at(viewport={"width": 800, "height": 600})
    out = w.page.evaluate(EXPAND_PLANNED, [compact, python, _kinds()])
    _check_planned(out, python, kinds_expected={"p2p", "all_to_all", "wait", "allreduce"})
    assert w.errors == []
