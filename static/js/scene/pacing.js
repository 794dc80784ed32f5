// How a planned step (pipeline stages, microbatches, tensor-parallel joins, experts) is paced
// on screen. Pure: no three.js, no DOM; timeline.js plays what this works out.
//
// How, and why, in docs/scene.md (pacing a planned step).

const COMPUTE = new Set(['forward', 'backward']);
export const MIN_RUN_S = 0.36; // under three colour changes a second
export const MIN_MOVE_S = 0.36; // a pulse crossing between GPUs: a readable moment
const MIN_MOVE_FLOOR_S = 0.14;
export const MAX_S = 12; // a planned step's length on screen, unless its runs alone need more
const MIN_BLOCK_S = 0.3;
const ABSORB = 0.01; // a wait shorter than this share of the step belongs to the work around it
const BASE_S = 2.0; // what the whole step would take in proportion, before the floors

/** Lane g's runs: [{t0, t1, show, mbs}] in time order (docs/scene.md). */
export function laneRuns(view, g) {
  const recs = view
    .laneRecords(g)
    .filter((r) => !r.overlaps && r.t1 > r.t0)
    .sort((a, b) => a.t0 - b.t0 || a.t1 - b.t1);
  const units = [];
  for (const r of recs) {
    const cur = units[units.length - 1];
    if (COMPUTE.has(r.kind)) {
      if (cur && cur.show === r.kind && cur.mb === r.mb) cur.t1 = Math.max(cur.t1, r.t1);
      else units.push({ t0: r.t0, t1: r.t1, show: r.kind, mb: r.mb });
    } else if (r.mb !== null && cur && COMPUTE.has(cur.show) && cur.mb === r.mb) {
      // A join, an all-to-all or a wait for a partner inside this microbatch's pass.
      cur.t1 = Math.max(cur.t1, r.t1);
    } else if (cur && cur.show === r.kind && cur.mb === null && r.mb === null) {
      cur.t1 = Math.max(cur.t1, r.t1);
    } else {
      units.push({ t0: r.t0, t1: r.t1, show: r.kind, mb: r.mb });
    }
  }
  // Waits too short to matter belong to the work before them (or after, at the start).
  const tiny = ABSORB * (view.stepS || 0);
  const kept = [];
  const work = (u) => u && COMPUTE.has(u.show);
  for (let i = 0; i < units.length; i++) {
    const u = units[i];
    const d = u.t1 - u.t0;
    const prev = units[i - 1];
    const next = units[i + 1];
    const between = work(prev) && work(next) && prev.show === next.show
      && d < 0.5 * (prev.t1 - prev.t0) && d < 0.5 * (next.t1 - next.t0);
    if (u.show === 'wait' && (d < tiny || between) && units.length > 1) {
      if (kept.length) kept[kept.length - 1].t1 = Math.max(kept[kept.length - 1].t1, u.t1);
      else if (units[i + 1]) units[i + 1].t0 = Math.min(units[i + 1].t0, u.t0);
      continue;
    }
    kept.push({ ...u });
  }
  // Back-to-back runs of the same kind are one (microbatch after microbatch).
  const runs = [];
  for (const u of kept) {
    const last = runs[runs.length - 1];
    if (last && last.show === u.show && u.t0 - last.t1 <= tiny) {
      last.t1 = Math.max(last.t1, u.t1);
      if (u.mb !== null && !last.mbs.includes(u.mb)) last.mbs.push(u.mb);
    } else {
      runs.push({ t0: u.t0, t1: u.t1, show: u.show, mbs: u.mb === null ? [] : [u.mb] });
    }
  }
  return runs;
}

