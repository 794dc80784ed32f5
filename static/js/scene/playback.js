// The step animation as the render loop sees it: the one place where a frame learns which
// step is on screen and how far through it the animation is. The Timeline decides the pacing
// and answers "what is going on now"; this module feeds it the store's steps and the kinds of
// work the server announced, and hands its answer to the loop, which copies it into the frame.
//
// Slow motion follows store.state.slowMotion: on, the current step (when the run is not
// running) or the next one plays block by block; when it has played out, this module sets
// slowMotion back to false. hold(ms) keeps the animation still while a failure is staged.

import { Timeline } from './timeline.js';
import { setTraceKinds } from './trace.js';

// The signal is off: nothing plays, so no GPU's lane has an event.
const STILL = Object.freeze({ phase: null, phaseT: 0, stepT: 1, active: false, lane: () => null, block: null });

export function createPlayback(store, requestRender) {
  const timeline = new Timeline();
  // Every reader of a step's trace (the HUD's time bar too) learns from the same table which
  // kinds run beside a lane's work.
  const setKinds = (hello) => {
    timeline.setKinds(hello?.trace_kinds);
    setTraceKinds(hello?.trace_kinds);
  };
  setKinds(store.state.hello);

  function slowMotion(on) {
    const now = performance.now();
    if (!on) {
      timeline.slowMotion(false, now);
    } else {
      // A running run brings its next step within a second or two; a paused (or stopped)
      // one replays the step on screen.
      const running = store.state.status?.state === 'running';
      const msg = running ? null : timeline.msg || store.state.step;
      timeline.slowMotion(true, now, msg?.trace ? msg : null);
    }
    requestRender();
  }

  const unsub = [
    store.on('hello', setKinds),
    store.on('step', (msg) => {
      if (store.state.rewind) return; // a recorded step is on show (ui/rewind.js)
      timeline.onStep(msg, performance.now(), store.state.status?.speed ?? 'lesson');
      requestRender();
    }),
    // Rewound: play the recorded step's trace; back to live: the latest live step again.
    store.on('change:rewind', (r) => {
      timeline.clear();
      const msg = r?.trace ? r : store.state.step;
      if (msg?.trace) timeline.onStep(msg, performance.now(), 'lesson');
      requestRender();
    }),
    store.on('snapshot', () => {
      timeline.clear();
      requestRender();
    }),
    store.on('change:slowMotion', (on) => slowMotion(Boolean(on))),
  ];
  if (store.state.slowMotion) slowMotion(true);

  return {
    /** The timeline's sample at wall time `now` (ms) (phase, phaseT, stepT, active, lane(g),
     * blockIndex, blockCount, slow, ...) plus `step`, the message being played, and
     * `slowWaiting` (slow motion is on and waits for its step). Call once per tick: the
     * timeline advances as it is asked. */
    at(now, signal) {
      const slow = timeline.slowActive || timeline.slowWanted;
      const sample = signal || slow ? timeline.at(now) : STILL;
      if (timeline.slowEnded) {
        timeline.slowEnded = false;
        // Told from inside a frame: let the frame finish first.
        queueMicrotask(() => store.set('slowMotion', false));
      }
      return {
        ...sample,
        step: timeline.msg || store.state.step,
        slowWaiting: timeline.slowWanted && !timeline.slowActive,
      };
    },
    /** True while a step still has something left to play on screen. */
    playing: (signal) => Boolean((signal || timeline.slowActive) && timeline.playing),
    /** Keep the step animation still for `ms` (a failure is being staged). */
    hold(ms) {
      timeline.hold(performance.now(), ms);
      requestRender();
    },
    dispose() {
      for (const u of unsub) u();
    },
  };
}
