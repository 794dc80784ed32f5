// Where everything sits: a pure function of the scene spec and the cluster topology.
//
// No three.js here on purpose: tests import this module in a plain page and check the
// positions without WebGL. World units are roughly metres, y is up, data travels along +x
// (lake -> loaders -> GPU servers -> checkpoints), the fabric stacks above the servers
// (leaves, then spines), and the camera looks from +z.

export const DIMS = Object.freeze({
  gpu: [0.9, 0.55, 0.9], // w, h, d of one GPU package
  gpuPitch: [1.15, 1.2], // x and z spacing of GPUs on a server board
  wall: [0.9, 2.1, 0.1], // memory wall behind each GPU: w, full height, thickness
  chassisH: 0.35,
  serverGap: 0.6, // between servers under one leaf
  leafGap: 1.8, // between leaf groups
  leaf: [3.0, 0.45, 1.1],
  spine: [3.6, 0.5, 1.3],
  leafY: 6.6,
  spineY: 11.4,
  explodeLift: 1.6, // exploded view: fabric tiers lift this much further apart
  lakeR: 2.5,
  disk: [1.1, 0.22], // checkpoint disk radius, height
});

const round = (v) => Math.round(v * 1000) / 1000;
const box = () => ({ min: [Infinity, Infinity, Infinity], max: [-Infinity, -Infinity, -Infinity] });

function grow(b, x, y, z, hx = 0, hy = 0, hz = 0) {
  b.min[0] = Math.min(b.min[0], x - hx);
  b.min[1] = Math.min(b.min[1], y - hy);
  b.min[2] = Math.min(b.min[2], z - hz);
  b.max[0] = Math.max(b.max[0], x + hx);
  b.max[1] = Math.max(b.max[1], y + hy);
  b.max[2] = Math.max(b.max[2], z + hz);
}

function merge(into, b) {
  grow(into, b.min[0], b.min[1], b.min[2]);
  grow(into, b.max[0], b.max[1], b.max[2]);
}

/** Columns and rows of GPUs on one server board: two rows when there are four or more. */
export function boardGrid(perServer) {
  const rows = perServer >= 4 ? 2 : 1;
  return { cols: Math.ceil(perServer / rows), rows };
}

/**
 * layout(spec, topology, opts) -> positions of every drawn thing, the boxes of the seven parts
 * and their label anchors.
 * opts: { loaders: number of CPU loader workers, prefetch: queue slots per loader,
 *         exploded: lift the fabric tiers apart, maxDisks: checkpoint disks drawn,
 *         portrait: a tall screen (a phone held upright): a leaf's servers stand one behind
 *         another, the data lake, loaders and checkpoints line up in front of the racks and
 *         the model hangs above the fabric, so the scene is tall rather than wide }
 */
