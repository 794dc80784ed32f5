// One animation clock for a step: plays the step's trace, every GPU's lane of timed events,
// in a couple of seconds of wall time (docs/scene.md says how).

import { pace } from './pacing.js';
import { stepText } from './steptext.js';
import { TraceView } from './trace.js';

const MIN_SHARE = 0.08;
// The data block carries the batch being dealt out to every GPU: a little more room for it.
const DATA_SHARE = 0.12;
const LESSON_S = 2.0;
const MIN_S = 0.9;
const MAX_S = 2.6;
// Slow motion of a planned step: each block dwells a while, shortened when there are many
// blocks, so a whole pipeline step stays within about a minute.
const SLOW_PLAN_TOTAL_S = 50;
const SLOW_PLAN_MIN_S = 2.2;

const IDLE = Object.freeze({ phase: null, phaseT: 0, stepT: 1, simT: 0, active: false, lane: () => null, view: null, block: null });

export class Timeline {
  constructor() {
    this.msg = null;
    this.view = null;
    this.start = 0;
    this.duration = 0;
    this.blocks = []; // [{t0, t1 (sim s), w0, w1 (fractions of the animation), kinds, primary}]
    this.lastArrival = 0;
    this.interval = LESSON_S; // smoothed wall seconds between step messages
    this.shown = -1; // index of the last block drawn for this step
    this.pending = null; // {msg, speed}: the newest step waiting for the floor to pass
    this.groups = {}; // kind -> time-bar group, from hello
    this.transfers = new Set(); // kinds that move data between GPUs, from hello
    this.slowWanted = false; // play the next step to begin in slow motion
    this.slowActive = false; // the step playing now is in slow motion
    this.slowEnded = false; // set when a slow step has played out; the reader clears it
    this.holdUntil = 0; // wall ms until which the step animation stands still
    this.kinds = null; // hello.trace_kinds
    this.paced = null; // a planned step's pacing (pacing.js), or null
    this.floorS = MIN_S; // wall seconds the step on screen keeps it before a newer one
  }

  /** The kinds table from `hello.trace_kinds`. */
  setKinds(kinds) {
    this.kinds = kinds ?? null;
    this.groups = Object.fromEntries((kinds ?? []).map((k) => [k.kind, k.group]));
    this.transfers = new Set((kinds ?? []).filter((k) => k.transfer).map((k) => k.kind));
  }

  /** Expected seconds until the next step, from the run's speed and the measured arrivals. */
  expected(speed) {
    if (typeof speed === 'number' && speed > 0) return 1 / speed;
    if (speed === 'lesson') return Math.max(this.interval, LESSON_S * 0.8);
    return this.interval;
  }

  onStep(msg, now, speed) {
    this._arrival(now);
    const busy = this.slowActive || now < this.holdUntil;
    if (busy || (this.playing && !this.slowWanted && !this._givesWay(now))) {
      this.pending = { msg, speed }; // the newest only: older waiting steps are dropped
      return;
    }
    this._begin(msg, now, speed);
  }

  /** Slow motion on: play `msg` now (a paused run's current step) or, without one, the next
   * step to arrive. Off: end a slow step at once; the newest waiting step carries on. */
  slowMotion(on, now, msg = null) {
    if (!on) {
      this.slowWanted = false;
      if (this.slowActive) {
        this.slowActive = false;
        this.shown = this.blocks.length;
      }
      return;
    }
    this.slowWanted = true;
    if (msg) this._begin(msg, now, null);
  }

  /** Stand still for `ms` from `now`: the step being played is dropped (it belonged to the
   * moment before; a slow-motion step only pauses), steps arriving meanwhile wait, the
   * newest plays afterwards. */
  hold(now, ms) {
    const until = Math.max(this.holdUntil, now + ms);
    // A step in slow motion pauses and carries on afterwards where it was.
    if (this.slowActive) this.start += until - Math.max(now, this.holdUntil);
    else if (this.msg && this.shown < this.blocks.length) this.shown = this.blocks.length;
    this.holdUntil = until;
  }


