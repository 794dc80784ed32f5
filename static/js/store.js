// The one browser-side state of the app. The socket feeds server messages in through
// store.apply(msg); the scene, the HUD, the tour and the labs read store.state and listen
// for events ('hello', 'snapshot', 'step', 'event', 'error', 'change:<key>', 'change').
// Nothing here touches the network or the DOM.

const HISTORY_CAP = 4000; // points kept in the browser; the server already downsamples to 2000
const EVENTS_CAP = 200;
// A failed GPU stays red for a moment even when the replacement is reported in the same
// breath, so people can see which one died before it comes back.
const FAILED_HOLD_MS = 3000;

const reducedMotionQuery =
  typeof matchMedia === 'function' ? matchMedia('(prefers-reduced-motion: reduce)') : null;

// Every key the page keeps, in one place. Server messages fill the first group (see apply());
// the UI and the labs change the rest through store.set(key, value), which emits
// 'change:<key>' and 'change'.
function initialState() {
  return {
    connection: 'connecting', // socket: 'connecting' | 'open' | 'lost'
    hello: null, // the server's hello: config, topology, preset, run id
    status: null, // run status (state, speed, step, loss, ...) from the snapshot, kept current
    step: null, // the latest step message
    history: [], // [{seq, step, loss}] for the loss chart
    events: [], // the latest events, newest last
    checkpoints: [], // saved checkpoints [{step, path, bytes, created, ok}]
    lastRollback: null, // {failedStep, restoredStep, stepsLost, afterSeq} of the latest rollback
    rollbacks: 0, // rollbacks seen since the page opened
    failures: 0, // GPU failures seen since the page opened
    failedGpus: new Set(), // GPUs down right now (held a moment after their replacement)
    faults: [], // faults at scale injected in this run: [{kind, target, start, steps, message, detail}]
    faultsOpen: false, // the faults menu is open
    lens: null, // the model lens: null (the live step) or {model, gpus} (what the step would cost)
    lastEvent: null, // the latest event, whatever its kind
    lastProbe: null, // the latest probe (next-word guesses); it rides on only some steps
    lastProbeStep: null, // the step that probe came from
    rewind: null, // a recorded step on show instead of the live one (ui/rewind.js), or null
    attach: null, // `trainingrun watch`: the latest attach_status (waiting, ranks, dropped)
    slowMotion: false, // a step plays block by block with captions (the stage turns it off when done)
    memoryCase: null, // the memory lab's chosen case, drawn on the GPUs' memory walls
    placement: 'data', // how "swap it" shares the model out: 'data', 'tensor_pipeline', ...
    placementPreview: false, // "swap it" is open: show the model copies even for data parallel
    labFocus: null, // the part an open lab changes and frames clear of its panel ('gpus'), or null
    view: 0, // camera view 0-4
    labels: true, // numbered labels shown
    signal: true, // step animation shown
    spin: false, // the scene turns slowly
    exploded: false, // the fabric lifted above the servers
    tour: { active: false, stop: 0 }, // the guided tour and its current stop
    tourAuto: false, // the tour moves on by itself (else each stop waits for the next press)
    tourMore: false, // the current stop's longer "more" text is unfolded
    menuOpen: false, // the toolbar's menu is open (narrow screens fold controls into it)
    compact: false, // room is short (a projector-sized screen, or projector mode): drawers fold (ui/projector.js)
    newRunOpen: false, // the "new run" settings panel is open
    howBigOpen: false, // the "how big is a real run?" box is open
    card: null, // id of the part whose card is open
    helpOpen: false, // the key help overlay is open
    projector: false, // projector theme
    presenting: false, // this page leads a presentation (presenter/index.js)
    watching: 'class', // the server's run this page watches (its hello says; net/socket.js `watch`)
    following: false, // this page follows the presenter's page
    followers: 0, // pages following this one while it presents
    reducedMotion: Boolean(reducedMotionQuery && reducedMotionQuery.matches), // the OS asks for less motion
  };
}

