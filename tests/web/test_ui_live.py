"""The live values the page fills into tour captions and part cards, against the names the
scene data declares (app/scenes.py CAPTION_PLACEHOLDERS, sent as the scene's `placeholders`):
every declared name gets a value, and the page computes no name that is not declared, so the
names live in one table. Real server, real page."""

from __future__ import annotations

import pytest

NAMES = """async () => {
  const { liveValues } = await import('/static/js/ui/live.js');
  const { store } = await import('/static/js/store.js');
  const spec = await (await fetch('/api/scenes/training-run')).json();
  const values = liveValues(store);
  return {
    declared: Object.keys(spec.placeholders),
    computed: Object.keys(values),
    types: Object.fromEntries(Object.entries(values).map(([k, v]) => [k, typeof v])),
    interrupted: values.interrupted_every,
    rate: store.state.hello.preset.interruptions_per_gpu_hour,
    gpus: store.state.hello.config.gpus,
  };
}"""


def test_live_values_are_exactly_the_declared_placeholders(page_at, web) -> None:
    w = page_at()
    page = w.page
    # A step and a checkpoint have arrived, so every value has something to show.
    page.wait_for_function("window.trainingRun.step >= 5", timeout=30_000)
    out = page.evaluate(NAMES)
    declared, computed = set(out["declared"]), set(out["computed"])
    assert declared, "the scene declares no placeholders"
    assert not declared - computed, f"declared but never computed: {sorted(declared - computed)}"
    assert not computed - declared, f"computed but not declared: {sorted(computed - declared)}"
    assert set(out["types"].values()) == {"string"}, out["types"]
    # How often a real job of this size would stop, at Llama 3's rate (419 in 54 days on
    # 16,384 GPUs): one GPU of it every 3.09 hours x 16,384 / GPUs.
    assert out["rate"] * 16_384 * 54 * 24 == pytest.approx(419)
    hours = 1 / (out["rate"] * out["gpus"])
    assert out["interrupted"] == f"{round(hours / 24)} days", (out["gpus"], out["interrupted"])
    assert w.errors == []


def test_a_screen_reader_hears_where_the_run_stands(page_at, web) -> None:
    """A live region nobody sees says the step in one sentence (static/js/ui/announce.js),
    the run's own numbers."""
    w = page_at()
    page = w.page
    page.wait_for_function("window.trainingRun.step >= 5")
    page.wait_for_function("document.getElementById('sr-step').textContent !== ''")
    said = page.evaluate("document.getElementById('sr-step').textContent")
    step, gpus = web.tr(page, "step"), web.tr(page, "gpus")
    assert said.startswith(f"Step {step}: loss ") and said.endswith(
        f"all {gpus} GPUs agreed on the update."
    ), said
    assert page.evaluate("document.getElementById('sr-step').getAttribute('aria-live')") == "polite"
    box = page.evaluate("document.getElementById('sr-step').getBoundingClientRect().width")
    assert box <= 1, box  # heard, not seen
    assert w.errors == []
