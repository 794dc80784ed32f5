// The scene layout (static/js/scene/layout.js), a pure function of the scene spec and the
// cluster topology, on topologies the engine builds (app/engine/cluster.py), checked against
// app/notebook/layout.py (the same rules, written again in Python) and against the rules of
// the design: parts left to right, data lake -> loaders -> servers -> checkpoints, the
// fabric in tiers above the servers.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { DIMS, boardGrid, frameBox, gpuBox, layout, route } from '../../static/js/scene/layout.js';
import { fixture } from './fixture.mjs';

const { scene, cases } = fixture('layouts.json');
const spec = { parts: scene.parts };
const PARTS = ['datalake', 'loaders', 'gpus', 'fabric', 'ring', 'model', 'checkpoints'];
const name = (c) => `${c.shape.gpus} GPUs on ${c.shape.servers} servers`;
const inside = (b, p, eps = 1e-9) => p.every((v, k) => v >= b.min[k] - eps && v <= b.max[k] + eps);

test('the positions are the Python port\'s, resting and exploded, for every cluster shape', () => {
  for (const c of cases) {
    for (const exploded of [false, true]) {
      const lay = layout(spec, c.topology, { exploded });
      const want = c.python[exploded ? 'exploded' : 'resting'];
      assert.deepEqual(lay.server, want.server, name(c));
      for (const key of ['gpus', 'servers', 'leaves', 'spines']) {
        const ours = [...lay[key]].sort((a, b) => a.id - b.id);
        assert.equal(ours.length, want[key].length, `${name(c)} ${key}`);
        ours.forEach((p, i) => {
          const w = want[key][i];
          assert.equal(p.id, w.id);
          for (const axis of ['x', 'y', 'z']) {
            assert.ok(Math.abs(p[axis] - w[axis]) < 1e-9, `${name(c)} ${key} ${p.id} ${axis}: ${p[axis]} vs ${w[axis]}`);
          }
        });
      }
    }
  }
});

test('every GPU, server and switch has its own place; servers never overlap', () => {
  for (const c of cases) {
    const lay = layout(spec, c.topology);
    const t = c.topology;
    assert.equal(lay.gpus.length, t.gpus.length, name(c));
    assert.equal(lay.servers.length, t.servers.length, name(c));
    assert.equal(lay.leaves.length, t.leaves.length, name(c));
    assert.equal(lay.spines.length, t.spines.length, name(c));
    assert.equal(new Set(lay.gpus.map((g) => `${g.x},${g.y},${g.z}`)).size, t.gpus.length, name(c));
    const { w, d } = lay.server;
    for (let i = 0; i < lay.servers.length; i++) {
      for (let j = i + 1; j < lay.servers.length; j++) {
        const a = lay.servers[i];
        const b = lay.servers[j];
        const apart = Math.abs(a.x - b.x) >= w || Math.abs(a.z - b.z) >= d;
        assert.ok(apart, `${name(c)}: servers ${a.id} and ${b.id} overlap`);
      }
    }
    // Each GPU sits on its own server's board, and its memory wall stands right behind it.
    const byId = new Map(lay.servers.map((s) => [s.id, s]));
    for (const g of lay.gpus) {
      const s = byId.get(g.server);
      assert.ok(Math.abs(g.x - s.x) < w / 2 && Math.abs(g.z - s.z) < d / 2, `${name(c)} GPU ${g.id}`);
      assert.equal(g.wall.x, g.x);
      assert.ok(g.wall.z < g.z, `${name(c)} GPU ${g.id}: wall in front of it`);
    }
    // Switches sit over the servers they join: a leaf over its group, at the group's middle.
    for (const leaf of lay.leaves) {
      const mine = lay.servers.filter((s) => s.leaf === leaf.id);
      const xs = mine.map((s) => s.x);
      assert.ok(leaf.x >= Math.min(...xs) - 1e-9 && leaf.x <= Math.max(...xs) + 1e-9, `${name(c)} leaf ${leaf.id}`);
    }
  }
});

test('the data travels left to right and the fabric stacks above the racks', () => {
  for (const c of cases) {
    const lay = layout(spec, c.topology);
    const p = lay.parts;
    assert.ok(p.datalake.max[0] < p.loaders.min[0], `${name(c)}: lake before loaders`);
    assert.ok(p.loaders.max[0] < p.gpus.min[0], `${name(c)}: loaders before servers`);
    assert.ok(p.gpus.max[0] < p.checkpoints.min[0], `${name(c)}: servers before checkpoints`);
    // The model panel floats clear of the racks.
    assert.ok(p.model.min[0] > p.gpus.max[0], name(c));
    const rackTop = p.gpus.max[1];
    for (const leaf of lay.leaves) assert.ok(leaf.y - DIMS.leaf[1] / 2 > rackTop, `${name(c)} leaf ${leaf.id}`);
    if (lay.spines.length && lay.leaves.length) {
      assert.ok(Math.min(...lay.spines.map((s) => s.y)) > Math.max(...lay.leaves.map((l) => l.y)), name(c));
    }
    // Every part's box lies inside the box of everything.
    for (const id of PARTS) assert.ok(inside(lay.all, p[id].min) && inside(lay.all, p[id].max), `${name(c)} ${id}`);
  }
});

