// Part 3, the GPU servers: server boards, GPU packages that glow with the pass they are in,
// and each GPU's memory wall.
//
// Each GPU plays its own lane of the step's trace: forward glows amber, backward pink (from
// the palette). A GPU that waits (for data, or for its turn) is hatched grey; a failed GPU
// turns red and gets an X (shape as well as colour); a replaced one shows a brief outline. The memory wall behind each GPU fills with its memory account: the live
// account of the tiny model (store.state.memoryCase === null), or a case from the memory lab
// ({label, fraction, parts, fits}) which may overflow the wall into a hatched "doesn't fit"
// extension. Every kind of thing is one InstancedMesh, so draw calls do not grow with GPUs.

import * as THREE from 'three';
import {
  commit,
  disposeTree,
  hatchTexture,
  instanced,
  place,
  tag,
  textSprite,
  tint,
  wallTexture,
} from '../util.js';

const NEW_OUTLINE_S = 4;
const MIN_FILL = 0.03; // the tiny model's share of an 80 GB GPU would be invisible

function bandColour(name, palette, i) {
  const n = (name || '').toLowerCase();
  if (n.includes('optim')) return palette.memOptimizer;
  if (n.includes('grad')) return palette.memGrads;
  if (n.includes('activ') || n.includes('work')) return palette.memActivations;
  if (n.includes('weight') || n.includes('param')) return palette.memWeights;
  return [palette.memWeights, palette.memGrads, palette.memOptimizer, palette.memActivations][i % 4];
}

/** Bands [{colour, from, to}] (fractions of the wall) and the overflow above it. */
function memoryBands(run, gpuId, palette) {
  const mc = run.memoryCase;
  if (mc) {
    const total = Math.max(0, Number(mc.fraction) || 0);
    const parts = Array.isArray(mc.parts) ? mc.parts : [];
    const sum = parts.reduce((a, p) => a + Math.max(0, Number(p.fraction) || 0), 0);
    // Part fractions may be of usable memory (summing to `fraction`) or shares of the whole
    // (summing to 1); scale them so the bands always add up to the fill.
    const scale = sum > 0 ? total / sum : 0;
    let at = 0;
    const bands = parts.map((p, i) => {
      const h = Math.max(0, Number(p.fraction) || 0) * scale;
      const b = { colour: bandColour(p.name, palette, i), from: at, to: at + h };
      at += h;
      return b;
    });
    if (!bands.length && total > 0) bands.push({ colour: palette.memWeights, from: 0, to: total });
    return { bands, overflow: Math.max(0, total - 1), fits: mc.fits !== false && total <= 1 };
  }
  const m = run.step?.memory?.find?.((x) => x.gpu === gpuId) || run.step?.memory?.[gpuId];
  if (!m || !m.capacity) return { bands: [], overflow: 0, fits: true };
  const real = m.total / m.capacity;
  const shown = Math.max(real, MIN_FILL);
  const k = m.total > 0 ? shown / m.total : 0;
  let at = 0;
  const bands = [];
  for (const [name, bytes] of [
    ['weights', m.weights],
    ['grads', m.grads],
    ['optimizer', m.optimizer],
    ['activations', m.activations],
  ]) {
    const h = (bytes || 0) * k;
    bands.push({ colour: bandColour(name, palette, 0), from: at, to: at + h });
    at += h;
  }
  return { bands, overflow: 0, fits: true };
}