  /** The playing step gives way to a newer one once it has been on screen for the floor and
   * its last block has been drawn: on slow frames a step that came meanwhile waits rather
   * than cutting the ring (or any later block) out of the one playing. */
  _givesWay(now) {
    const playedOut = !this.blocks.length || this.shown >= this.blocks.length - 1;
    return playedOut && (now - this.start) / 1000 >= this.floorS;
  }

  _arrival(now) {
    if (this.lastArrival) {
      const gap = (now - this.lastArrival) / 1000;
      if (gap > 0 && gap < 10) this.interval = this.interval * 0.6 + gap * 0.4;
    }
    this.lastArrival = now;
  }

  _begin(msg, now, speed) {
    this.pending = null;
    this.msg = msg;
    this.start = now;
    this.shown = -1;
    this.slowActive = this.slowWanted;
    this.slowWanted = false;
    this.duration = Math.min(MAX_S, Math.max(MIN_S, this.expected(speed) * 0.92));
    // A failure breaks the ring: the failed attempt's transfers are not shown.
    const failed = (msg.events || []).some((e) => e.kind === 'gpu_failed');
    const skip = failed ? this.transfers : new Set();
    this.view = new TraceView(msg.trace, { groups: this.groups, kinds: this.kinds, skip });
    this.paced = null;
    this.floorS = MIN_S;
    if (this.view.planned) {
      this._beginPlanned(speed);
      return;
    }
    const blocks = this.view.blocks.filter((b) => b.t1 > b.t0);
    const total = blocks.reduce((a, b) => a + (b.t1 - b.t0), 0) || 1;
    const floor = Math.min(MIN_SHARE, 0.5 / Math.max(1, blocks.length));
    let raw = blocks.map((b) =>
      Math.max(b.primary === 'data' ? Math.max(floor, DATA_SHARE) : floor, (b.t1 - b.t0) / total),
    );
    if (this.slowActive) {
      // Slow motion: every block dwells for its own few seconds, whatever its share.
      raw = blocks.map((b) => stepText(b.primary).slowS);
      this.duration = raw.reduce((a, b) => a + b, 0);
    }
    const sum = raw.reduce((a, b) => a + b, 0) || 1;
    let w = 0;
    this.blocks = blocks.map((b, i) => {
      const w0 = w;
      w += raw[i] / sum;
      return { ...b, w0, w1: w };
    });
  }

  /** A planned step: pacing.js says how long it takes and where its blocks fall. */
  _beginPlanned(speed) {
    const p = pace(this.view);
    this.paced = p;
    // At its own pace, or slower when steps come slowly; never faster.
    this.duration = Math.max(p.total, Math.min(MAX_S, this.expected(speed) * 0.92));
    this.floorS = this.duration;
    let raw = p.blocks.map((b) => b.v1 - b.v0);
    if (this.slowActive) {
      const k = Math.min(1, SLOW_PLAN_TOTAL_S / p.blocks.reduce((a, b) => a + stepText(b.primary).slowS, 0));
      raw = p.blocks.map((b) => Math.max(SLOW_PLAN_MIN_S, stepText(b.primary).slowS * k));
      this.duration = raw.reduce((a, b) => a + b, 0);
    }
    const sum = raw.reduce((a, b) => a + b, 0) || 1;
    let w = 0;
    this.blocks = p.blocks.map((b, i) => {
      const w0 = w;
      w += raw[i] / sum;
      return { ...b, w0, w1: w };
    });
  }