/** A `fault_injected` event as the page keeps it: it acts in steps [start, start + steps). */
function faultOf(e) {
  const d = e.detail ?? {};
  return { kind: d.kind, target: d.target, start: d.start, steps: d.steps, message: e.message, detail: d };
}

/** The faults acting on step `step` (a rolled-back run meets them again when it gets there,
 * as the engine does). */
export function activeFaults(faults, step) {
  if (step === null || step === undefined) return [];
  return (faults ?? []).filter((f) => !f.done && f.start <= step && step < f.start + f.steps);
}

class Store {
  constructor() {
    this.state = initialState();
    this._listeners = new Map();
    this._arrivals = []; // [{t, tokens}] for measured tokens per wall second
  }

  on(name, fn) {
    if (!this._listeners.has(name)) this._listeners.set(name, new Set());
    this._listeners.get(name).add(fn);
    return () => this._listeners.get(name)?.delete(fn);
  }

  emit(name, payload) {
    const set = this._listeners.get(name);
    if (!set) return;
    for (const fn of [...set]) {
      try {
        fn(payload, this.state);
      } catch (err) {
        // One broken listener must not stop the others (or the stream) from updating.
        console.warn(`store listener for ${name} failed`, err);
      }
    }
  }

  set(key, value) {
    if (this.state[key] === value) return;
    this.state[key] = value;
    this.emit(`change:${key}`, value);
    this.emit('change', key);
  }

  /** Measured tokens per wall-clock second over the last few seconds of arriving steps. */
  tokensPerSecond() {
    const a = this._arrivals;
    if (a.length < 2) return null;
    const span = (a[a.length - 1].t - a[0].t) / 1000;
    if (span <= 0) return null;
    let tokens = 0;
    for (let i = 1; i < a.length; i++) tokens += a[i].tokens;
    return tokens / span;
  }

  apply(msg) {
    if (!msg || typeof msg.type !== 'string') return;
    switch (msg.type) {
      case 'hello':
        return this._hello(msg);
      case 'snapshot':
        return this._snapshot(msg);
      case 'step':
        return this._step(msg);
      case 'event':
        this._event(msg);
        this.emit('event', msg);
        return;
      case 'error':
        this.emit('error', msg);
        return;
      case 'attach_status': // `trainingrun watch`: waiting for a job, or how its ranks report
        this.state.attach = msg;
        this.emit('attach_status', msg);
        return;
      case 'follow': // the presenter's view (presenter/index.js applies it)
        this.emit('follow', msg);
        return;
      default:
        return;
    }
  }

  _hello(msg) {
    const previous = this.state.hello;
    if (previous && previous.run_id !== msg.run_id) this._forgetRun();
    this.state.hello = msg;
    this.state.watching = msg.watching ?? 'class';
    this.emit('hello', msg);
  }

  _forgetRun() {
    const s = this.state;
    s.history = [];
    s.events = [];
    s.checkpoints = [];
    s.step = null;
    s.lastRollback = null;
    s.failedGpus = new Set();
    s.faults = [];
    this._arrivals = [];
  }

  _snapshot(msg) {
    const s = this.state;
    s.status = msg.status ?? null;
    s.step = msg.last_step ?? null;
    s.history = Array.isArray(msg.history) ? msg.history.slice(-HISTORY_CAP) : [];
    s.events = Array.isArray(msg.events) ? msg.events.slice(-EVENTS_CAP) : [];
    s.checkpoints = Array.isArray(msg.checkpoints) ? msg.checkpoints.slice() : [];
    // Which GPUs are down right now: replay the recent failure events in order.
    const down = new Set();
    for (const e of s.events) {
      if (e.kind === 'gpu_failed') down.add(e.detail?.gpu);
      else if (e.kind === 'gpu_replaced') down.delete(e.detail?.gpu);
    }
    s.failedGpus = down;
    s.faults = s.events.filter((e) => e.kind === 'fault_injected').map(faultOf);
    this._arrivals = [];
    this.emit('snapshot', msg);
    this.emit('change:failedGpus', s.failedGpus);
  }