test('upright, the scene stands tall: the data in front of the racks, the model over the fabric', () => {
  for (const c of cases) {
    const wide = layout(spec, c.topology);
    const lay = layout(spec, c.topology, { portrait: true });
    const p = lay.parts;
    const width = (b) => b.max[0] - b.min[0];
    // A fifth narrower than the wide layout at least, and half as tall again for its width.
    const tall = (b) => (b.max[1] - b.min[1]) / width(b);
    assert.ok(width(lay.all) < 0.8 * width(wide.all), `${name(c)}: ${width(lay.all)} vs ${width(wide.all)}`);
    assert.ok(tall(lay.all) > 1.5 * tall(wide.all), `${name(c)}: ${tall(lay.all)} vs ${tall(wide.all)}`);
    // The same GPUs, servers and switches, each in its own place.
    assert.equal(lay.gpus.length, wide.gpus.length, name(c));
    assert.equal(new Set(lay.gpus.map((g) => `${g.x},${g.y},${g.z}`)).size, lay.gpus.length, name(c));
    // The lake, the loaders and the checkpoints stand in a row in front of the racks, in the
    // data's order, clear of each other.
    for (const id of ['datalake', 'loaders', 'checkpoints']) assert.ok(p[id].min[2] > p.gpus.max[2], `${name(c)} ${id}`);
    assert.ok(p.datalake.max[0] < p.loaders.min[0], `${name(c)}: lake before loaders`);
    assert.ok(p.loaders.max[0] < p.checkpoints.min[0], `${name(c)}: loaders before checkpoints`);
    // The model tops the fabric, which still stacks above the racks.
    assert.ok(p.model.min[1] > p.fabric.max[1], name(c));
    assert.ok(Math.min(...lay.leaves.map((l) => l.y)) - DIMS.leaf[1] / 2 > p.gpus.max[1], name(c));
    for (const id of PARTS) assert.ok(inside(lay.all, p[id].min) && inside(lay.all, p[id].max), `${name(c)} ${id}`);
  }
});

test('ring paths follow the links the engine says each hop crosses', () => {
  for (const c of cases.filter((x) => x.topology.ring_links.length)) {
    const lay = layout(spec, c.topology);
    const links = c.topology.ring_links;
    assert.deepEqual(lay.ringPaths.map((r) => r.kind), links.map((l) => l.kind), name(c));
    const leaves = new Map(lay.leaves.map((l) => [l.id, l]));
    const spines = new Map(lay.spines.map((s) => [s.id, s]));
    const lowestLeaf = Math.min(...lay.leaves.map((l) => l.y));
    links.forEach((link, i) => {
      const path = lay.ringPaths[i];
      const pts = path.points.map((q) => q.join(','));
      const a = lay.gpus.find((g) => g.id === link.src);
      const b = lay.gpus.find((g) => g.id === link.dst);
      // From above the sending GPU to above the receiving one.
      assert.equal(path.points[0][0], a.x);
      assert.equal(path.points[path.points.length - 1][0], b.x);
      for (const hop of link.path ?? []) {
        const [kind, id] = hop.split(':');
        const sw = kind === 'leaf' ? leaves.get(+id) : kind === 'spine' ? spines.get(+id) : null;
        if (sw) assert.ok(pts.includes(`${sw.x},${sw.y},${sw.z}`), `${name(c)} hop ${i} misses ${hop}`);
      }
      if (link.kind === 'nvlink') assert.ok(Math.max(...path.points.map((q) => q[1])) < lowestLeaf);
      // Its length is the sum of its segments.
      let len = 0;
      for (let k = 1; k < path.points.length; k++) len += Math.hypot(...path.points[k].map((v, j) => v - path.points[k - 1][j]));
      assert.ok(Math.abs(path.length - len) < 1e-3, `${path.length} vs ${len}`);
    });
    const kinds = new Set(links.map((l) => l.kind));
    if (c.topology.servers.length > 1) assert.ok(kinds.has('nvlink') && kinds.size > 1, name(c));
  }
});

test('a route between two leaves crosses a spine, the same one both ways', () => {
  const c = cases.find((x) => x.shape.gpus === 64);
  const lay = layout(spec, c.topology);
  const byServer = (s) => lay.gpus.find((g) => g.server === s);
  const a = byServer(0);
  const farServer = lay.servers.find((s) => s.leaf !== lay.servers[0].leaf);
  const b = byServer(farServer.id);
  const there = route(lay, a.id, b.id, 'spine');
  const back = route(lay, b.id, a.id, 'spine');
  const spineYs = new Set(lay.spines.map((s) => s.y));
  const crossings = there.points.filter((q) => spineYs.has(q[1]));
  assert.equal(crossings.length, 1);
  assert.deepEqual(back.points.filter((q) => spineYs.has(q[1])), crossings);
  assert.equal(there.length, back.length);
  // Inside one server: a short arc, no switch.
  const mate = lay.gpus.find((g) => g.server === a.server && g.id !== a.id);
  const arc = route(lay, a.id, mate.id, 'nvlink');
  assert.equal(arc.points.length, 3);
  assert.ok(arc.length < there.length);
  assert.equal(route(lay, a.id, 9999, 'nvlink'), null);
});

