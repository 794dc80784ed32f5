// Part 3, the GPU servers: server boards and GPU packages that glow with the pass they are in
// (each GPU's memory wall is drawn by walls.js).
//
// Each GPU plays its own lane of the step's trace: forward glows amber, backward pink (from
// the palette). A GPU that waits (for data, or for its turn) is hatched grey. A failed GPU
// turns red, gets an X on its face and a red cross-hatch on top (shape and pattern as well as
// colour). While a failure is staged (frame.failure, see failure.js) the other GPUs stall,
// hatched grey, and the replacement shows its outline as it joins. Every kind of thing is one
// InstancedMesh, so draw calls do not grow with GPUs.

import * as THREE from 'three';
import { commit, disposeTree, hatchTexture, instanced, place, tag, tint } from '../util.js';

const NEW_OUTLINE_S = 4;

export function build(ctx) {
  const { scene, layout: lay, palette } = ctx;
  const group = new THREE.Group();
  group.name = 'gpus';
  const n = lay.gpus.length;
  const [gw, gh, gd] = lay.dims.gpu;

  const chassis = instanced(
    new THREE.BoxGeometry(1, 1, 1),
    new THREE.MeshLambertMaterial({ color: palette.chassis }),
    lay.servers.length,
    'gpus',
  );
  lay.servers.forEach((s, i) => place(chassis, i, s.x, s.y, s.z, lay.server.w, lay.server.h, lay.server.d));
  chassis.count = lay.servers.length;
  commit(chassis);

  // Packages: white material, each instance tinted (a failed one goes dark red).
  const body = instanced(new THREE.BoxGeometry(gw, gh, gd), new THREE.MeshLambertMaterial({ color: '#ffffff' }), n, 'gpus');
  // The die: a flat plate on top of each package, unlit so its colour reads as light.
  const die = instanced(new THREE.BoxGeometry(gw * 0.78, 0.06, gd * 0.78), new THREE.MeshBasicMaterial(), n, 'gpus');
  // Waiting: grey stripes on a dark veil, so they read on a light die as well as a dark one.
  const waitTex = hatchTexture('#ffffff', 12, 4, { ground: 'rgba(0,0,0,0.55)' });
  const waiting = instanced(
    new THREE.PlaneGeometry(gw, gd),
    new THREE.MeshBasicMaterial({ color: palette.waiting, map: waitTex, transparent: true, depthWrite: false }),
    n,
    'gpus',
  );
  // Failed: red cross-hatching over the whole top, a pattern as well as a colour.
  const failTex = hatchTexture('#ffffff', 14, 4, { ground: 'rgba(0,0,0,0.35)', cross: true });
  const failHatch = instanced(
    new THREE.PlaneGeometry(gw * 1.04, gd * 1.04),
    new THREE.MeshBasicMaterial({ color: palette.failure, map: failTex, transparent: true, depthWrite: false }),
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
    tint(body, i, palette.gpu);
    place(die, i, g.x, g.y + gh / 2 + 0.03, g.z);
    tint(die, i, palette.gpuIdle);
  }
  body.count = die.count = n;
  commit(body);
  commit(die);

  group.add(chassis, body, die, waiting, failHatch, cross, outline);
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
  // Per GPU, this frame: 0 idle / 1 forward / 2 backward, glow level (0-50), waiting
  // (1 for its data or its turn, 2 stalled by a failure), failed, joining.
  const glowOf = new Uint8Array(n);
  const levelOf = new Uint8Array(n);
  const waitOf = new Uint8Array(n);
  const deadOf = new Uint8Array(n);
  let counts = { activeGpus: 0, waiting: 0, stalled: 0, failed: 0, dataWaiting: 0 };

  return {
    object: group,
    update(frame) {
      const { run, palette: pal } = frame;
      const failed = run.failedGpus || new Set();
      const staged = frame.failure;
      const now = frame.time;
      const loaderWaited = Boolean(frame.step?.loader?.waited);
      // The joining replacement keeps its outline a while after the staging ends.
      if (staged?.rejoin != null) replacedAt.set(staged.gpu, now);
      let fresh = 0;
      for (const [g, t] of replacedAt) {
        if (now - t > NEW_OUTLINE_S) replacedAt.delete(g);
        else fresh += 1;
      }
      // Each GPU shows what its own lane of the step is doing now: forward amber, backward
      // pink, waiting (an idle slot, or no data ready) hatched.
      for (let i = 0; i < n; i++) {
        const id = lay.gpus[i].id;
        const ev = frame.lane(id);
        // In a planned step the GPU shows the run it is in (`show`): a microbatch's forward
        // glows amber through the stage's joins and hand-offs, not only its arithmetic.
        const kind = ev?.show ?? ev?.kind ?? null;
        const progress = ev?.showProgress ?? ev?.progress ?? 0;
        glowOf[i] = kind === 'forward' ? 1 : kind === 'backward' ? 2 : 0;
        // Brightness rises into each pass and eases off at its end, never flashing.
        const k = frame.reduced ? 1 : Math.sin(Math.PI * Math.min(1, Math.max(0, progress)));
        levelOf[i] = glowOf[i] ? Math.round((0.55 + 0.45 * k) * 50) : 0;
        waitOf[i] = kind === 'wait' || (kind === 'data' && loaderWaited) ? 1 : 0;
        // The staging decides about its own GPU; the store about any other failed one.
        deadOf[i] = staged && staged.gpu === id ? (staged.dead ? 1 : 0) : failed.has(id) ? 1 : 0;
        if (staged?.stall && !deadOf[i] && staged.gpu !== id) waitOf[i] = 2;
      }
      const key = `${glowOf.join('')}|${levelOf.join(',')}|${waitOf.join('')}|${deadOf.join('')}|${fresh}|${[...replacedAt.keys()].join(',')}|${pal.theme}`;
      if (key === lastKey) {
        Object.assign(frame.debug, counts);
        return fresh > 0;
      }
      lastKey = key;

      const idle = new THREE.Color(pal.gpuIdle);
      const lit = [null, new THREE.Color(pal.forward), new THREE.Color(pal.backward)];
      const deadBody = new THREE.Color(pal.failure).multiplyScalar(0.55);
      const c = new THREE.Color();
      let active = 0;
      let x = 0;
      let w = 0;
      let f = 0;
      let stalled = 0;
      let dataWaiting = 0;
      for (let i = 0; i < n; i++) {
        const g = lay.gpus[i];
        if (deadOf[i]) {
          tint(die, i, pal.failure);
          body.setColorAt(i, deadBody);
          place(failHatch, f++, g.x, g.y + gh / 2 + 0.08, g.z, 1, 1, 1, flat);
          place(cross, x++, g.x, g.y + 0.05, g.z + gd / 2 + 0.06, 1, 1, 1, rot45);
          place(cross, x++, g.x, g.y + 0.05, g.z + gd / 2 + 0.06, 1, 1, 1, rotM45);
          continue;
        }
        tint(body, i, pal.gpu);
        if (glowOf[i]) {
          c.copy(idle).lerp(lit[glowOf[i]], levelOf[i] / 50);
          die.setColorAt(i, c);
          active += 1;
        } else {
          tint(die, i, pal.gpuIdle);
        }
        if (waitOf[i]) {
          place(waiting, w++, g.x, g.y + gh / 2 + 0.07, g.z, 1, 1, 1, flat);
          if (waitOf[i] === 2) stalled += 1;
          else dataWaiting += 1;
        }
      }
      let o = 0;
      for (const gpuId of replacedAt.keys()) {
        const i = lay.gpus.findIndex((q) => q.id === gpuId);
        if (i >= 0 && !deadOf[i]) place(outline, o++, lay.gpus[i].x, lay.gpus[i].y, lay.gpus[i].z);
      }
      cross.count = x;
      waiting.count = w;
      failHatch.count = f;
      outline.count = o;
      commit(body);
      commit(die);
      commit(cross);
      commit(waiting);
      commit(failHatch);
      commit(outline);
      counts = { activeGpus: active, waiting: w, stalled, failed: f, dataWaiting };
      Object.assign(frame.debug, counts);
      return fresh > 0;
    },
    dispose() {
      unsub();
      waitTex.dispose();
      failTex.dispose();
      disposeTree(group);
    },
  };
}