  _step(msg) {
    const s = this.state;
    const prev = s.history.length ? s.history[s.history.length - 1] : null;
    s.step = msg;
    s.history.push({ seq: msg.seq, step: msg.step, loss: msg.loss });
    if (s.history.length > HISTORY_CAP) s.history.splice(0, s.history.length - HISTORY_CAP);
    if (s.status) {
      s.status.step = msg.step;
      s.status.epoch = msg.epoch;
      s.status.loss = msg.loss;
      s.status.tokens_total = msg.tokens_total;
    }
    // A rollback starts a new timeline: throughput measured across it would be nonsense.
    if (prev && msg.step <= prev.step) this._arrivals = [];
    this._arrivals.push({ t: performance.now(), tokens: msg.tokens ?? 0 });
    const cutoff = performance.now() - 10000;
    while (this._arrivals.length > 2 && this._arrivals[0].t < cutoff) this._arrivals.shift();
    if (this._arrivals.length > 60) this._arrivals.shift();
    const events = msg.events ?? [];
    for (const e of events) this._event(e);
    this.emit('step', msg);
    // Events raised during a step reach listeners exactly like stand-alone event messages.
    for (const e of events) this.emit('event', e);
  }

  _event(e) {
    const s = this.state;
    s.events.push(e);
    if (s.events.length > EVENTS_CAP) s.events.shift();
    s.lastEvent = e;
    const d = e.detail ?? {};
    switch (e.kind) {
      case 'gpu_failed':
        s.failures += 1;
        // A GPU dies once: its fault is spent, even when the rollback replays that step.
        if (s.faults.some((f) => f.kind === 'dead' && !f.done && f.detail?.gpu === d.gpu)) {
          s.faults = s.faults.map((f) => (f.kind === 'dead' && f.detail?.gpu === d.gpu ? { ...f, done: true } : f));
          this.emit('change:faults', s.faults);
        }
        s.failedGpus = new Set(s.failedGpus).add(d.gpu);
        this.emit('change:failedGpus', s.failedGpus);
        break;
      case 'gpu_replaced': {
        const gpu = d.gpu;
        setTimeout(() => {
          if (!s.failedGpus.has(gpu)) return;
          const next = new Set(s.failedGpus);
          next.delete(gpu);
          s.failedGpus = next;
          this.emit('change:failedGpus', next);
        }, FAILED_HOLD_MS);
        break;
      }
      case 'restored': {
        // A clean resume after a server restart loses nothing: it is not a rollback.
        if (d.reason === 'resume' && !d.steps_lost) break;
        const last = s.history.length ? s.history[s.history.length - 1] : null;
        s.rollbacks += 1;
        s.lastRollback = {
          failedStep: d.failed_step,
          restoredStep: d.restored_step,
          stepsLost: d.steps_lost,
          afterSeq: last ? last.seq : 0,
        };
        if (s.status) s.status.step = d.restored_step ?? s.status.step;
        this.emit('change:lastRollback', s.lastRollback);
        break;
      }
      case 'checkpoint_saved':
        s.checkpoints.push({
          step: d.step ?? e.step,
          path: d.path,
          bytes: d.bytes,
          created: Date.now() / 1000,
          ok: true,
        });
        break;
      case 'diverged': // the run stops itself at its last good step
      case 'paused':
      case 'resumed':
        if (s.status) s.status.state = e.kind === 'resumed' ? 'running' : 'paused';
        this.emit('change:status', s.status);
        break;
      case 'speed_changed':
        if (s.status && d.speed !== undefined) s.status.speed = d.speed;
        this.emit('change:status', s.status);
        break;
      case 'fault_injected':
        s.faults = [...s.faults, faultOf(e)].slice(-EVENTS_CAP);
        this.emit('change:faults', s.faults);
        break;
      case 'run_reset':
        this._forgetRun();
        this.emit('change:status', s.status);
        break;
      default:
        break;
    }
  }
}

export const store = new Store();

if (reducedMotionQuery && typeof reducedMotionQuery.addEventListener === 'function') {
  reducedMotionQuery.addEventListener('change', (ev) => store.set('reducedMotion', ev.matches));
}
