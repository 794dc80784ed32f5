// One layer of GPU 1's model opened up over the close-up (gpu3d.js), for chapter 18: the
// bottom slab lit, and drawn large above the GPU, tied to it by four lines: attention along
// its base, the router's notch over it, and the live model's experts above in two rows. A
// token ("a", the prompt's last word) comes up through attention to the router, which sends
// it to the experts the live router chose for it in layer 1 (the probe's route): those
// light, in the experts' colour, with a line from the router to each. The token travels
// again every few seconds; with reduced motion it sits at the router.

import * as THREE from 'three';
import { t } from '../i18n/lang.js';
import { textSprite } from '../scene/util.js';
import { SLAB, WALL_H } from './body3d.js';
import { boxOf, cssColour } from './parts3d.js';

export const OPEN_AT = WALL_H + 1.0; // the opened layer's base, over the GPU
const W = 4.4; // its width
const ROW = 8; // experts to a row
const TRIP_MS = 2600; // the token's way up and out, then a pause
const ease = (x) => (x <= 0 ? 0 : x >= 1 ? 1 : x * x * (3 - 2 * x));

/**
 * openLayer({parent, slab, experts, k, route, reduced, requestRender}) -> {frame(), info(), describe(), dispose()}
 * @param slab the layer opened (GPU 1's bottom slab); route() the live router's choice for
 * the token in layer 1 ({experts, gates}) or null until the probe has one
 */
export function openLayer({ parent, slab, experts, k, route, reduced, requestRender }) {
  const group = new THREE.Group();
  group.name = 'open-layer';
  group.position.y = OPEN_AT;
  const lam = (c) => new THREE.MeshLambertMaterial({ color: c });
  const attention = new THREE.Mesh(new THREE.BoxGeometry(W, 0.26, 1.3), lam(0x7f72c4));
  attention.position.y = 0.13;
  const router = new THREE.Mesh(new THREE.CylinderGeometry(0.32, 0.32, 0.22, 3), lam(0xc9d4e8)); // a notch
  router.rotation.x = Math.PI / 2;
  router.position.set(0, 0.62, 0.2);
  const yellow = cssColour('--experts', '#f0e442');
  const idle = new THREE.Color(0x6d6a3c);
  const pitch = W / ROW;
  const rows = Math.ceil(experts / ROW);
  const cubes = Array.from({ length: experts }, (_, i) => {
    const cube = new THREE.Mesh(new THREE.BoxGeometry(pitch * 0.72, 0.4, 0.6), lam(idle));
    cube.position.set(-W / 2 + pitch * ((i % ROW) + 0.5), 1.2 + (rows - 1 - Math.floor(i / ROW)) * 0.55, 0); // 1 at the top left, as the card reads
    const n = textSprite(String(i + 1), { height: 0.26, verbatim: true });
    n.position.set(0, 0, 0.34);
    n.material.depthTest = false;
    n.renderOrder = 10;
    cube.add(n);
    return cube;
  });
  const names = [
    [t('attention'), 0, 0.14, 0.9],
    [t('router: picks {k} of {experts}', { k, experts }), -0.45, 0.62, 0.4],
  ].map(([words, x, y, z]) => {
    const s = textSprite(words, { height: 0.3, bg: 'rgba(8,13,24,0.85)' });
    s.position.set(x, y, z);
    s.center.set(x < 0 ? 1 : 0.5, 0.5); // the router's name reads to its left
    return s;
  });
  group.add(attention, router, ...cubes, ...names);

  // Four lines from the opened layer's base down to the slab it is.
  const tie = new THREE.LineSegments(
    new THREE.BufferGeometry().setFromPoints([-1, 1].flatMap((sx) => [-1, 1].flatMap((sz) => [
      new THREE.Vector3((sx * SLAB.w) / 2, slab.userData.rest - OPEN_AT, (sz * SLAB.d) / 2),
      new THREE.Vector3((sx * W) / 2, 0, (sz * 1.3) / 2),
    ]))),
    new THREE.LineBasicMaterial({ color: 0xc9d4e8, transparent: true, opacity: 0.5 }),
  );
  group.add(tie);

  // The token, and a line from the router to each expert it goes to.
  const token = textSprite('a', { height: 0.42, verbatim: true, bg: 'rgba(230,159,0,0.95)' });
  token.material.depthTest = false;
  token.renderOrder = 11;
  group.add(token);
  const pathMat = new THREE.LineBasicMaterial({ color: yellow });
  let paths = [];
  let lit = [];
  let litKey = '';
  function light(chosen) {
    const key = chosen.join(',');
    if (key === litKey) return;
    litKey = key;
    lit = chosen.filter((e) => e >= 0 && e < experts);
    cubes.forEach((c, i) => c.material.color.copy(lit.includes(i) ? yellow : idle));
    for (const p of paths) {
      group.remove(p);
      p.geometry.dispose();
    }
    paths = lit.map((e) => {
      const line = new THREE.Line(new THREE.BufferGeometry().setFromPoints([router.position.clone(), cubes[e].position.clone()]), pathMat);
      group.add(line);
      return line;
    });
  }

  // The layer opened, lit on its own (the slabs share one material otherwise).
  const shared = slab.material;
  slab.material = shared.clone();
  slab.material.color.lerp(new THREE.Color(0xffffff), 0.35);

  // The token's trip, on the page's clock: up from under the layer to the router (the first
  // half), then out to the first expert chosen. Where it is and what part it is at.
  const t0 = performance.now();
  function tokenAt(now) {
    const u = reduced() ? 0.6 : ((now - t0) % TRIP_MS) / TRIP_MS;
    const target = lit.length ? cubes[lit[0]].position : router.position;
    if (u < 0.5) {
      const y = -0.8 + ease(u / 0.5) * (router.position.y + 0.8);
      return { x: 0, y, at: y < 0 ? 'below' : y < 0.4 ? 'attention' : 'router' };
    }
    const v = reduced() ? 0 : ease((u - 0.5) / 0.35);
    const y = router.position.y + (target.y - router.position.y) * v;
    return { x: target.x * v, y, at: v >= 1 && lit.length ? 'experts' : 'router' };
  }
  /** A frame drawn: the router's live choice, and the token on its way. */
  function frame() {
    light(route()?.experts ?? []);
    const p = tokenAt(performance.now());
    token.position.set(p.x, p.y, 0.8);
  }
  frame();
  parent.add(group);
  // The token moves whether the run steps or not: draw while it does.
  let raf = 0;
  const spin = () => {
    requestRender();
    raf = reduced() ? 0 : requestAnimationFrame(spin);
  };
  spin();

  return {
    frame,
    info: () => ({ experts, lit: [...lit], token: tokenAt(performance.now()).at }),
    describe: () => [
      { name: 'attention', box: boxOf(attention) },
      { name: 'router', box: boxOf(router) },
      ...cubes.map((c, i) => ({ name: lit.includes(i) ? 'expert-lit' : 'expert', box: boxOf(c) })),
      { name: 'token', box: boxOf(token) },
    ],
    dispose() {
      cancelAnimationFrame(raf);
      slab.material.dispose();
      slab.material = shared;
      for (const p of paths) p.geometry.dispose();
    },
  };
}
