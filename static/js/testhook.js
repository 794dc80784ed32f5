// window.trainingRun: a read-only window onto the app's state for tests and for anyone
// poking at it from the console. Nothing in the app reads it back.

export function installTestHook({ store, getStage, actions, labels, tour }) {
  const s = () => store.state;
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
    camera: () => ({ ...actions.camera }),
    runId: () => s().hello?.run_id ?? null,
    memoryCase: () => (s().memoryCase ? JSON.parse(JSON.stringify(s().memoryCase)) : null),
    placement: () => s().placement ?? 'data',
    stageDebug: () => getStage()?.debug?.() ?? null,
  };
  const hook = {};
  for (const [name, get] of Object.entries(getters)) {
    Object.defineProperty(hook, name, { get, enumerable: true });
  }
  Object.freeze(hook);
  Object.defineProperty(window, 'trainingRun', { value: hook, enumerable: false });
  return hook;
}
