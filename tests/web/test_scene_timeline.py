"""The step timeline (static/js/scene/timeline.js), driven with made-up clocks in a real page.

It plays a step's trace (lanes of timed events, one per GPU) on one clock and decides what
the scene shows when: blocks of work in order and in proportion, every lane's own event at
each moment, no block skipped on slow frames, no backlog when steps come fast, and no colour
flashing faster than 3 times a second at full speed. It needs no WebGL.
"""

from __future__ import annotations

import pytest

from app.protocol import trace_kinds


def dp_trace(gpus: int = 4, *, checkpoint: bool = False) -> dict:
    """A data-parallel step as the server sends it: shared spans and one ring."""
    spans, t = [], 0.0
    for kind, dur in (("data", 0.001), ("forward", 0.010), ("backward", 0.020)):
        spans.append({"kind": kind, "t0": t, "dur": dur, "lanes": None, "wall_s": 0.0})
        t += dur
    passes = 2 * (gpus - 1)
    ring = {
        "kind": "allreduce",
        "t0": t,
        "pass_s": [[0.06 / passes, passes]],
        "ring": list(range(gpus)),
        "links": ["nvlink"] * gpus,
        "chunk_bytes": [100] * gpus,
        "wall_s": 0.0,
    }
    t += 0.06
    tail = [("optimizer", 0.0005)] + ([("checkpoint", 0.002)] if checkpoint else [])
    for kind, dur in tail:
        spans.append({"kind": kind, "t0": t, "dur": dur, "lanes": None, "wall_s": 0.0})
        t += dur
    return {"gpus": gpus, "step_s": t, "spans": spans, "rings": [ring]}


RUN = """async ([traces, kinds, script]) => {
  const { Timeline } = await import('/static/js/scene/timeline.js');
  const tl = new Timeline();
  tl.setKinds(kinds);
  const step = (n, events = [], trace = traces.plain) => ({ step: n, trace, events });
  return (new Function('tl', 'step', 'traces', script))(tl, step, traces);
}"""


@pytest.fixture
def run(browser, server):
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(f"{server.url}/api/health")
    kinds = [k.model_dump() for k in trace_kinds()]
    traces = {
        "plain": dp_trace(),
        "saved": dp_trace(checkpoint=True),
        # Two GPUs that are not in lockstep, as in a pipeline: GPU 0 computes while GPU 1
        # waits for its input, then the other way round.
        "staggered": {
            "gpus": 2,
            "step_s": 0.02,
            "spans": [
                {"kind": "forward", "t0": 0.0, "dur": 0.01, "lanes": [0]},
                {"kind": "wait", "t0": 0.0, "dur": 0.01, "lanes": [1]},
                {"kind": "wait", "t0": 0.01, "dur": 0.01, "lanes": [0]},
                {"kind": "forward", "t0": 0.01, "dur": 0.01, "lanes": [1]},
            ],
            "rings": [],
        },
    }
    yield lambda script: page.evaluate(RUN, [traces, kinds, script])
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
        return {
          seen, duration: tl.duration, playing: tl.playing,
          blocks: tl.blocks.map((b) => ({ name: b.primary, w0: b.w0, w1: b.w1 })),
        };
        """
    )
    names = [s["phase"] for s in out["seen"]]
    # No checkpoint phase: this step saved nothing.
    assert names == ["data", "forward", "backward", "allreduce", "optimizer"]
    shares = {s["name"]: s["w1"] - s["w0"] for s in out["blocks"]}
    assert min(shares.values()) >= 0.05  # every phase gets a visible share
    assert shares["allreduce"] > shares["backward"] > shares["forward"]  # in proportion
    assert 1.5 <= out["duration"] <= 2.6  # lesson pace: about two seconds
    assert out["playing"] is False


def test_slow_frames_never_skip_a_phase(run) -> None:
    out = run(
        """
        tl.onStep(step(1, [{kind: 'checkpoint_saved', detail: {}}], traces.saved), 0, 4);
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
        return tl.blocks.map((b) => b.primary);
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


def test_every_lane_plays_its_own_events(run) -> None:
    out = run(
        """
        tl.onStep(step(1, [], traces.staggered), 0, 'lesson');
        const seen = [];
        for (let t = 0; t <= 3000; t += 25) {
          const s = tl.at(t);
          if (!s.active) continue;
          const now = [s.lane(0)?.kind ?? null, s.lane(1)?.kind ?? null].join('/');
          if (seen[seen.length - 1] !== now) seen.push(now);
        }
        return seen;
        """
    )
    assert out == ["forward/wait", "wait/forward"]


def test_ring_lanes_name_their_pass_peer_and_chunk(run) -> None:
    out = run(
        """
        tl.onStep(step(1), 0, 'lesson');
        const found = [];
        for (let t = 0; t <= 3000; t += 5) {
          const s = tl.at(t);
          if (s.phase !== 'allreduce') continue;
          const e = s.lane(2);
          if (!found.length || found[found.length - 1].index !== e.index) found.push(e);
        }
        return found;
        """
    )
    # 4 GPUs: 6 passes, each GPU sending to the next, 3 reduce-scatter then 3 all-gather.
    assert [e["index"] for e in out] == [1, 2, 3, 4, 5, 6]
    assert all(e["peer"] == 3 and e["src"] == 1 and e["passes"] == 6 for e in out)
    assert [e["phase"] for e in out] == ["reduce_scatter"] * 3 + ["all_gather"] * 3
    # GPU 2 sends chunk 2, 1, 0 in reduce-scatter, then forwards 3, 2, 1 in all-gather.
    assert [e["chunk"] for e in out] == [2, 1, 0, 3, 2, 1]


def test_slow_motion_dwells_on_every_block_and_new_steps_wait(run) -> None:
    out = run(
        """
        tl.onStep(step(1), 0, 4);
        tl.slowMotion(true, 100);            // running: the next step plays slowly
        const seen = [];
        let n = 1;
        for (let t = 0; t <= 40000; t += 50) {
          if (t % 250 === 0) tl.onStep(step(++n), t, 4);   // 4 steps a second keep coming
          const s = tl.at(t);
          if (s.slow && (seen.length === 0 || seen[seen.length - 1].phase !== s.phase)) {
            seen.push({ phase: s.phase, t, step: tl.msg.step, index: s.blockIndex });
          }
          if (!tl.slowActive && !tl.slowWanted && seen.length) break;
        }
        return { seen, ended: tl.slowEnded, pending: Boolean(tl.pending) };
        """
    )
    seen = out["seen"]
    assert [s["phase"] for s in seen] == ["data", "forward", "backward", "allreduce", "optimizer"]
    assert len({s["step"] for s in seen}) == 1  # steps arriving meanwhile did not cut it short
    gaps = [b["t"] - a["t"] for a, b in zip(seen, seen[1:], strict=False)]
    assert min(gaps) >= 2500, gaps  # several seconds a block
    assert out["ended"] is True


def test_a_hold_stands_the_animation_still_then_the_newest_step_plays(run) -> None:
    out = run(
        """
        tl.onStep(step(1), 0, 'lesson');
        tl.at(100);
        tl.hold(200, 3000);
        const during = [];
        for (let t = 200; t < 3200; t += 100) {
          if (t === 1000) tl.onStep(step(2), t, 'lesson');
          if (t === 2000) tl.onStep(step(3), t, 'lesson');
          during.push(tl.at(t).phase);
        }
        const after = tl.at(3300);
        return { during, after: after.phase, step: tl.msg.step };
        """
    )
    assert set(out["during"]) == {None}
    assert out["after"] == "data" and out["step"] == 3