export function layout(spec, topology, opts = {}) {
  const loaders = Math.max(1, opts.loaders ?? 2);
  const prefetch = Math.max(1, opts.prefetch ?? 4);
  const exploded = !!opts.exploded;
  const portrait = !!opts.portrait;
  const maxDisks = opts.maxDisks ?? 6;
  const gpus = topology.gpus || [];
  const servers = topology.servers || [];
  const leaves = topology.leaves || [];
  const spines = topology.spines || [];
  const perServer = Math.max(1, servers.length ? servers[0].gpus.length : 1);
  const grid = boardGrid(perServer);
  const [px, pz] = DIMS.gpuPitch;
  const serverW = grid.cols * px + 0.5;
  const serverD = grid.rows * pz + 0.6;

  const parts = {};
  for (const id of ['datalake', 'loaders', 'gpus', 'fabric', 'ring', 'model', 'checkpoints']) {
    parts[id] = box();
  }

  // Servers, grouped under their leaf; a group lays its servers out in a near-square grid so
  // 32 servers stay a block rather than a very long line.
  const serverPos = new Array(servers.length);
  const leafPos = [];
  let x = 0;
  let maxX = 0;
  const groups = leaves.length ? leaves : [{ id: 0, servers: servers.map((s) => s.id) }];
  // Upright, the leaf groups also wrap into rows, each row further back.
  const perRow = portrait ? Math.max(2, Math.ceil(Math.sqrt(groups.length))) : Infinity;
  let [z0, rowDepth, inRow] = [0, 0, 0];
  for (const leaf of groups) {
    const ids = leaf.servers.length ? leaf.servers : [];
    const near = portrait ? Math.sqrt(ids.length / 2) : Math.sqrt(ids.length * 1.5);
    const cols = Math.max(1, Math.min(ids.length, Math.ceil(near)));
    const rowsN = Math.max(1, Math.ceil(ids.length / cols));
    const groupW = cols * serverW + (cols - 1) * DIMS.serverGap;
    if (ids.length && inRow === perRow) [x, z0, rowDepth, inRow] = [0, z0 - rowDepth - 2.4, 0, 0];
    ids.forEach((sid, i) => {
      const c = i % cols;
      const r = Math.floor(i / cols);
      const sx = x + c * (serverW + DIMS.serverGap) + serverW / 2;
      // Later rows step back (away from the camera) and slightly up, like tiered seating.
      const sz = z0 - r * (serverD + 0.9);
      serverPos[sid] = { id: sid, leaf: leaf.id, x: sx, y: DIMS.chassisH / 2, z: sz };
    });
    const zMid = z0 - ((rowsN - 1) * (serverD + 0.9)) / 2;
    if (ids.length) {
      leafPos.push({ id: leaf.id, x: x + groupW / 2, y: DIMS.leafY + (exploded ? DIMS.explodeLift : 0), z: zMid });
      maxX = Math.max(maxX, x + groupW);
      x += groupW + DIMS.leafGap;
      rowDepth = Math.max(rowDepth, rowsN * (serverD + 0.9));
      inRow += 1;
    }
  }
  const clusterMinX = 0;
  const clusterMaxX = Math.max(serverW, maxX);
  const clusterMid = (clusterMinX + clusterMaxX) / 2;

  const out = {
    dims: DIMS,
    grid,
    server: { w: serverW, d: serverD, h: DIMS.chassisH },
    servers: [],
    gpus: [],
    leaves: [],
    spines: [],
    cables: [],
    ringPaths: [],
    lake: null,
    shards: [],
    loaders: [],
    slots: [],
    checkpoints: null,
    model: null,
    parts,
    anchors: {},
    all: box(),
  };

  for (const s of serverPos) {
    if (!s) continue;
    out.servers.push({ ...s, x: round(s.x), z: round(s.z) });
    grow(parts.gpus, s.x, s.y, s.z, serverW / 2, DIMS.chassisH / 2, serverD / 2);
  }

  const gpuTopY = DIMS.chassisH + DIMS.gpu[1] / 2;
  for (const g of gpus) {
    const s = serverPos[g.server];
    // Snake order (back row runs right to left) so consecutive ring neighbours sit side by
    // side and the ring's track on a board is a tidy loop.
    const r = Math.floor(g.local / grid.cols);
    const c = r % 2 === 0 ? g.local % grid.cols : grid.cols - 1 - (g.local % grid.cols);
    const gx = s.x - ((grid.cols - 1) * px) / 2 + c * px;
    // Front row nearest the camera; its memory wall stands behind each GPU.
    const gz = s.z + ((grid.rows - 1) * pz) / 2 - r * pz + 0.15;
    const pos = { id: g.id, server: g.server, x: round(gx), y: round(gpuTopY), z: round(gz) };
    pos.wall = { x: pos.x, y: round(DIMS.chassisH + DIMS.wall[1] / 2), z: round(gz - 0.55) };
    out.gpus.push(pos);
    grow(parts.gpus, gx, DIMS.chassisH + DIMS.wall[1], gz, 0.5, 0, 0.5);
  }

  // Fabric: leaves over their groups, spines spread evenly over the whole cluster.
  const spineY = DIMS.spineY + (exploded ? 2 * DIMS.explodeLift : 0);
  const spineSpan = Math.max(clusterMaxX - clusterMinX, 6);
  const zAll = leafPos.length ? leafPos.reduce((a, l) => a + l.z, 0) / leafPos.length : 0;
  spines.forEach((sp, i) => {
    const sx = clusterMid + (spines.length > 1 ? (i / (spines.length - 1) - 0.5) * spineSpan * 0.55 : 0);
    out.spines.push({ id: sp.id, x: round(sx), y: spineY, z: round(zAll - 0.5) });
  });
  for (const l of leafPos) out.leaves.push({ ...l, x: round(l.x), z: round(l.z) });
  const leafById = new Map(out.leaves.map((l) => [l.id, l]));
  const spineById = new Map(out.spines.map((s) => [s.id, s]));
  for (const l of out.leaves) {
    grow(parts.fabric, l.x, l.y, l.z, DIMS.leaf[0] / 2, DIMS.leaf[1] / 2, DIMS.leaf[2] / 2);
  }
  for (const s of out.spines) {
    grow(parts.fabric, s.x, s.y, s.z, DIMS.spine[0] / 2, DIMS.spine[1] / 2, DIMS.spine[2] / 2);
  }
  const serverTop = (s) => [s.x, DIMS.chassisH + DIMS.wall[1] + 0.3, s.z];
  for (const s of out.servers) {
    const l = leafById.get(s.leaf);
    if (l) out.cables.push({ kind: 'leaf', from: serverTop(s), to: [l.x, l.y - DIMS.leaf[1] / 2, l.z] });
  }
  for (const l of out.leaves) {
    for (const s of out.spines) {
      out.cables.push({ kind: 'spine', from: [l.x, l.y + DIMS.leaf[1] / 2, l.z], to: [s.x, s.y - DIMS.spine[1] / 2, s.z] });
    }
  }

  // Ring paths: the route a pulse follows for each hop, over the links the hop really uses.
  for (const link of topology.ring_links || []) {
    const r = route(out, link.src, link.dst, link.kind, link.path);
    if (!r) continue;
    out.ringPaths.push(r);
    for (const p of r.points) grow(parts.ring, p[0], p[1], p[2], 0.2, 0.2, 0.2);
  }
  if (!out.ringPaths.length) merge(parts.ring, parts.gpus);

  // Left of the cluster: the data lake, then the loaders with their prefetch queues (upright:
  // in a row in front of the racks, left to right).
  const frontZ = parts.gpus.max[2] - 1.2;
  const rowZ = round(parts.gpus.max[2] + 3.6);
  const loaderX = portrait ? clusterMinX + 2 * DIMS.lakeR + 1.4 : clusterMinX - 5.0;
  const lakeX = portrait ? clusterMinX + DIMS.lakeR - 0.4 : loaderX - 5.2;
  out.lake = { x: lakeX, y: 0.25, z: portrait ? rowZ : round(frontZ - 1.5), r: DIMS.lakeR };
  grow(parts.datalake, lakeX, 0.6, out.lake.z, DIMS.lakeR, 0.6, DIMS.lakeR);
  const shardCols = 6;
  for (let i = 0; i < 18; i++) {
    const c = i % shardCols;
    const r = Math.floor(i / shardCols);
    out.shards.push({ x: round(lakeX - 1.75 + c * 0.7), y: 0.62 + r * 0.0, z: round(out.lake.z - 1.0 + r * 0.95) });
  }
  const loaderPitch = 1.7;
  for (let w = 0; w < loaders; w++) {
    const lz = round(out.lake.z + ((loaders - 1) * loaderPitch) / 2 - w * loaderPitch);
    out.loaders.push({ id: w, x: loaderX, y: 0.55, z: lz });
    grow(parts.loaders, loaderX, 1.1, lz, 1.0, 1.1, 0.6);
    for (let s = 0; s < prefetch; s++) {
      const sx = round(loaderX + 1.4 + s * 0.55);
      out.slots.push({ loader: w, slot: s, x: sx, y: 0.35, z: lz });
      grow(parts.loaders, sx, 0.35, lz, 0.25, 0.25, 0.3);
    }
  }

  // Right of the cluster: checkpoint disks on a plinth; the model panel above them, clear of
  // the racks and the fabric (upright: the disks end the front row, the model tops the
  // fabric).
  const slotsEnd = loaderX + 1.4 + (prefetch - 1) * 0.55 + 0.25;
  const ckX = portrait ? Math.max(clusterMaxX - 1.5, slotsEnd + 2.2) : clusterMaxX + 3.2;
  const ckZ = portrait ? rowZ : round(frontZ - 1.0);
  out.checkpoints = { x: round(ckX), y: 0.3, z: ckZ, maxDisks, disk: DIMS.disk };
  grow(parts.checkpoints, ckX, 0.3 + (maxDisks * (DIMS.disk[1] + 0.08)) / 2, out.checkpoints.z, 1.5, (maxDisks * 0.3) / 2 + 0.3, 1.5);
  const mw = 6.2;
  const mh = 5.6;
  out.model = portrait
    ? { x: round(clusterMid), y: round(spineY + DIMS.spine[1] + 0.9 + mh / 2), z: round(zAll - 0.5), w: mw, h: mh }
    : { x: round(ckX + 0.6), y: round(DIMS.leafY + 0.2), z: round(frontZ - 1.0), w: mw, h: mh };
  grow(parts.model, out.model.x, out.model.y, out.model.z, mw / 2, mh / 2, 0.2);

  for (const id of Object.keys(parts)) merge(out.all, parts[id]);
  for (const p of spec?.parts || []) {
    const b = parts[p.id];
    if (!b) continue;
    if (Array.isArray(p.anchor)) out.anchors[p.id] = p.anchor.slice();
    else out.anchors[p.id] = [round((b.min[0] + b.max[0]) / 2), round(b.max[1] + 0.6), round((b.min[2] + b.max[2]) / 2)];
  }
  // Upright, the model's label goes beside it: above it is the top of the screen.
  if (portrait && out.anchors.model && !Array.isArray(spec?.parts?.find((p) => p.id === 'model')?.anchor)) {
    out.anchors.model = [round(out.model.x + mw / 2 + 3), out.model.y, out.model.z];
  }
  // The ring and the GPUs share a box; lift the ring's label so the two do not sit together.
  if (out.anchors.ring && !Array.isArray(spec?.parts?.find((p) => p.id === 'ring')?.anchor)) {
    const g = parts.gpus;
    out.anchors.ring = [round(g.min[0] + (g.max[0] - g.min[0]) * 0.25), round(DIMS.leafY - 1.6), round(g.max[2])];
    out.anchors.gpus = [round(g.min[0] + (g.max[0] - g.min[0]) * 0.7), round(g.max[1] + 0.6), round(g.max[2])];
  }
  return out;
}

