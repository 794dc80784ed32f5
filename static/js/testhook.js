// window.trainingRun: a read-only window onto the app's state for tests and for anyone
// poking at it from the console. Nothing in the app reads it back.
//
// installTestHook(...) -> { observeStage(stage) }: main.js hands over the stage once it is up,
// and from then on the hook counts what the stage has shown (`stageDebug.seen`), from the
// frames the stage reports, so a test can ask "did a glow and pulses happen during a step".

import { activeFaults } from './store.js';

function countShown(stage, store) {
  const seen = {
    forward: 0, backward: 0, allreduce: 0, data: 0, maxPulses: 0, steps: 0, maxDrawCalls: 0,
    // + the batch dealt out: most slices drawn in one data frame, and moving at once
    maxSlices: 0, maxSlicesMoving: 0, maxDataWaiting: 0,
    // + a staged failure: the longest run of frames (ms) with the others stalled beside a
    // failed GPU, and the most weight packets in flight from the checkpoints
    stallMs: 0, maxReloading: 0, maxFailed: 0,
    // + slow motion: each block shown, in order: {kind, step, caption, ms}
    slowBlocks: [],
    // + a planned step: frames with pipeline hand-offs (and the most at once, climbing up
    // and coming back down), tensor-parallel joins lit, tokens travelling to experts, and
    // the most GPUs hatched waiting at once
    handoffs: 0, maxHandoffs: 0, maxHandoffsUp: 0, maxHandoffsDown: 0,
    tpJoins: 0, maxTpJoins: 0, tokens: 0, maxTokens: 0, maxWaiting: 0,
    // + faults at scale: a cut hop drawn (and its detour), hidden all-reduce pulses beside the
    // backward, frames of a straggler still computing while others wait, of a stalled loader
    // with every GPU waiting
    maxRingCut: 0, maxRingDetours: 0, maxRingHidden: 0, stragglerLate: 0, loaderStalled: 0,
  };
  let stallFrom = null;
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
      if (phase === 'data') seen.maxSlices = Math.max(seen.maxSlices, debug.slices ?? 0);
      if (phase === 'data') seen.maxSlicesMoving = Math.max(seen.maxSlicesMoving, debug.slicesMoving ?? 0);
      if (phase === 'data') seen.maxDataWaiting = Math.max(seen.maxDataWaiting, debug.dataWaiting ?? 0);
      seen.maxPulses = Math.max(seen.maxPulses, debug.pulses);
    }
    if (debug.failed > 0 && debug.stalled > 0) {
      stallFrom ??= frame.time;
      seen.stallMs = Math.max(seen.stallMs, Math.round((frame.time - stallFrom) * 1000));
    } else stallFrom = null;
    if (frame.active) {
      if (debug.handoffs > 0) seen.handoffs += 1;
      if (debug.tpJoins > 0) seen.tpJoins += 1;
      if (debug.tokens > 0) seen.tokens += 1;
      seen.maxHandoffs = Math.max(seen.maxHandoffs, debug.handoffs ?? 0);
      seen.maxHandoffsUp = Math.max(seen.maxHandoffsUp, debug.handoffsUp ?? 0);
      seen.maxHandoffsDown = Math.max(seen.maxHandoffsDown, debug.handoffsDown ?? 0);
      seen.maxTpJoins = Math.max(seen.maxTpJoins, debug.tpJoins ?? 0);
      seen.maxTokens = Math.max(seen.maxTokens, debug.tokens ?? 0);
      seen.maxWaiting = Math.max(seen.maxWaiting, debug.waiting ?? 0);
    }
    seen.maxReloading = Math.max(seen.maxReloading, debug.reloading ?? 0);
    seen.maxRingCut = Math.max(seen.maxRingCut, debug.ringCut ?? 0);
    seen.maxRingDetours = Math.max(seen.maxRingDetours, debug.ringDetours ?? 0);
    seen.maxRingHidden = Math.max(seen.maxRingHidden, debug.ringHidden ?? 0);
    if (frame.active && debug.loaderStalled && debug.waiting > 0) seen.loaderStalled += 1;
    if (frame.active && debug.waiting > 0) {
      for (const f of activeFaults(frame.run?.faults, frame.step?.step)) {
        const e = f.kind === 'straggler' ? frame.lane(f.target) : null;
        if (e && (e.kind === 'forward' || e.kind === 'backward')) seen.stragglerLate += 1;
      }
    }
    seen.maxFailed = Math.max(seen.maxFailed, debug.failed ?? 0);
    // A block lasts from its first frame to the first frame that no longer shows it.
    const slowNow = Boolean(frame.slow && phase);
    const prev = seen.slowBlocks[seen.slowBlocks.length - 1];
    const t = Math.round(frame.time * 1000);
    const same = slowNow && prev && prev.index === frame.blockIndex && prev.seq === frame.step?.seq;
    if (prev && prev.open && !same) {
      prev.ms = t - prev.t0;
      prev.open = false;
    }
    if (slowNow && !same) {
      const cap = stage.slowCaption?.();
      seen.slowBlocks.push({ kind: phase, index: frame.blockIndex, seq: frame.step?.seq, step: frame.step?.step, caption: cap?.caption ?? '', also: cap?.also ?? '', t0: t, ms: 0, open: true });
      if (seen.slowBlocks.length > 60) seen.slowBlocks.shift();
    } else if (same) prev.ms = t - prev.t0;
    last = { phase, phaseT: frame.phaseT, ...debug, sceneStep: frame.step?.step ?? null };
  });
  stage.onFrame(({ drawCalls }) => {
    seen.maxDrawCalls = Math.max(seen.maxDrawCalls, drawCalls);
  });
  return () => {
    const info = stage.info();
    return {
      ...last,
      playing: info.playing,
      seen: { ...seen, slowBlocks: seen.slowBlocks.map((b) => ({ ...b })) },
      frames: info.frames,
      drawCalls: info.drawCalls,
      drawables: info.drawables,
    };
  };
}

