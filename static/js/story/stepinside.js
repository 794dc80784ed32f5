// One training step inside GPU 1's close-up (gpu3d.js), drawn from GPU 1's lane of the live
// step's trace as it plays: the forward pass an amber band climbing the layers' slabs, the
// backward pass a pink ring coming back down, leaving a tick on each slab it passes (the
// gradients, written down, not yet applied), and the update draining the ticks while every
// slab re-tones. A step cut into microbatches climbs and comes down once for each, and the
// ticks pile up: each grows by one microbatch's share until the one update. A readout over the stack names the phase as it happens. What the trace
// does not have (a one-GPU step has no all-reduce) is not drawn. With reduced motion the
// band and ring sit on the layer the trace is at, with no tweening in between.

import * as THREE from 'three';
import { t } from '../i18n/lang.js';
import { textSprite } from '../scene/util.js';
import { boxOf, phaseOf, resprite, tray as makeTray, TRAY_IDLE } from './parts3d.js';
const WORDS = {
  forward: () => t('forward pass: the band climbs the layers'),
  backward: () => t('backward pass: gradients noted, layer by layer'),
  allreduce: () => t('all-reduce: gradients averaged'),
  update: () => t('update: every weight moves once'),
};

/**
 * stepInside({parent, slabs, size, colour, at3, trays, trayAt}) -> {frame(frame), info(), describe(box), dispose()}
 * @param parent the close-up's group; slabs its layer meshes, bottom first, all landed
 * @param size the slab's {w, h, d}; colour(name, fallback) reads the page's colours
 * @param at3 where the readout sits ([x, y, z] in the close-up: at its foot)
 * @param trays the microbatches to draw as trays beside the GPU (0: none), stacked at trayAt
 * @param lane the GPU whose lane of the trace plays (0: GPU 1); `readout` false: no readout
 */
