"""The step timeline (static/js/scene/timeline.js), driven with made-up clocks in a real page.

It decides what the scene shows when: phases in order and in proportion, no phase skipped on
slow frames, no backlog when steps come fast, and no colour flashing faster than 3 times a
second at full speed. It imports nothing, so it runs in a plain page without WebGL.
"""

from __future__ import annotations

import pytest

PHASES = [
    {"name": "data", "sim_s": 0.001, "wall_s": 0.0},
    {"name": "forward", "sim_s": 0.010, "wall_s": 0.0},
    {"name": "backward", "sim_s": 0.020, "wall_s": 0.0},
    {"name": "allreduce", "sim_s": 0.060, "wall_s": 0.0},
    {"name": "optimizer", "sim_s": 0.0005, "wall_s": 0.0},
    {"name": "checkpoint", "sim_s": 0.0, "wall_s": 0.0},
]

RUN = """async ([phases, script]) => {
  const { Timeline } = await import('/static/js/scene/timeline.js');
  const tl = new Timeline();
  const step = (n, events = []) => ({ step: n, phases, events });
  return (new Function('tl', 'step', script))(tl, step);
}"""


@pytest.fixture
def run(browser, server):
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(f"{server.url}/api/health")
    yield lambda script: page.evaluate(RUN, [PHASES, script])
    ctx.close()


def test_phases_play_in_order_in_proportion_within_the_step(run) -> None:
    out = run(
        """
        tl.onStep(step(1), 0, 'lesson');
        const seen = [];
        for (let t = 0; t <= 3000; t += 10) {
          const s = tl.at(t);
          if (s.phase && seen[seen.length - 1]?.phase !== s.phase) seen.push({phase: s.phase, t});
        }
        return { seen, duration: tl.duration, slices: tl.slices, playing: tl.playing };
        """
    )
    names = [s["phase"] for s in out["seen"]]
    # No checkpoint phase: this step saved nothing.
    assert names == ["data", "forward", "backward", "allreduce", "optimizer"]
    shares = {s["name"]: s["t1"] - s["t0"] for s in out["slices"]}
    assert min(shares.values()) >= 0.05  # every phase gets a visible share
    assert shares["allreduce"] > shares["backward"] > shares["forward"]  # in proportion
    assert 1.5 <= out["duration"] <= 2.6  # lesson pace: about two seconds
    assert out["playing"] is False


def test_slow_frames_never_skip_a_phase(run) -> None:
    out = run(
        """
        tl.onStep(step(1, [{kind: 'checkpoint_saved', detail: {}}]), 0, 4);
        const seen = [];
        for (let t = 0; t < 20000 && seen.length < 12; t += 1500) {  // a frame every 1.5 s
          const s = tl.at(t);
          if (!s.phase) break;
          seen.push(s.phase);
        }
        return seen;
        """
    )
    assert out == ["data", "forward", "backward", "allreduce", "optimizer", "checkpoint"]


def test_a_failed_step_shows_no_all_reduce(run) -> None:
    out = run(
        """
        tl.onStep(step(1, [{kind: 'gpu_failed', detail: {gpu: 2}}]), 0, 'lesson');
        return tl.slices.map((s) => s.name);
        """
    )
    assert "allreduce" not in out and out[:3] == ["data", "forward", "backward"]


def test_fast_steps_keep_only_the_newest_and_never_flash(run) -> None:
    out = run(
        """
        // 20 steps a second for 5 seconds, drawn at 60 frames a second.
        let next = 0, n = 0;
        const shown = [], changes = {};
        let last = null;
        for (let t = 0; t <= 5000; t += 1000 / 60) {
          while (next <= t) { tl.onStep(step(++n), next, 'max'); next += 50; }
          const s = tl.at(t);
          if (tl.msg && shown[shown.length - 1] !== tl.msg.step) shown.push(tl.msg.step);
          if (s.phase !== last) {
            if (s.phase) (changes[s.phase] ??= []).push(t);
            last = s.phase;
          }
        }
        return { shown, changes, received: n };
        """
    )
    assert out["received"] >= 100
    shown = out["shown"]
    # Steps start their animation in order, skipping the ones that came while one played...
    assert shown == sorted(shown) and len(shown) < out["received"] / 5
    # ... and the newest one is never far behind: no backlog builds up.
    assert shown[-1] >= out["received"] - 25
    # No colour comes on more than three times in any one second.
    for phase, times in out["changes"].items():
        for i in range(len(times) - 3):
            assert times[i + 3] - times[i] >= 1000, (phase, times)