export function build(ctx, spec) {
  const { scene, layout: lay, palette } = ctx;
  const group = new THREE.Group();
  group.name = 'gpus';
  const n = lay.gpus.length;
  const [gw, gh, gd] = lay.dims.gpu;
  const [ww, wh, wt] = lay.dims.wall;

  const chassis = instanced(
    new THREE.BoxGeometry(1, 1, 1),
    new THREE.MeshLambertMaterial({ color: palette.chassis }),
    lay.servers.length,
    'gpus',
  );
  lay.servers.forEach((s, i) => place(chassis, i, s.x, s.y, s.z, lay.server.w, lay.server.h, lay.server.d));
  chassis.count = lay.servers.length;
  commit(chassis);

  const body = instanced(
    new THREE.BoxGeometry(gw, gh, gd),
    new THREE.MeshLambertMaterial({ color: palette.gpu }),
    n,
    'gpus',
  );
  // The die: a flat plate on top of each package, unlit so its colour reads as light.
  const die = instanced(new THREE.BoxGeometry(gw * 0.78, 0.06, gd * 0.78), new THREE.MeshBasicMaterial(), n, 'gpus');
  const wallTex = wallTexture('#ffffff');
  const wallFrame = instanced(
    new THREE.BoxGeometry(ww, wh, wt),
    new THREE.MeshBasicMaterial({
      color: palette.wallFrame,
      map: wallTex,
      transparent: true,
      opacity: 0.5,
      depthWrite: false,
    }),
    n,
    'gpus',
  );
  const bands = instanced(new THREE.BoxGeometry(1, 1, 1), new THREE.MeshLambertMaterial(), n * 4 + 4, 'gpus');
  const hatchTex = hatchTexture('#ffffff', 14, 5);
  const overflow = instanced(
    new THREE.BoxGeometry(1, 1, 1),
    new THREE.MeshBasicMaterial({ color: palette.overflow, map: hatchTex, transparent: true, opacity: 0.9, depthWrite: false }),
    n,
    'gpus',
  );
  const waitTex = hatchTexture('#ffffff', 12, 4);
  const waiting = instanced(
    new THREE.PlaneGeometry(gw, gd),
    new THREE.MeshBasicMaterial({ color: palette.waiting, map: waitTex, transparent: true, depthWrite: false }),
    n,
    'gpus',
  );
  const cross = instanced(
    new THREE.BoxGeometry(gw * 1.05, 0.13, 0.06),
    new THREE.MeshBasicMaterial({ color: '#ffffff' }),
    n * 2,
    'gpus',
  );
  const outline = instanced(
    new THREE.BoxGeometry(gw + 0.22, gh + 0.05, gd + 0.22),
    new THREE.MeshBasicMaterial({ color: palette.text, wireframe: true, transparent: true, opacity: 0.9 }),
    n,
    'gpus',
  );

  for (let i = 0; i < n; i++) {
    const g = lay.gpus[i];
    place(body, i, g.x, g.y, g.z);
    place(wallFrame, i, g.wall.x, g.wall.y, g.wall.z);
    place(die, i, g.x, g.y + gh / 2 + 0.03, g.z);
    tint(die, i, palette.gpuIdle);
  }
  body.count = wallFrame.count = die.count = n;
  commit(body);
  commit(wallFrame);
  commit(die);

  const noFit = textSprite("doesn't fit", { colour: palette.background, bg: palette.overflow, height: 0.7 });
  noFit.visible = false;
  noFit.userData.part = 'gpus';

  group.add(chassis, body, die, wallFrame, bands, overflow, waiting, cross, outline, noFit);
  tag(group, 'gpus');
  scene.add(group);

  const replacedAt = new Map(); // gpu -> time it came back
  const unsub = ctx.store.on('event', (e) => {
    if (e?.kind === 'gpu_replaced') replacedAt.set(e.detail?.gpu, performance.now() / 1000);
  });
  // The X stands upright on the GPU's front face, so it reads from the usual low camera.
  const rot45 = new THREE.Quaternion().setFromAxisAngle(new THREE.Vector3(0, 0, 1), Math.PI / 4);
  const rotM45 = new THREE.Quaternion().setFromAxisAngle(new THREE.Vector3(0, 0, 1), -Math.PI / 4);
  const flat = new THREE.Quaternion().setFromAxisAngle(new THREE.Vector3(1, 0, 0), -Math.PI / 2);
  let lastKey = '';
  let lastMemKey = null;
  // Per GPU, this frame: 0 idle / 1 forward / 2 backward, glow level (0-50), waiting.
  const glowOf = new Uint8Array(n);
  const levelOf = new Uint8Array(n);
  const waitOf = new Uint8Array(n);
  let counts = { activeGpus: 0, waiting: 0, failed: 0 };
  let overflowWalls = 0;

  function updateMemory(run) {
    const memKey = run.memoryCase ? JSON.stringify(run.memoryCase) : `live:${run.step?.seq ?? 'none'}`;
    if (memKey === lastMemKey) return;
    lastMemKey = memKey;
    let b = 0;
    let o = 0;
    let anyOverflow = false;
    for (let i = 0; i < n; i++) {
      const g = lay.gpus[i];
      const acc = memoryBands(run, g.id, palette);
      const base = g.wall.y - wh / 2;
      for (const band of acc.bands.slice(0, 4)) {
        const from = Math.min(1, band.from);
        const to = Math.min(1, band.to);
        if (to - from <= 1e-4) continue;
        place(bands, b, g.wall.x, base + ((from + to) / 2) * wh, g.wall.z, ww * 0.86, (to - from) * wh, wt * 1.6);
        tint(bands, b, band.colour);
        b += 1;
      }
      if (acc.overflow > 0) {
        const h = Math.min(acc.overflow, 3) * wh;
        place(overflow, o, g.wall.x, base + wh + h / 2, g.wall.z, ww * 0.86, h, wt * 1.6);
        o += 1;
        anyOverflow = true;
      }
    }
    bands.count = b;
    overflow.count = o;
    overflowWalls = o;
    commit(bands);
    commit(overflow);
    noFit.visible = anyOverflow;
    if (anyOverflow) {
      const g = lay.gpus[0];
      const top = g.wall.y - wh / 2 + wh * (1 + Math.min(run.memoryCase.fraction - 1, 3));
      noFit.position.set((lay.parts.gpus.min[0] + lay.parts.gpus.max[0]) / 2, top + 0.6, g.wall.z);
    }
  }

  return {
    object: group,
    update(frame) {
      const { run, palette: pal } = frame;
      updateMemory(run);
      frame.debug.overflowWalls = overflowWalls;
      frame.debug.memoryBands = bands.count;
      const failed = run.failedGpus || new Set();
      const now = frame.time;
      const loaderWaited = Boolean(frame.step?.loader?.waited);
      let fresh = 0;
      for (const [g, t] of replacedAt) {
        if (now - t > NEW_OUTLINE_S) replacedAt.delete(g);
        else fresh += 1;
      }
      // Each GPU shows what its own lane of the step is doing now: forward amber, backward
      // pink, waiting (an idle slot, or no data ready) hatched.
      for (let i = 0; i < n; i++) {
        const ev = frame.lane(lay.gpus[i].id);
        const kind = ev?.kind ?? null;
        glowOf[i] = kind === 'forward' ? 1 : kind === 'backward' ? 2 : 0;
        // Brightness rises into each pass and eases off at its end, never flashing.
        const k = frame.reduced ? 1 : Math.sin(Math.PI * Math.min(1, Math.max(0, ev?.progress ?? 0)));
        levelOf[i] = glowOf[i] ? Math.round((0.55 + 0.45 * k) * 50) : 0;
        waitOf[i] = kind === 'wait' || (kind === 'data' && loaderWaited) ? 1 : 0;
      }
      const key = `${glowOf.join('')}|${levelOf.join(',')}|${waitOf.join('')}|${[...failed].join(',')}|${fresh}|${pal.theme}`;
      if (key === lastKey) {
        Object.assign(frame.debug, counts);
        return fresh > 0;
      }
      lastKey = key;

      const idle = new THREE.Color(pal.gpuIdle);
      const lit = [null, new THREE.Color(pal.forward), new THREE.Color(pal.backward)];
      const c = new THREE.Color();
      let active = 0;
      let x = 0;
      let w = 0;
      for (let i = 0; i < n; i++) {
        const g = lay.gpus[i];
        if (failed.has(g.id)) {
          tint(die, i, pal.failure);
          place(cross, x++, g.x, g.y + 0.05, g.z + gd / 2 + 0.06, 1, 1, 1, rot45);
          place(cross, x++, g.x, g.y + 0.05, g.z + gd / 2 + 0.06, 1, 1, 1, rotM45);
          continue;
        }
        if (glowOf[i]) {
          c.copy(idle).lerp(lit[glowOf[i]], levelOf[i] / 50);
          die.setColorAt(i, c);
          active += 1;
        } else {
          tint(die, i, pal.gpuIdle);
        }
        if (waitOf[i]) place(waiting, w++, g.x, g.y + gh / 2 + 0.07, g.z, 1, 1, 1, flat);
      }
      let o = 0;
      for (const gpuId of replacedAt.keys()) {
        const g = lay.gpus.find((q) => q.id === gpuId);
        if (g && !failed.has(gpuId)) place(outline, o++, g.x, g.y, g.z);
      }
      cross.count = x;
      waiting.count = w;
      outline.count = o;
      commit(die);
      commit(cross);
      commit(waiting);
      commit(outline);
      counts = { activeGpus: active, waiting: w, failed: failed.size };
      Object.assign(frame.debug, counts);
      return fresh > 0;
    },
    dispose() {
      unsub();
      hatchTex.dispose();
      waitTex.dispose();
      wallTex.dispose();
      disposeTree(group);
    },
  };
}
