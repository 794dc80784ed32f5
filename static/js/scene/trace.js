// A step's trace, as the server sends it: every GPU's lane of timed events in a compact form
// (spans of work shared by many lanes, and ring collectives described by their passes). This
// module reads it without expanding everything: a 4,096-GPU ring has millions of sends, but
// "what is GPU g doing at time t" is a short search. The rules mirror app/engine/trace.py,
// and a test checks that `expandTrace` here gives exactly the lanes Python's `expand` gives.

/** (phase, chunk) that ring position i sends in 1-based pass `index` of a G-GPU ring. */
export function ringChunk(i, index, g) {
  if (index <= g - 1) return ['reduce_scatter', (((i - (index - 1)) % g) + g) % g];
  return ['all_gather', (((i + 1 - (index - g)) % g) + g) % g];
}

function ringEvent(r, i, index, t0, dur) {
  const g = r.ring.length;
  const [phase, chunk] = ringChunk(i, index, g);
  return {
    gpu: r.ring[i],
    kind: r.kind,
    t0,
    dur,
    wall_s: r.wall_s ?? null,
    peer: r.ring[(i + 1) % g],
    src: r.ring[(i - 1 + g) % g],
    bytes: r.chunk_bytes[chunk],
    link: r.links[i],
    index,
    phase,
    chunk,
  };
}

function ringDuration(r) {
  return r.pass_s.reduce((a, [s, n]) => a + s * n, 0);
}

/** Every lane's events in time order: for tests and small clusters only. */
export function expandTrace(trace) {
  const lanes = Array.from({ length: trace.gpus }, () => []);
  for (const s of trace.spans) {
    const on = s.lanes ?? lanes.map((_, g) => g);
    for (const g of on) lanes[g].push({ gpu: g, kind: s.kind, t0: s.t0, dur: s.dur, wall_s: s.wall_s ?? null });
  }
  for (const r of trace.rings) {
    let t = r.t0;
    let index = 0;
    for (const [seconds, repeat] of r.pass_s) {
      for (let k = 0; k < repeat; k++) {
        index += 1;
        for (let i = 0; i < r.ring.length; i++) {
          const e = ringEvent(r, i, index, t, seconds);
          lanes[e.gpu].push(e);
        }
        t += seconds;
      }
    }
  }
  for (const lane of lanes) lane.sort((a, b) => a.t0 - b.t0 || a.t0 + a.dur - (b.t0 + b.dur));
  return lanes;
}

/** Reads one step's trace: blocks of time for the animation, each lane's event at a time,
 * and the seconds each time-bar group takes. `skip` drops records of those kinds (a failed
 * step's ring never ran). */
export class TraceView {
  constructor(trace, { groups = {}, skip = new Set() } = {}) {
    this.gpus = trace?.gpus ?? 0;
    this.stepS = trace?.step_s ?? 0;
    this.groupOf = groups; // kind -> time-bar group
    const spans = (trace?.spans ?? []).filter((s) => !skip.has(s.kind));
    const rings = (trace?.rings ?? []).filter((r) => !skip.has(r.kind));
    // One list of records with their lanes and extent; rings keep what a lookup needs.
    this.records = [
      ...spans.map((s) => ({
        kind: s.kind,
        t0: s.t0,
        t1: s.t0 + s.dur,
        lanes: s.lanes ? new Set(s.lanes) : null,
        count: s.lanes ? s.lanes.length : this.gpus,
        span: s,
      })),
      ...rings.map((r) => ({
        kind: r.kind,
        t0: r.t0,
        t1: r.t0 + ringDuration(r),
        lanes: new Map(r.ring.map((g, i) => [g, i])),
        count: r.ring.length,
        ring: r,
        passes: r.pass_s.reduce((a, [, n]) => a + n, 0),
      })),
    ];
    this.blocks = this._blocks();
  }

  /** Stretches of the step in which the same kinds of work are going on, in time order:
   * [{t0, t1, kinds, primary}], `primary` being the kind with the most GPU-seconds. A ring's
   * many passes make one block, as do the data-parallel spans each. */
  _blocks() {
    const edges = [...new Set(this.records.flatMap((r) => (r.t1 > r.t0 ? [r.t0, r.t1] : [])))].sort(
      (a, b) => a - b,
    );
    const blocks = [];
    for (let i = 1; i < edges.length; i++) {
      const a = edges[i - 1];
      const b = edges[i];
      const weight = new Map();
      for (const r of this.records) {
        if (r.t0 <= a && r.t1 >= b && r.t1 > r.t0) {
          weight.set(r.kind, (weight.get(r.kind) ?? 0) + r.count * (b - a));
        }
      }
      const kinds = [...weight.keys()].sort();
      const sig = kinds.join('+');
      const last = blocks[blocks.length - 1];
      if (last && last.sig === sig) {
        last.t1 = b;
        for (const [k, w] of weight) last.weight.set(k, (last.weight.get(k) ?? 0) + w);
      } else {
        blocks.push({ t0: a, t1: b, sig, kinds: new Set(kinds), weight });
      }
    }
    for (const blk of blocks) {
      let best = null;
      for (const [k, w] of blk.weight) if (best === null || w > blk.weight.get(best)) best = k;
      blk.primary = best;
      delete blk.weight;
      delete blk.sig;
    }
    return blocks;
  }

  /** What lane g is doing at simulated time t: the event (with `progress` 0..1, and for
   * ring sends the pass, peer, link, bytes) or null. */
  eventAt(g, t) {
    let found = null;
    for (const r of this.records) {
      if (t < r.t0 || t >= r.t1) continue;
      if (r.lanes && !r.lanes.has(g)) continue;
      if (found && found.t0 > r.t0) continue; // the latest-starting record wins
      found = r;
    }
    if (!found) return null;
    if (!found.ring) {
      const s = found.span;
      return { gpu: g, kind: s.kind, t0: s.t0, dur: s.dur, wall_s: s.wall_s ?? null, progress: s.dur > 0 ? (t - s.t0) / s.dur : 1 };
    }
    const r = found.ring;
    const i = found.lanes.get(g);
    let start = r.t0;
    let index = 0;
    let last = null;
    for (const [seconds, repeat] of r.pass_s) {
      if (!(seconds > 0) || !repeat) {
        index += repeat;
        continue;
      }
      const k = Math.min(repeat - 1, Math.floor((t - start) / seconds));
      last = ringEvent(r, i, index + repeat, start + (repeat - 1) * seconds, seconds);
      if (k >= 0 && t < start + seconds * repeat) {
        const e = ringEvent(r, i, index + k + 1, start + k * seconds, seconds);
        e.progress = Math.min(1, (t - e.t0) / seconds);
        e.passes = found.passes;
        return e;
      }
      start += seconds * repeat;
      index += repeat;
    }
    // Rounding can leave t a hair past the last pass's computed end: that is the last pass.
    if (!last) return null;
    last.progress = 1;
    last.passes = found.passes;
    return last;
  }

  /** Seconds each time-bar group takes, averaged over the lanes (each lane adds up to the
   * step: the bar is the lanes' sum, not a separate estimate). */
  groupSeconds() {
    const out = {};
    if (!this.gpus) return out;
    for (const r of this.records) {
      const group = this.groupOf[r.kind] ?? r.kind;
      out[group] = (out[group] ?? 0) + ((r.t1 - r.t0) * r.count) / this.gpus;
    }
    return out;
  }
}