export function installTestHook({ store, getStage, actions, labels, tour, story = null }) {
  const s = () => store.state;
  let stageDebug = () => null;
  // The server's last refusals to this page ({code, message}, newest last), so a test that
  // fails can say what the server answered.
  const refusals = [];
  store.on('error', (msg) => {
    refusals.push({ code: msg.code ?? null, message: msg.message ?? null });
    if (refusals.length > 10) refusals.shift();
  });
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
    // The recorded step the rewind shows ({step, seq, loss, probeStep, probeTop, traced}), or null (live).
    rewind: () => {
      const r = s().rewind;
      if (!r) return null;
      return { step: r.step, seq: r.seq, loss: r.loss, probeStep: r.probe_step, probeTop: r.probe?.top?.map((t) => t.token) ?? [], traced: Boolean(r.trace) };
    },
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
    tourEnded: () => Boolean(s().tour.ended),
    tourLength: () => tour.length,
    tourPart: () => tour.part,
    tourInside: () => tour.inside, // the stop opens GPU 1 up close
    tourAuto: () => s().tourAuto,
    tourMore: () => s().tourMore,
    menuOpen: () => s().menuOpen,
    newRunOpen: () => s().newRunOpen,
    howBigOpen: () => s().howBigOpen,
    gpus: () => s().hello?.topology?.gpus?.length ?? null,
    servers: () => s().hello?.topology?.servers?.length ?? null,
    connection: () => s().connection,
    drawCalls: () => info()?.drawCalls ?? null,
    frames: () => info()?.frames ?? null,
    triangles: () => info()?.triangles ?? null,
    stageReady: () => Boolean(getStage()),
    figure: () => getStage()?.figure?.() ?? [], // a chapter's pieces in the scene, named, on screen and in the world
    portrait: () => info()?.portrait ?? null, // the layout stands upright on a tall screen
    projector: () => s().projector,
    // Presenting: this page leads, this page follows the presenter, pages following this one.
    presenting: () => Boolean(s().presenting),
    following: () => Boolean(s().following),
    followers: () => s().followers ?? 0,
    reducedMotion: () => s().reducedMotion,
    failedGpus: () => [...s().failedGpus],
    failures: () => s().failures,
    // Faults at scale injected in this run ({kind, target, start, steps, ...}), and the lens.
    faults: () => JSON.parse(JSON.stringify(s().faults ?? [])),
    lens: () => (s().lens ? { ...s().lens } : null),
    rollbacks: () => s().rollbacks,
    lastRollback: () => (s().lastRollback ? { ...s().lastRollback } : null),
    historyLength: () => s().history.length,
    serverErrors: () => refusals.map((r) => ({ ...r })),
    lastEvent: () => (s().lastEvent ? JSON.parse(JSON.stringify(s().lastEvent)) : null),
    helpOpen: () => Boolean(s().helpOpen),
    card: () => s().card ?? null,
    fullscreen: () => Boolean(document.fullscreenElement),
    camera: () => ({ ...actions.camera, distance: info()?.distance ?? null }),
    cameraPose: () => getStage()?.cameraPose?.() ?? null,
    // A camera flight under way (a view, a tour stop, a lab's framing): false once it has
    // landed and the frame at its goal is drawn.
    cameraFlying: () => Boolean(info()?.flying),
    runId: () => s().hello?.run_id ?? null,
    // The run's batch and learning rate, as its hello says.
    batchSize: () => s().hello?.config?.batch_size ?? null,
    lr: () => s().hello?.config?.lr ?? null,
    watching: () => s().watching,
    canControl: () => s().hello?.can_control ?? null,
    memoryCase: () => (s().memoryCase ? JSON.parse(JSON.stringify(s().memoryCase)) : null),
    placement: () => s().placement ?? 'data',
    // The run's parallel plan from hello ({dp, tp, pp, ep, microbatches, schedule, experts,
    // top_k}) and the step on screen's measured plan figures.
    plan: () => (s().hello?.plan ? { ...s().hello.plan } : null),
    // Each GPU's role in the plan ({gpu, stage, experts: [lo, hi), ...}), from hello.
    roles: () => JSON.parse(JSON.stringify(s().hello?.roles ?? [])),
    planStats: () => (s().step?.plan_stats ? JSON.parse(JSON.stringify(s().step.plan_stats)) : null),
    // The texts the step on screen trained on, as words: [{replica, text}].
    stepTexts: () => JSON.parse(JSON.stringify(s().step?.texts ?? [])),
    // The kinds of event in the step on screen's trace, sorted: ['allreduce', 'p2p', ...].
    stepTraceKinds: () => {
      const t = s().step?.trace;
      if (!t) return [];
      const all = [t.spans, t.rings, t.p2p, t.all_to_all].flatMap((list) => (list ?? []).map((x) => x.kind));
      return [...new Set(all)].sort();
    },
    stageDebug: () => stageDebug(),
    // The guided story: {id, chapter (1-based, null when closed), chapters, run, liveRun,
    // ready, caption, note, figure, ...} (static/js/story/player.js).
    story: () => (story ? story.info() : null),
    // The scale field: {on, plan: {gpus, servers, racks, pods, tiers, leaves, spines, cores,
    // radix, live, mirrored, ...}, lod, mirror, stops, path: {playing, t, stop, leg},
    // live: [{gpu, x, y, visible}] (each live GPU's cell on screen), beacon}.
    field: () => getStage()?.fieldInfo?.() ?? { on: false },
    // pickField(x, y) -> what the field shows at a CSS px point: {kind: 'live', gpu},
    // {kind: 'mirror', rack, gpus: [first, last]}, ... or null.
    pickField: () => (x, y) => getStage()?.pickField?.(x, y) ?? null,
    slowMotion: () => Boolean(s().slowMotion),
    // What the slow-motion caption says now (and whether it is on screen).
    slowCaption: () => getStage()?.slowCaption?.() ?? null,
    // Every part's box on screen now, from the stage's own projection: {id: {left, top, right, bottom}}.
    partRects: () => {
      const st = getStage();
      if (!st?.partRect) return null;
      const ids = ['datalake', 'loaders', 'gpus', 'fabric', 'ring', 'model', 'checkpoints'];
      return Object.fromEntries(ids.map((id) => [id, st.partRect(id)]));
    },
    // The loss chart's "steps lost" bands as drawn: [{fromStep, toStep, lost}].
    lostStepBands: () => {
      try {
        return JSON.parse(document.getElementById('loss-chart')?.dataset.lostBands || '[]');
      } catch {
        return [];
      }
    },
    // partBox(id, step = 16) -> {left, top, right, bottom} in CSS px: where a part shows on
    // screen now, found by picking the canvas on a grid (slow; for tests), or null.
    partBox: () => (id, step = 16) => {
      const st = getStage();
      if (!st?.pickPart) return null;
      let box = null;
      for (let y = step / 2; y < window.innerHeight; y += step) {
        for (let x = step / 2; x < window.innerWidth; x += step) {
          if (st.pickPart(x, y) !== id) continue;
          if (!box) box = { left: x, top: y, right: x, bottom: y };
          box.left = Math.min(box.left, x);
          box.right = Math.max(box.right, x);
          box.top = Math.min(box.top, y);
          box.bottom = Math.max(box.bottom, y);
        }
      }
      return box;
    },
    // The memory walls on screen: their box, the label's box, towers and each wall's fill.
    wallsOnScreen: () => {
      try {
        return stageDebug()?.wallsOnScreen?.() ?? null;
      } catch {
        return null;
      }
    },
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
