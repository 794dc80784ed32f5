// window.trainingRun: a read-only window onto the app's state for tests and for anyone
// poking at it from the console. Nothing in the app reads it back.
//
// installTestHook(...) -> { observeStage(stage) }: main.js hands over the stage once it is up,
// and from then on the hook counts what the stage has shown (`stageDebug.seen`), from the
// frames the stage reports, so a test can ask "did a glow and pulses happen during a step".

function countShown(stage, store) {
  const seen = { forward: 0, backward: 0, allreduce: 0, data: 0, maxPulses: 0, steps: 0, maxDrawCalls: 0 };
  // The parts' counters from the last tick they updated (idle ticks skip them).
  let last = { phase: null, phaseT: 0, activeGpus: 0, pulses: 0, waiting: 0, failed: 0 };
  store.on('step', () => {
    seen.steps += 1;
  });
  stage.onUpdate((frame) => {
    const { phase, debug } = frame;
    if (phase) {
      if (debug.activeGpus > 0 && (phase === 'forward' || phase === 'backward')) seen[phase] += 1;
      if (phase === 'allreduce' && (debug.pulses > 0 || debug.ringLit)) seen.allreduce += 1;
      if (phase === 'data') seen.data += 1;
      seen.maxPulses = Math.max(seen.maxPulses, debug.pulses);
    }
    last = { phase, phaseT: frame.phaseT, ...debug };
  });
  stage.onFrame(({ drawCalls }) => {
    seen.maxDrawCalls = Math.max(seen.maxDrawCalls, drawCalls);
  });
  return () => {
    const info = stage.info();
    return {
      ...last,
      playing: info.playing,
      seen: { ...seen },
      frames: info.frames,
      drawCalls: info.drawCalls,
      drawables: info.drawables,
    };
  };
}

export function installTestHook({ store, getStage, actions, labels, tour }) {
  const s = () => store.state;
  let stageDebug = () => null;
  const info = () => {
    try {
      return getStage()?.info() ?? null;
    } catch {
      return null;
    }
  };
  const getters = {
    step: () => s().status?.step ?? s().step?.step ?? null,
    loss: () => s().step?.loss ?? s().status?.loss ?? null,
    // The step on screen: its number and simulated seconds, as the HUD's time bar shows it.
    stepShown: () => (s().step ? { step: s().step.step, seq: s().step.seq, simStepS: s().step.sim_step_s } : null),
    runState: () => s().status?.state ?? null,
    speed: () => s().status?.speed ?? null,
    view: () => s().view,
    labels: () => s().labels,
    labelCount: () => labels.count,
    signal: () => s().signal,
    spin: () => s().spin,
    exploded: () => s().exploded,
    tourActive: () => s().tour.active,
    tourStop: () => s().tour.stop,
    tourLength: () => tour.length,
    connection: () => s().connection,
    drawCalls: () => info()?.drawCalls ?? null,
    frames: () => info()?.frames ?? null,
    triangles: () => info()?.triangles ?? null,
    stageReady: () => Boolean(getStage()),
    projector: () => s().projector,
    reducedMotion: () => s().reducedMotion,
    failedGpus: () => [...s().failedGpus],
    failures: () => s().failures,
    rollbacks: () => s().rollbacks,
    lastRollback: () => (s().lastRollback ? { ...s().lastRollback } : null),
    historyLength: () => s().history.length,
    lastEvent: () => (s().lastEvent ? JSON.parse(JSON.stringify(s().lastEvent)) : null),
    helpOpen: () => Boolean(s().helpOpen),
    card: () => s().card ?? null,
    fullscreen: () => Boolean(document.fullscreenElement),
    camera: () => ({ ...actions.camera, distance: info()?.distance ?? null }),
    runId: () => s().hello?.run_id ?? null,
    memoryCase: () => (s().memoryCase ? JSON.parse(JSON.stringify(s().memoryCase)) : null),
    placement: () => s().placement ?? 'data',
    stageDebug: () => stageDebug(),
  };
  const hook = {};
  for (const [name, get] of Object.entries(getters)) {
    Object.defineProperty(hook, name, { get, enumerable: true });
  }
  Object.freeze(hook);
  Object.defineProperty(window, 'trainingRun', { value: hook, enumerable: false });
  return {
    observeStage(stage) {
      if (stage?.ok) stageDebug = countShown(stage, store);
    },
  };
}