test('boards hold GPUs in two rows from four GPUs on', () => {
  for (let n = 1; n <= 16; n++) {
    const { cols, rows } = boardGrid(n);
    assert.equal(rows, n >= 4 ? 2 : 1, `${n}`);
    assert.ok(cols * rows >= n && (cols - 1) * rows < n, `${n}: ${cols}x${rows}`);
  }
  // A server is as wide as its columns of GPUs, as deep as its rows.
  const lay = layout(spec, cases.find((x) => x.shape.gpus === 12).topology);
  assert.deepEqual(lay.grid, { cols: 3, rows: 2 });
  assert.ok(Math.abs(lay.server.w - (3 * DIMS.gpuPitch[0] + 0.5)) < 1e-12);
});

test('ring neighbours on a board sit side by side (the back row runs right to left)', () => {
  const lay = layout(spec, cases.find((x) => x.shape.gpus === 8).topology);
  const pitch = Math.hypot(...DIMS.gpuPitch) + 1e-9;
  const board = lay.gpus.filter((g) => g.server === 0).sort((a, b) => a.id - b.id);
  for (let i = 1; i < board.length; i++) {
    const d = Math.hypot(board[i].x - board[i - 1].x, board[i].z - board[i - 1].z);
    assert.ok(d <= pitch, `GPUs ${i - 1} and ${i} are ${d} apart`);
  }
});

test('anchors for all seven parts; the spec\'s own anchor wins', () => {
  const c = cases.find((x) => x.shape.gpus === 32);
  const lay = layout(spec, c.topology);
  assert.deepEqual(Object.keys(lay.anchors).sort(), [...PARTS].sort());
  for (const id of PARTS) {
    const given = scene.parts.find((p) => p.id === id)?.anchor;
    if (Array.isArray(given)) assert.deepEqual(lay.anchors[id], given);
  }
  const mine = layout({ parts: [{ id: 'model', anchor: [1, 2, 3] }] }, c.topology);
  assert.deepEqual(mine.anchors, { model: [1, 2, 3] });
  // Without a spec anchor a part's label floats above the middle of its box.
  const bare = layout({ parts: [{ id: 'datalake' }] }, c.topology);
  const b = bare.parts.datalake;
  assert.ok(Math.abs(bare.anchors.datalake[0] - (b.min[0] + b.max[0]) / 2) < 1e-3);
  assert.ok(bare.anchors.datalake[1] > b.max[1]);
});

test('exploding lifts the fabric tiers further apart; loaders and slots follow the config', () => {
  const c = cases.find((x) => x.shape.gpus === 32);
  const rest = layout(spec, c.topology);
  const up = layout(spec, c.topology, { exploded: true });
  const near = (a, b) => assert.ok(Math.abs(a - b) < 1e-9, `${a} vs ${b}`);
  near(up.leaves[0].y - rest.leaves[0].y, DIMS.explodeLift);
  near(up.spines[0].y - rest.spines[0].y, 2 * DIMS.explodeLift);
  assert.deepEqual(up.gpus, rest.gpus); // the servers stay where they are
  const more = layout(spec, c.topology, { loaders: 3, prefetch: 5 });
  assert.equal(more.loaders.length, 3);
  assert.equal(more.slots.length, 15);
  assert.deepEqual(more.slots.filter((s) => s.loader === 2).map((s) => s.slot), [0, 1, 2, 3, 4]);
  // Queue slots run left to right towards the servers.
  const xs = more.slots.filter((s) => s.loader === 0).map((s) => s.x);
  assert.deepEqual(xs, [...xs].sort((a, b) => a - b));
  assert.ok(Math.max(...xs) < more.parts.gpus.min[0]);
  const one = layout(spec, c.topology, { loaders: 0, prefetch: 0 });
  assert.equal(one.loaders.length, 1); // at least one loader and one slot
  assert.equal(one.slots.length, 1);
});

test('gpuBox singles out one GPU and its wall; frameBox joins parts', () => {
  const lay = layout(spec, cases.find((x) => x.shape.gpus === 8).topology);
  const g = lay.gpus[3];
  const b = gpuBox(lay, 3);
  assert.ok(inside(b, [g.x, g.y, g.z]) && inside(b, [g.wall.x, g.wall.y, g.wall.z]));
  for (const other of lay.gpus.filter((x) => x.id !== 3)) assert.ok(!inside(b, [other.x, other.y, other.z], 0));
  assert.equal(gpuBox(lay, 99), null);
  assert.equal(frameBox(lay, ['all']), lay.all);
  const both = frameBox(lay, ['datalake', 'checkpoints']);
  assert.equal(both.min[0], lay.parts.datalake.min[0]);
  assert.equal(both.max[0], lay.parts.checkpoints.max[0]);
});