export function stepInside({ parent, slabs, size, colour, at3, trays = 0, trayAt = [-3.3, 0.1, 0.6], lane = 0, readout: named = true }) {
  const n = slabs.length;
  const group = new THREE.Group();
  group.name = 'step-inside';
  const amber = colour('--forward', '#e69f00');
  const pink = colour('--backward', '#cc79a7');
  const band = new THREE.Mesh(
    new THREE.BoxGeometry(size.w + 0.16, size.h + 0.1, size.d + 0.16),
    new THREE.MeshBasicMaterial({ color: amber, transparent: true, opacity: 0.55, depthWrite: false }),
  );
  const ring = new THREE.Mesh(
    new THREE.BoxGeometry(size.w + 0.34, 0.1, size.d + 0.34),
    new THREE.MeshBasicMaterial({ color: pink }),
  );
  const ticks = slabs.map((slab) => {
    const tick = new THREE.Mesh(new THREE.BoxGeometry(0.34, 0.1, 0.08), new THREE.MeshBasicMaterial({ color: pink }));
    tick.position.set(size.w / 2 - 0.3, slab.userData.rest, size.d / 2 + 0.05);
    tick.visible = false;
    return tick;
  });
  band.visible = false;
  ring.visible = false;
  group.add(band, ring, ...ticks);
  // The microbatches: small trays stacked beside the GPU, the first at the bottom; the one
  // in the GPU now takes the colour of its pass.
  const idleTray = new THREE.Color(TRAY_IDLE);
  const trayParts = Array.from({ length: trays }, (_, i) => {
    const part = makeTray(1.3, [trayAt[0], trayAt[1] + i * 0.5, trayAt[2]]);
    part.label(t('microbatch {n}', { n: i + 1 }), { y: 0.24 });
    group.add(part.mesh);
    return part;
  });
  const trayMeshes = trayParts.map((part) => part.mesh);
  let tray = -1; // the microbatch in the GPU now
  parent.add(group);

  const baseTone = slabs[0]?.material.color.clone() ?? new THREE.Color(0x9d8fd6);
  const brightTone = baseTone.clone().lerp(new THREE.Color(0xffffff), 0.45);
  let readout = null;
  let said = null;
  let phase = null; // the last phase seen
  let was = null; // the phase of the last frame (null: none)
  let at = -1; // the layer the band or ring is on
  let drained = 1; // the ticks' size during the update, 1 full
  let steps = 0; // steps seen from start to update
  const piled = slabs.map(() => 0); // microbatches noted on each slab since the last update
  const setTick = (i) => {
    const tick = ticks[i];
    tick.visible = piled[i] > 0;
    tick.scale.set(piled[i], 1, 1);
    tick.position.x = size.w / 2 - 0.13 - 0.17 * piled[i]; // grows leftwards from the edge
  };

  function say(p) {
    if (p === said) return;
    said = p;
    readout = resprite(group, readout, p && named ? textSprite(WORDS[p](), { height: 0.34, bg: 'rgba(8,13,24,0.9)' }) : null);
    if (readout) {
      readout.material.depthTest = false; // read in front of the floor and the board
      readout.renderOrder = 10;
      readout.position.set(...at3);
    }
  }

  function layerAt(p) {
    return Math.min(n - 1, Math.max(0, Math.floor(p * n)));
  }

  /** A frame of the step playing (the stage's onUpdate frame). */
  function frame(f) {
    const e = f?.lane?.(lane) ?? null;
    const p = phaseOf(e?.kind)?.phase ?? null;
    const turned = p !== was; // the trace has moved into another phase (or out of any)
    was = p;
    const progress = e && f.progressOf ? f.progressOf(e.t0, e.t0 + e.dur) : 0;
    if (p === 'forward' && phase !== 'forward' && !(e.mb > 0)) {
      piled.fill(0); // a new step: nothing noted yet
      ticks.forEach((_, i) => setTick(i));
      drained = 1;
    }
    if (p === 'update' && turned) steps += 1;
    phase = p ?? phase;
    band.visible = p === 'forward';
    ring.visible = p === 'backward';
    if (p === 'forward') {
      at = layerAt(progress);
      band.position.y = slabs[at].userData.rest;
    } else if (p === 'backward') {
      at = n - 1 - layerAt(progress);
      ring.position.y = slabs[at].userData.rest;
      const noted = (e.mb ?? 0) + 1; // this microbatch's gradients join the pile
      for (let i = at; i < n; i++) {
        if (piled[i] < noted) {
          piled[i] = noted;
          setTick(i);
        }
      }
    } else if (p === 'update') {
      drained = 1 - progress;
      for (const tick of ticks) tick.scale.y = Math.max(0.05, drained);
      if (drained <= 0.05) {
        piled.fill(0);
        ticks.forEach((_, i) => setTick(i));
      }
    }
    if (turned && p !== 'update') for (const tick of ticks) tick.scale.y = 1; // full again after an update
    const inTray = (p === 'forward' || p === 'backward') && trays ? Math.min(trays - 1, e.mb ?? 0) : -1;
    if (inTray !== tray || turned) {
      tray = inTray;
      trayMeshes.forEach((m, i) => m.material.color.copy(i === tray ? (p === 'forward' ? amber : pink) : idleTray));
    }
    // The slabs share one material: re-toned once, and only while the update glows or after.
    const glow = p === 'update' ? Math.sin(Math.PI * Math.min(1, progress)) : 0;
    if (glow || turned) slabs[0]?.material.color.copy(baseTone).lerp(brightTone, glow);
    if (p) say(p);
  }

  return {
    frame,
    info: () => ({ phase, at, ticks: ticks.filter((x) => x.visible).length, piled: Math.max(0, ...piled), tray, steps, readout: said }),
    describe: () => [
      ...(band.visible ? [{ name: 'band', box: boxOf(band) }] : []),
      ...(ring.visible ? [{ name: 'ring', box: boxOf(ring) }] : []),
      ...ticks.filter((x) => x.visible).map((x) => ({ name: 'tick', box: boxOf(x) })),
      ...(readout ? [{ name: 'readout', box: boxOf(readout) }] : []),
      ...trayMeshes.map((m) => ({ name: 'microbatch', box: boxOf(m) })),
    ],
    dispose() {
      parent.remove(group);
      readout?.material.map?.dispose();
      for (const part of trayParts) part.dispose();
    },
  };
}
