// The one render loop (renderer.setAnimationLoop). Each tick it moves the camera, asks the
// playback where the step animation is, lets the parts update from one shared `frame`, and
// draws only when something changed or is animating, so an idle projector laptop stays cool:
// `frames` stops increasing when nothing moves.
//
// The frame each part's update(frame, dt) receives:
//   run       store.state
//   step      the step message being played (or the latest one)
//   ...       the timeline's sample: phase, phaseT, stepT, active, lane(g) -> GPU g's event
//             now, block, ... (see timeline.js; phase is null when nothing plays)
//   time      wall seconds;  signal, reduced, exploded, palette, layout: the stage's look
//   camera    the camera (read it, do not move it): parts that show detail only up close
//   slow      true while a step plays in slow motion (blockIndex / blockCount say where)
//   failure   null, or where a staged GPU failure is (see failure.js)
//   debug     counters the parts fill in for observers (activeGpus, pulses, slices, ...)
// Observers: onUpdate(fn) gets that frame after the parts have updated from it (read it, do
// not change it); onFrame(fn) gets {frames, drawCalls} after each drawn frame.
//
// `draw: false` (the page's `?draw=0`, for tests that read the page's words and state, never
// its pixels) runs every update as usual and skips only the WebGL draw: on a machine that
// renders on the CPU the draw is most of a frame's cost.

function notify(fns, arg, what) {
  for (const fn of fns) {
    try {
      fn(arg);
    } catch (err) {
      console.warn(`stage ${what} listener failed`, err);
    }
  }
}

function subscribe(fns, fn) {
  fns.add(fn);
  return () => fns.delete(fn);
}

/**
 * createLoop({renderer, scene, camera, store, look, playback, staging, animateCamera, parts})
 *   playback.at(now, signal) -> {step, phase, phaseT, stepT, active, ...}
 *   staging.at(now) -> the staged failure now, or null (failure.js)
 *   animateCamera(now, dt) -> true while the camera moves
 *   parts() -> the built parts, each with update(frame, dt) -> true while it still animates
 */
export function createLoop({ renderer, scene, camera, store, look, playback, staging, animateCamera, parts, draw = true }) {
  let dirty = true;
  let frames = 0;
  let lastT = performance.now();
  let partsBusy = false;
  let lastPhase = null;
  let lastFailure = null;
  let running = false;
  const updateFns = new Set();
  const frameFns = new Set();

  // At most 30 frames a second on a CPU renderer (docs/scene.md)
  const minMs = Math.max(0, (renderer.frameMs || 0) - 4);

  function tick() {
    if (!running) return;
    const now = performance.now();
    if (now - lastT < minMs) return;
    const dt = Math.min(0.1, (now - lastT) / 1000);
    lastT = now;
    let animating = animateCamera(now, dt);

    // The timeline's answer goes into the frame as it is: the step and where its animation
    // is, in whatever terms the timeline gives (see playback.js).
    const play = playback.at(now, look.signal);
    const failure = staging ? staging.at(now) : null;
    const frame = {
      run: store.state,
      ...play,
      time: now / 1000,
      // Slow motion was asked for: it plays even with the signal off.
      signal: look.signal || Boolean(play.slow),
      reduced: look.reduced,
      exploded: look.exploded,
      palette: look.palette,
      layout: look.layout,
      camera,
      failure,
      debug: {
        activeGpus: 0,
        pulses: 0,
        waiting: 0,
        stalled: 0,
        failed: 0,
        ringLit: false,
        slices: 0,
        slicesMoving: 0,
        dataWaiting: 0,
        reloading: 0,
      },
    };
    // Parts are only asked to update while something may have changed; idle frames cost
    // nothing (no matrix uploads, no render).
    const staged = failure !== null || failure !== lastFailure;
    lastFailure = failure;
    // A moving camera counts too: some detail shows only up close.
    const updating = play.active || dirty || partsBusy || staged || animating || play.phase !== lastPhase;
    if (updating) {
      partsBusy = false;
      for (const p of parts()) if (p.update(frame, dt)) partsBusy = true;
      if (partsBusy) animating = true;
      // One more pass after the step animation ends so parts settle to their idle look.
      if (!play.active && lastPhase !== null) dirty = true;
      notify(updateFns, frame, 'onUpdate');
    }
    lastPhase = play.phase;
    if (play.active || failure) animating = true;

    if (!animating && !dirty) return;
    dirty = false;
    if (draw) renderer.render(scene, camera);
    frames += 1;
    notify(frameFns, { frames, drawCalls: renderer.info.render.calls }, 'onFrame');
  }

  return {
    requestRender() {
      dirty = true;
    },
    start() {
      running = true;
      renderer.setAnimationLoop(tick);
    },
    stop() {
      running = false;
      renderer.setAnimationLoop(null);
    },
    get frames() {
      return frames;
    },
    onUpdate: (fn) => subscribe(updateFns, fn),
    onFrame: (fn) => subscribe(frameFns, fn),
  };
}
