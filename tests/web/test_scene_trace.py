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
        """() => {
          const bar = document.getElementById('timebar');
          const rows = [...document.querySelectorAll('#timelegend li')]
            .filter((li) => !li.hidden).map((li) => li.textContent);
          return { total: Number(bar.dataset.total), step: window.trainingRun.stepShown, rows };
        }"""
    )
    assert shown["total"] == pytest.approx(shown["step"]["simStepS"], rel=1e-9)
    labels = " ".join(shown["rows"])
    for group in ("data", "compute", "all-reduce"):
        assert group in labels
    assert "waiting" not in labels  # nothing waits in a data-parallel step