  /** The frame's view of the step at wall time `now` (ms): {phase (the block's main kind),
   * phaseT (0..1 through the block), stepT, simT (simulated seconds into the step), active,
   * lane(g) -> GPU g's event at simT or null, view, block}. Call once per drawn frame: a
   * block is never skipped, even when frames are slower than the block is short (a busy
   * laptop, software WebGL), because each call advances at most one block. */
  at(now) {
    if (now < this.holdUntil) return IDLE;
    if (this.slowActive && this.shown >= this.blocks.length) {
      this.slowActive = false;
      this.slowEnded = true;
    }
    if (this.pending && !this.slowActive && (this.slowWanted || this._givesWay(now))) {
      this._begin(this.pending.msg, now, this.pending.speed);
    }
    if (!this.msg || !this.duration || !this.blocks.length) return IDLE;
    const stepT = (now - this.start) / 1000 / this.duration;
    let idx = this.blocks.findIndex((b) => stepT < b.w1);
    if (idx < 0) idx = this.blocks.length; // time is up
    let catchingUp = false;
    if (idx > this.shown + 1) {
      idx = this.shown + 1;
      catchingUp = true;
    }
    if (this.slowActive && idx > this.shown && idx < this.blocks.length) {
      // Slow motion promises every block its full dwell on screen: a block first drawn late
      // (a stalled browser) starts its dwell now rather than losing the time it missed.
      const b = this.blocks[idx];
      this.start = now - b.w0 * this.duration * 1000;
      catchingUp = false;
    }
    this.shown = Math.max(this.shown, idx);
    if (idx >= this.blocks.length) {
      if (this.slowActive) {
        this.slowActive = false;
        this.slowEnded = true;
      }
      return { ...IDLE, phaseT: 1 };
    }
    const b = this.blocks[idx];
    const t = (now - this.start) / 1000 / this.duration; // stepT, after any shift above
    const phaseT = catchingUp ? 0.5 : Math.min(1, Math.max(0, (t - b.w0) / Math.max(1e-9, b.w1 - b.w0)));
    // Ask the lanes just inside the block, so its last instant still belongs to it.
    const inside = Math.min(phaseT, 0.9999);
    const paced = this.paced;
    const simT = paced ? paced.simAt(b.v0 + inside * (b.v1 - b.v0)) : b.t0 + inside * (b.t1 - b.t0);
    const view = this.view;
    const cache = new Map();
    // A planned step: each lane's event, and the run it is in (what the GPU shows).
    const laneAt = paced
      ? (g) => {
          const e = view.eventAt(g, simT);
          const run = paced.runAt(g, simT);
          if (!run) return e;
          return { ...(e ?? { gpu: g, kind: run.show, t0: run.t0, dur: run.t1 - run.t0, progress: run.progress }), show: run.show, showProgress: run.progress, mbs: run.mbs };
        }
      : (g) => view.eventAt(g, simT);
    const wallNow = paced ? paced.wallAt(simT) : 0;
    const clamp01 = (x) => Math.min(1, Math.max(0, x));
    return {
      phase: b.primary,
      phaseT,
      stepT: Math.min(1, Math.max(0, t)),
      simT,
      active: true,
      view,
      block: b,
      blockIndex: idx,
      blockCount: this.blocks.length,
      slow: this.slowActive,
      planned: Boolean(paced),
      /** Where simulated second t falls on the step's own clock (wall seconds from its start
       * at its natural pace, slow motion aside); `wallS` is where the frame is. */
      wallOf(t) {
        if (paced) return paced.wallAt(t) * paced.total;
        const s = view.stepS || 1;
        return Math.min(1, Math.max(0, t / s)) * s;
      },
      wallS: paced ? wallNow * paced.total : simT,
      /** How far through [t0, t1) (simulated seconds) the animation is, 0..1, on the screen's
       * clock: a pulse crossing at constant speed on screen uses this. */
      progressOf(t0, t1) {
        if (paced) {
          const a = paced.wallAt(t0);
          const z = paced.wallAt(t1);
          return z > a ? clamp01((wallNow - a) / (z - a)) : 1;
        }
        return t1 > t0 ? clamp01((simT - t0) / (t1 - t0)) : 1;
      },
      lane(g) {
        if (!cache.has(g)) cache.set(g, laneAt(g));
        return cache.get(g);
      },
    };
  }

  /** True while the current step still has blocks left to draw. */
  get playing() {
    return Boolean((this.msg && this.duration && this.shown < this.blocks.length) || this.pending);
  }

  clear() {
    this.pending = null;
    if (this.slowActive) this.slowEnded = true;
    this.slowActive = false;
    this.msg = null;
    this.view = null;
    this.paced = null;
    this.floorS = MIN_S;
    this.duration = 0;
  }
}