const lookups = new WeakMap();

function lookup(lay) {
  let m = lookups.get(lay);
  if (!m) {
    m = {
      gpu: new Map(lay.gpus.map((g) => [g.id, g])),
      server: new Map(lay.servers.map((s) => [s.id, s])),
      leaf: new Map(lay.leaves.map((l) => [l.id, l])),
      spine: new Map(lay.spines.map((s) => [s.id, s])),
    };
    lookups.set(lay, m);
  }
  return m;
}

/**
 * route(lay, src, dst, kind, path) -> {src, dst, kind, points, length} | null: the way a
 * pulse from GPU src to GPU dst travels over a link of `kind` ("nvlink" inside a server: a
 * short arc over the board; "leaf": up to the leaf switch and down; "spine": leaf, spine,
 * leaf). `path` names the switches (["leaf:0", "spine:1", "leaf:1"]) where the topology
 * says; otherwise they follow from where the two GPUs sit, and a spine is picked by the
 * pair so a pair's two directions share one route.
 */
export function route(lay, src, dst, kind, path = null) {
  const m = lookup(lay);
  const a = m.gpu.get(src);
  const b = m.gpu.get(dst);
  if (!a || !b) return null;
  const gpuTopY = DIMS.chassisH + DIMS.gpu[1] / 2;
  const top = gpuTopY + DIMS.gpu[1] / 2 + 0.12;
  const serverTop = (s) => [s.x, DIMS.chassisH + DIMS.wall[1] + 0.3, s.z];
  const pts = [[a.x, top, a.z]];
  const sa = m.server.get(a.server);
  const sb = m.server.get(b.server);
  if (kind === 'nvlink' || a.server === b.server) {
    // Inside the server: a short arc over the board.
    pts.push([(a.x + b.x) / 2, top + 0.35, (a.z + b.z) / 2]);
  } else {
    let hops = path;
    if (!hops || !hops.length) {
      const la = sa?.leaf ?? 0;
      const lb = sb?.leaf ?? 0;
      if (la === lb) hops = [`leaf:${la}`];
      else {
        const spines = lay.spines.map((s) => s.id);
        const spine = spines.length ? spines[Math.min(src, dst) % spines.length] : null;
        hops = spine === null ? [`leaf:${la}`, `leaf:${lb}`] : [`leaf:${la}`, `spine:${spine}`, `leaf:${lb}`];
      }
    }
    if (sa) pts.push(serverTop(sa));
    for (const hop of hops) {
      const [what, id] = hop.split(':');
      const sw = what === 'leaf' ? m.leaf.get(+id) : what === 'spine' ? m.spine.get(+id) : null;
      if (sw) pts.push([sw.x, sw.y, sw.z]);
    }
    if (sb) pts.push(serverTop(sb));
  }
  pts.push([b.x, top, b.z]);
  const rounded = pts.map((p) => p.map(round));
  let len = 0;
  for (let i = 1; i < rounded.length; i++) len += Math.hypot(...rounded[i].map((v, k) => v - rounded[i - 1][k]));
  return { src, dst, kind, points: rounded, length: round(len) };
}

/** The box framing a set of part ids ("all" = everything) from a layout. */
/** The box round one GPU (0-based) and its memory wall, to single it out; null if none. */
export function gpuBox(lay, i) {
  const g = lay.gpus?.[i];
  if (!g) return null;
  return {
    min: [g.x - 0.5, DIMS.chassisH, g.wall.z - 0.25],
    max: [g.x + 0.5, DIMS.chassisH + DIMS.wall[1], g.z + 0.5],
  };
}

export function frameBox(lay, ids) {
  if (!ids || ids.includes('all')) return lay.all;
  const b = box();
  for (const id of ids) if (lay.parts[id]) merge(b, lay.parts[id]);
  return b;
}
