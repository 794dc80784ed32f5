// A step's trace, as the server sends it: every GPU's lane of timed events in a compact form
// (spans of work shared by many lanes, ring collectives described by their passes, pipeline
// sends and receives, all-to-alls described by their rounds). This module reads it without
// expanding everything: a 4,096-GPU ring has millions of sends, but "what is GPU g doing at
// time t" is a short search. The rules mirror app/engine/trace.py, and a test checks that
// `expandTrace` here gives exactly the lanes Python's `expand` gives.
//
// Kinds that overlap a lane's work: docs/scene.md (reading a step's trace).

/** The kinds table (hello.trace_kinds) that views made without one use: the scene's
 * playback sets it from hello, so every reader of a step agrees on which kinds overlap. */
let defaultKinds = null;

export function setTraceKinds(kinds) {
  defaultKinds = Array.isArray(kinds) ? kinds : null;
}

/** (phase, chunk) that ring position i sends in 1-based pass `index` of a G-GPU ring. */
export function ringChunk(i, index, g) {
  if (index <= g - 1) return ['reduce_scatter', (((i - (index - 1)) % g) + g) % g];
  return ['all_gather', (((i + 1 - (index - g)) % g) + g) % g];
}

const mod = (a, n) => ((a % n) + n) % n;

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
    mb: r.mb ?? null,
  };
}

/** Lane events of a point-to-point transfer: a send on src, a receive on dst. */
export function expandP2P(p) {
  const common = { kind: p.kind, t0: p.t0, dur: p.dur, bytes: p.bytes, link: p.link, mb: p.mb ?? null };
  return [
    { gpu: p.src, ...common, peer: p.dst, phase: 'send' },
    { gpu: p.dst, ...common, src: p.src, phase: 'recv' },
  ];
}

function a2aEvent(a, i, k, t0, dur) {
  const g = a.gpus.length;
  const j = (i + k) % g;
  return {
    gpu: a.gpus[i],
    kind: a.kind,
    t0,
    dur,
    peer: a.gpus[j],
    src: a.gpus[mod(i - k, g)],
    bytes: a.bytes[i * g + j],
    link: a.links[i * g + j],
    index: k,
    mb: a.mb ?? null,
  };
}

/** Lane events of an all-to-all: round k (1-based), position i sends to i + k and receives
 * from i - k. */
export function expandAllToAll(a) {
  const out = [];
  let t = a.t0;
  a.round_s.forEach((seconds, r) => {
    for (let i = 0; i < a.gpus.length; i++) out.push(a2aEvent(a, i, r + 1, t, seconds));
    t += seconds;
  });
  return out;
}

function ringDuration(r) {
  return r.pass_s.reduce((a, [s, n]) => a + s * n, 0);
}

