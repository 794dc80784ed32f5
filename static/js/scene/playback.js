// The step animation as the render loop sees it: the one place where a frame learns which
// step is on screen and how far through it the animation is. The Timeline decides the pacing
// and answers "what is going on now"; this module feeds it the store's steps and the kinds of
// work the server announced, and hands its answer to the loop, which copies it into the frame.

import { Timeline } from './timeline.js';

// The signal is off: nothing plays, so no GPU's lane has an event.
const STILL = Object.freeze({ phase: null, phaseT: 0, stepT: 1, active: false, lane: () => null, block: null });

export function createPlayback(store, requestRender) {
  const timeline = new Timeline();
  const setKinds = (hello) => timeline.setKinds(hello?.trace_kinds);
  setKinds(store.state.hello);
  const unsub = [
    store.on('hello', setKinds),
    store.on('step', (msg) => {
      timeline.onStep(msg, performance.now(), store.state.status?.speed ?? 'lesson');
      requestRender();
    }),
    store.on('snapshot', () => {
      timeline.clear();
      requestRender();
    }),
  ];

  return {
    /** The timeline's sample at wall time `now` (ms) (phase, phaseT, stepT, active, lane(g),
     * ...) plus `step`, the message being played. Call once per tick: the timeline advances
     * as it is asked. */
    at(now, signal) {
      const sample = signal ? timeline.at(now) : STILL;
      return { ...sample, step: timeline.msg || store.state.step };
    },
    /** True while a step still has something left to play on screen. */
    playing: (signal) => Boolean(signal && timeline.playing),
    dispose() {
      for (const u of unsub) u();
    },
  };
}
