// Turns each step message into a short, ordered animation of its phases.
//
// A step's phases (data -> forward -> backward -> all-reduce -> update -> checkpoint) are
// shown in proportion to their simulated times, but every phase gets a minimum share so a
// 2 ms update is still visible. The whole animation is fitted into the time until the next
// step is expected, so at lesson pace it plays over about two seconds and at full speed it is
// compressed. A new step always replaces the one playing: there is never a backlog.

const ORDER = ['data', 'forward', 'backward', 'allreduce', 'optimizer', 'checkpoint'];
const MIN_SHARE = 0.08;
const LESSON_S = 2.0;
const MIN_S = 0.25;
const MAX_S = 2.6;

export class Timeline {
  constructor() {
    this.msg = null;
    this.start = 0;
    this.duration = 0;
    this.slices = []; // [{name, t0, t1}] as fractions of the step animation
    this.lastArrival = 0;
    this.interval = LESSON_S; // smoothed wall seconds between step messages
  }

  /** Expected seconds until the next step, from the run's speed and the measured arrivals. */
  expected(speed) {
    if (typeof speed === 'number' && speed > 0) return 1 / speed;
    if (speed === 'lesson') return Math.max(this.interval, LESSON_S * 0.8);
    return this.interval;
  }

  onStep(msg, now, speed) {
    if (this.lastArrival) {
      const gap = (now - this.lastArrival) / 1000;
      if (gap > 0 && gap < 10) this.interval = this.interval * 0.6 + gap * 0.4;
    }
    this.lastArrival = now;
    this.msg = msg;
    this.start = now;
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

  /** {phase, phaseT, stepT, active} at wall time `now` (ms). */
  at(now) {
    if (!this.msg || !this.duration) return { phase: null, phaseT: 0, stepT: 1, active: false };
    const stepT = (now - this.start) / 1000 / this.duration;
    if (stepT >= 1) return { phase: null, phaseT: 1, stepT: 1, active: false };
    const s = this.slices.find((x) => stepT < x.t1) || this.slices[this.slices.length - 1];
    const phaseT = Math.min(1, Math.max(0, (stepT - s.t0) / Math.max(1e-6, s.t1 - s.t0)));
    return { phase: s.name, phaseT, stepT: Math.max(0, stepT), active: true };
  }

  clear() {
    this.msg = null;
    this.duration = 0;
  }
}