function upperBound(xs, x) {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The index of the edge equal to x (or the nearest below). */
function edgeIndex(edges, x) {
  return Math.max(0, upperBound(edges, x) - 1);
}

/**
 * pace(view) -> {
 *   total       wall seconds the step takes at its natural pace
 *   blocks      [{t0, t1 (sim s), v0, v1 (fractions of `total`), kinds, primary, shows}]
 *   simAt(v)    simulated seconds at fraction v of the wall time (monotone)
 *   wallAt(t)   the fraction of the wall time at simulated second t
 *   runAt(g, t) lane g's run at simulated second t, with `progress` 0..1, or null
 *   runs        lane -> runs
 * }
 */
export function pace(view) {
  const gpus = view.gpus;
  const runs = new Array(gpus);
  for (let g = 0; g < gpus; g++) runs[g] = laneRuns(view, g);
  let move = MIN_MOVE_S;
  let out = paceWith(view, runs, move);
  for (let i = 0; i < 4 && out.total > MAX_S && move > MIN_MOVE_FLOOR_S; i++) {
    move = Math.max(MIN_MOVE_FLOOR_S, move * (MAX_S / out.total) * 0.95);
    out = paceWith(view, runs, move);
  }
  return out;
}

function paceWith(view, runs, move) {
  // The edges of everything that happens: records and runs.
  const set = new Set();
  for (const r of view.records) {
    if (r.t1 > r.t0) {
      set.add(r.t0);
      set.add(r.t1);
    }
  }
  for (const lane of runs) {
    for (const u of lane) {
      set.add(u.t0);
      set.add(u.t1);
    }
  }
  const edges = [...set].sort((a, b) => a - b);
  if (edges.length < 2) edges.push((edges[0] ?? 0) + (view.stepS || 1));
  const span = edges[edges.length - 1] - edges[0] || 1;
  const n = edges.length - 1;
  const w = new Float64Array(n);
  for (let i = 0; i < n; i++) w[i] = (BASE_S * (edges[i + 1] - edges[i])) / span;

  // Floors: every run and all-to-all gets a readable moment. Identical stretches
  // (the GPUs of a stage move together) are one constraint.
  const need = new Map();
  const want = (t0, t1, s) => {
    if (!(t1 > t0)) return;
    const key = `${t0}|${t1}`;
    const had = need.get(key);
    if (!had || had.s < s) need.set(key, { t0, t1, s });
  };
  for (const lane of runs) for (const u of lane) want(u.t0, u.t1, MIN_RUN_S);
  for (const r of view.records) if (r.a2a) want(r.t0, r.t1, move);
  // Earliest-ending first; a shortfall is spread over the stretch in proportion to its
  // simulated time, so inside a run the proportions stay true.
  const cons = [...need.values()].sort((a, b) => a.t1 - b.t1 || a.t0 - b.t0);
  for (const c of cons) {
    const ia = edgeIndex(edges, c.t0);
    const ib = edgeIndex(edges, c.t1);
    let have = 0;
    for (let i = ia; i < ib; i++) have += w[i];
    const short = c.s - have;
    if (short <= 0 || ib <= ia) continue;
    const sim = c.t1 - c.t0;
    for (let i = ia; i < ib; i++) w[i] += (short * (edges[i + 1] - edges[i])) / sim;
  }
  const cum = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) cum[i + 1] = cum[i] + w[i];
  const total = cum[n] || 1;

  const wallAt = (t) => {
    if (t <= edges[0]) return 0;
    if (t >= edges[n]) return 1;
    const i = Math.min(n - 1, edgeIndex(edges, t));
    const f = (t - edges[i]) / (edges[i + 1] - edges[i] || 1);
    return (cum[i] + f * w[i]) / total;
  };
  const simAt = (v) => {
    const x = Math.min(1, Math.max(0, v)) * total;
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cum[mid + 1] <= x) lo = mid + 1;
      else hi = mid;
    }
    const i = Math.min(n - 1, lo);
    const f = w[i] > 0 ? (x - cum[i]) / w[i] : 0;
    return edges[i] + Math.min(1, Math.max(0, f)) * (edges[i + 1] - edges[i]);
  };

  // Blocks: cut where any lane's run changes; a block too short to read joins the one before.
  const cutSet = new Set([edges[0], edges[n]]);
  for (const lane of runs) for (const u of lane) cutSet.add(u.t0);
  const cuts = [...cutSet].sort((a, b) => a - b);
  const minV = MIN_BLOCK_S / total;
  const blocks = [];
  for (let i = 1; i < cuts.length; i++) {
    const t0 = cuts[i - 1];
    const t1 = cuts[i];
    const v0 = wallAt(t0);
    const v1 = wallAt(t1);
    const last = blocks[blocks.length - 1];
    if (last && (v1 - v0 < minV || last.v1 - last.v0 < minV)) {
      last.t1 = t1;
      last.v1 = v1;
    } else {
      blocks.push({ t0, t1, v0, v1 });
    }
  }
  describeBlocks(blocks, view, runs, wallAt, total);

  const runAt = (g, t) => {
    const lane = runs[g];
    if (!lane?.length) return null;
    let lo = 0;
    let hi = lane.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (lane[mid].t0 <= t) lo = mid + 1;
      else hi = mid;
    }
    const u = lane[lo - 1];
    if (!u || t >= u.t1) return null;
    const a = wallAt(u.t0);
    const b = wallAt(u.t1);
    return { ...u, progress: b > a ? (wallAt(t) - a) / (b - a) : 1 };
  };

  return { total, blocks, simAt, wallAt, runAt, runs, move };
}

