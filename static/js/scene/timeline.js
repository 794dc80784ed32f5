// Turns each step message into a short, ordered animation of its phases.
//
// A step's phases (data -> forward -> backward -> all-reduce -> update -> checkpoint) are
// shown in proportion to their simulated times, but every phase gets a minimum share so a
// 2 ms update is still visible. The whole animation is fitted into the time until the next
// step is expected, so at lesson pace it plays over about two seconds and at full speed it is
// compressed down to a floor, so that at full speed the colours change about once a second
// and never flash (no more than three changes a second for any one colour). A new step
// replaces the one playing once that one has been on screen for the floor; until then only
// the newest waiting step is kept: there is never a backlog.

const ORDER = ['data', 'forward', 'backward', 'allreduce', 'optimizer', 'checkpoint'];
const MIN_SHARE = 0.08;
const LESSON_S = 2.0;
const MIN_S = 0.9;
const MAX_S = 2.6;

export class Timeline {
  constructor() {
    this.msg = null;
    this.start = 0;
    this.duration = 0;
    this.slices = []; // [{name, t0, t1}] as fractions of the step animation
    this.lastArrival = 0;
    this.interval = LESSON_S; // smoothed wall seconds between step messages
    this.shown = -1; // index of the last phase drawn for this step
    this.pending = null; // {msg, speed}: the newest step waiting for the floor to pass
  }

  /** Expected seconds until the next step, from the run's speed and the measured arrivals. */
  expected(speed) {
    if (typeof speed === 'number' && speed > 0) return 1 / speed;
    if (speed === 'lesson') return Math.max(this.interval, LESSON_S * 0.8);
    return this.interval;
  }

  onStep(msg, now, speed) {
    this._arrival(now);
    if (this.playing && (now - this.start) / 1000 < MIN_S) {
      this.pending = { msg, speed }; // the newest only: older waiting steps are dropped
      return;
    }
    this._begin(msg, now, speed);
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
    this.duration = Math.min(MAX_S, Math.max(MIN_S, this.expected(speed) * 0.92));
    const events = msg.events || [];
    const failed = events.some((e) => e.kind === 'gpu_failed');
    const saved = events.some((e) => e.kind === 'checkpoint_saved');
    const sim = new Map((msg.phases || []).map((p) => [p.name, Math.max(0, p.sim_s || 0)]));
    const names = ORDER.filter((n) => {
      if (n === 'checkpoint') return saved;
      // A failure stops the ring: no all-reduce to show for the failed attempt.
      if (n === 'allreduce' && failed) return false;
      return true;
    });
    const total = names.reduce((a, n) => a + (sim.get(n) || 0), 0) || 1;
    const raw = names.map((n) => Math.max(MIN_SHARE, (sim.get(n) || 0) / total));
    const sum = raw.reduce((a, b) => a + b, 0);
    let t = 0;
    this.slices = names.map((name, i) => {
      const t0 = t;
      t += raw[i] / sum;
      return { name, t0, t1: t };
    });
  }

  /** {phase, phaseT, stepT, active} at wall time `now` (ms). Call once per drawn frame:
   * a phase is never skipped, even when frames are slower than the phase is short (a busy
   * laptop, software WebGL), because each call advances at most one phase. */
  at(now) {
    if (this.pending && (now - this.start) / 1000 >= MIN_S) {
      this._begin(this.pending.msg, now, this.pending.speed);
    }
    if (!this.msg || !this.duration) return { phase: null, phaseT: 0, stepT: 1, active: false };
    const stepT = (now - this.start) / 1000 / this.duration;
    let idx = this.slices.findIndex((x) => stepT < x.t1);
    if (idx < 0) idx = this.slices.length; // time is up
    let catchingUp = false;
    if (idx > this.shown + 1) {
      idx = this.shown + 1;
      catchingUp = true;
    }
    this.shown = Math.max(this.shown, idx);
    if (idx >= this.slices.length) return { phase: null, phaseT: 1, stepT: 1, active: false };
    const s = this.slices[idx];
    const phaseT = catchingUp
      ? 0.5
      : Math.min(1, Math.max(0, (stepT - s.t0) / Math.max(1e-6, s.t1 - s.t0)));
    return { phase: s.name, phaseT, stepT: Math.min(1, Math.max(0, stepT)), active: true };
  }

  /** True while the current step still has phases left to draw. */
  get playing() {
    return Boolean(
      (this.msg && this.duration && this.shown < this.slices.length) || this.pending,
    );
  }

  clear() {
    this.pending = null;
    this.msg = null;
    this.duration = 0;
  }
}