/** Every lane's events in time order: for tests and small clusters only. */
export function expandTrace(trace) {
  const lanes = Array.from({ length: trace.gpus }, () => []);
  for (const s of trace.spans ?? []) {
    const on = s.lanes ?? lanes.map((_, g) => g);
    for (const g of on) {
      lanes[g].push({ gpu: g, kind: s.kind, t0: s.t0, dur: s.dur, wall_s: s.wall_s ?? null, mb: s.mb ?? null });
    }
  }
  for (const r of trace.rings ?? []) {
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
  for (const p of trace.p2p ?? []) for (const e of expandP2P(p)) lanes[e.gpu].push(e);
  for (const a of trace.all_to_all ?? []) for (const e of expandAllToAll(a)) lanes[e.gpu].push(e);
  // Stable, like Python's sort: events that start and end together keep the record order.
  for (const lane of lanes) lane.sort((a, b) => a.t0 - b.t0 || a.t0 + a.dur - (b.t0 + b.dur));
  return lanes;
}

/** kind -> {group, transfer, overlaps} from hello.trace_kinds (a list) or such a map. */
function kindsTable(kinds) {
  if (!kinds) return {};
  if (Array.isArray(kinds)) return Object.fromEntries(kinds.map((k) => [k.kind, k]));
  return kinds;
}

/** Reads one step's trace: blocks of time for the animation, each lane's event at a time,
 * the transfers beside it, and the seconds each time-bar group takes.
 *   kinds  hello.trace_kinds (defaults to the table setTraceKinds was given)
 *   groups kind -> time-bar group (defaults to the kinds table's)
 *   skip   drops records of those kinds (a failed step's transfers never ran) */
export class TraceView {
  constructor(trace, { groups = null, kinds = null, skip = new Set() } = {}) {
    this.gpus = trace?.gpus ?? 0;
    this.stepS = trace?.step_s ?? 0;
    const table = kindsTable(kinds ?? defaultKinds);
    this.groupOf = groups ?? Object.fromEntries(Object.entries(table).map(([k, v]) => [k, v.group]));
    this.overlapping = new Set(Object.entries(table).filter(([, v]) => v.overlaps).map(([k]) => k));
    const keep = (r) => !skip.has(r.kind);
    const spans = (trace?.spans ?? []).filter(keep);
    const rings = (trace?.rings ?? []).filter(keep);
    const p2p = (trace?.p2p ?? []).filter(keep);
    const a2a = (trace?.all_to_all ?? []).filter(keep);
    // One list of records with their lanes and extent; each keeps what a lookup needs.
    this.records = [
      ...spans.map((s) => ({
        kind: s.kind,
        t0: s.t0,
        t1: s.t0 + s.dur,
        lanes: s.lanes ? new Set(s.lanes) : null,
        count: s.lanes ? s.lanes.length : this.gpus,
        mb: s.mb ?? null,
        span: s,
      })),
      ...rings.map((r) => ({
        kind: r.kind,
        t0: r.t0,
        t1: r.t0 + ringDuration(r),
        lanes: new Map(r.ring.map((g, i) => [g, i])),
        count: r.ring.length,
        mb: r.mb ?? null,
        ring: r,
        passes: r.pass_s.reduce((a, [, n]) => a + n, 0),
      })),
      ...p2p.map((p) => ({
        kind: p.kind,
        t0: p.t0,
        t1: p.t0 + p.dur,
        lanes: new Map([[p.src, 'send'], [p.dst, 'recv']]),
        count: 2,
        mb: p.mb ?? null,
        p2p: p,
      })),
      ...a2a.map((a) => ({
        kind: a.kind,
        t0: a.t0,
        t1: a.t0 + a.round_s.reduce((x, y) => x + y, 0),
        lanes: new Map(a.gpus.map((g, i) => [g, i])),
        count: a.gpus.length,
        mb: a.mb ?? null,
        a2a: a,
      })),
    ];
    for (const r of this.records) r.overlaps = this.overlapping.has(r.kind);
    // Per lane, the records on it (records on every lane are kept once, apart), so a lookup
    // reads one lane's few records rather than the whole step's.
    this.everyLane = this.records.filter((r) => !r.lanes);
    this.byLane = new Map();
    for (const r of this.records) {
      if (!r.lanes) continue;
      for (const g of r.lanes.keys()) {
        let list = this.byLane.get(g);
        if (!list) this.byLane.set(g, (list = []));
        list.push(r);
      }
    }
    this.sorted = [...this.records].sort((a, b) => a.t0 - b.t0);
    this.blocks = this._blocks();
  }

  /** True when the step is more than data parallel: sends between stages, all-to-alls, or
   * work for microbatches (a tensor-parallel join names its microbatch too). */
  get planned() {
    return this.records.some((r) => r.p2p || r.a2a || r.mb !== null);
  }

  /** The records on lane g (every-lane ones included), in no particular order. */
  laneRecords(g) {
    const own = this.byLane.get(g) ?? [];
    return this.everyLane.length ? [...this.everyLane, ...own] : own;
  }

  /** Records of the given kinds (all kinds when null) going on at simulated time t. */
  recordsAt(t, kinds = null) {
    const out = [];
    for (const r of this.sorted) {
      if (r.t0 > t) break;
      if (t < r.t1 && (!kinds || kinds.has(r.kind))) out.push(r);
    }
    return out;
  }

  /** Stretches of the step in which the same kinds of work are going on, in time order:
   * [{t0, t1, kinds, primary}], `primary` being the kind with the most GPU-seconds among
   * those that are neither waiting nor beside the lanes' work (see below). A ring's
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
    // The main kind is the work most GPUs do, not the waiting beside it (in a checkpoint
    // step most GPUs wait while a few write), nor a transfer running beside the lanes' work
    // (the hidden all-reduce beside the backward): waiting names a block only when nothing
    // else goes on in it.
    const rank = (k) => (k === 'wait' ? 0 : this.overlapping.has(k) ? 1 : 2);
    for (const blk of blocks) {
      let best = null;
      for (const [k, w] of blk.weight) {
        if (best === null || rank(k) > rank(best) || (rank(k) === rank(best) && w > blk.weight.get(best))) best = k;
      }
      blk.primary = best;
      delete blk.weight;
      delete blk.sig;
    }
    return blocks;
  }

  /** Lane g's event of record r at simulated time t (r covers t), with `progress` 0..1; ring
   * passes also say how many passes the ring has. */
  eventOf(r, g, t) {
    if (r.span) {
      const s = r.span;
      return {
        gpu: g, kind: s.kind, t0: s.t0, dur: s.dur, wall_s: s.wall_s ?? null, mb: s.mb ?? null,
        progress: s.dur > 0 ? (t - s.t0) / s.dur : 1,
      };
    }
    if (r.p2p) {
      const e = expandP2P(r.p2p)[r.lanes.get(g) === 'send' ? 0 : 1];
      e.progress = r.p2p.dur > 0 ? Math.min(1, (t - r.t0) / r.p2p.dur) : 1;
      return e;
    }
    if (r.a2a) {
      const a = r.a2a;
      const i = r.lanes.get(g);
      let start = a.t0;
      for (let k = 0; k < a.round_s.length; k++) {
        const s = a.round_s[k];
        if (t < start + s || k === a.round_s.length - 1) {
          const e = a2aEvent(a, i, k + 1, start, s);
          e.progress = s > 0 ? Math.min(1, Math.max(0, (t - start) / s)) : 1;
          e.rounds = a.round_s.length;
          return e;
        }
        start += s;
      }
      return null;
    }
    const rg = r.ring;
    const i = r.lanes.get(g);
    let start = rg.t0;
    let index = 0;
    let last = null;
    for (const [seconds, repeat] of rg.pass_s) {
      if (!(seconds > 0) || !repeat) {
        index += repeat;
        continue;
      }
      const k = Math.min(repeat - 1, Math.floor((t - start) / seconds));
      last = ringEvent(rg, i, index + repeat, start + (repeat - 1) * seconds, seconds);
      if (k >= 0 && t < start + seconds * repeat) {
        const e = ringEvent(rg, i, index + k + 1, start + k * seconds, seconds);
        e.progress = Math.min(1, (t - e.t0) / seconds);
        e.passes = r.passes;
        return e;
      }
      start += seconds * repeat;
      index += repeat;
    }
    // Rounding can leave t a hair past the last pass's computed end: that is the last pass.
    if (!last) return null;
    last.progress = 1;
    last.passes = r.passes;
    return last;
  }

  /** What lane g is doing at simulated time t: the event (with `progress` 0..1, and for
   * transfers the pass or round, peer, link, bytes) or null. Work that adds time to the lane
   * wins over a transfer running beside it (see transfersAt); among those, the
   * latest-starting record. */
  eventAt(g, t) {
    let found = null;
    let beside = null;
    for (const r of this.laneRecords(g)) {
      if (t < r.t0 || t >= r.t1) continue;
      if (r.overlaps) {
        if (!beside || r.t0 > beside.t0) beside = r;
        continue;
      }
      if (found && found.t0 > r.t0) continue;
      found = r;
    }
    const r = found ?? beside;
    return r ? this.eventOf(r, g, t) : null;
  }

  /** The transfers running beside lane g's work at simulated time t (pipeline sends and
   * receives): their lane events, each with `progress`. */
  transfersAt(g, t) {
    const out = [];
    for (const r of this.byLane.get(g) ?? []) {
      if (r.overlaps && t >= r.t0 && t < r.t1) out.push(this.eventOf(r, g, t));
    }
    return out.sort((a, b) => a.t0 - b.t0);
  }

  /** Seconds each time-bar group takes, averaged over the lanes (each lane adds up to the
   * step: the bar is the lanes' sum, not a separate estimate). Kinds that run beside the
   * lane's work add no time of their own and are left out. */
  groupSeconds() {
    const out = {};
    if (!this.gpus) return out;
    for (const r of this.records) {
      if (r.overlaps) continue;
      const group = this.groupOf[r.kind] ?? r.kind;
      out[group] = (out[group] ?? 0) + ((r.t1 - r.t0) * r.count) / this.gpus;
    }
    return out;
  }
}