// What a block is about, for its caption: new work first (a stage starting its forward pass
// matters more than a hand-off still in flight), then what moves between GPUs, then waiting.
const FRESH_ORDER = ['forward', 'backward', 'all_to_all', 'p2p', 'tp_allreduce', 'allreduce', 'optimizer', 'checkpoint', 'data', 'wait'];
const STILL_ORDER = ['all_to_all', 'p2p', 'tp_allreduce', 'allreduce', 'optimizer', 'checkpoint', 'data', 'wait', 'backward', 'forward'];

/** Each block's kinds (everything going on in it, transfers beside the work included), what
 * the GPUs show (`shows`), and its `primary`: the first of FRESH_ORDER that is new in it, else
 * the first of STILL_ORDER going on (kinds these lists lack come last, by GPU-seconds). */
function describeBlocks(blocks, view, runs, wallAt, total) {
  let before = new Set();
  for (const b of blocks) {
    const weight = new Map();
    const add = (k, x) => weight.set(k, (weight.get(k) ?? 0) + x);
    const overlap = (t0, t1) => Math.max(0, wallAt(Math.min(t1, b.t1)) - wallAt(Math.max(t0, b.t0))) * total;
    const shows = new Set();
    for (const lane of runs) {
      for (const u of lane) {
        if (u.t1 <= b.t0 || u.t0 >= b.t1) continue;
        const x = overlap(u.t0, u.t1);
        if (x <= 0) continue;
        shows.add(u.show);
        add(u.show, x);
      }
    }
    const kinds = new Set(shows);
    for (const r of view.records) {
      if (r.t1 <= b.t0 || r.t0 >= b.t1 || !(r.t1 > r.t0)) continue;
      const x = overlap(r.t0, r.t1);
      if (x <= 0) continue;
      kinds.add(r.kind);
      if (!shows.has(r.kind)) add(r.kind, x * r.count);
    }
    const first = (order, from) => order.find((k) => from.has(k)) ?? null;
    const byWeight = (from) => {
      let best = null;
      for (const k of from) if (best === null || weight.get(k) > weight.get(best)) best = k;
      return best;
    };
    const fresh = new Set([...weight.keys()].filter((k) => !before.has(k)));
    const all = new Set(weight.keys());
    b.primary = first(FRESH_ORDER, fresh) ?? first(STILL_ORDER, all) ?? byWeight(all);
    b.kinds = kinds;
    b.shows = shows;
    before = all;
  }
}
