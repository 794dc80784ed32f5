// Part 5, the all-reduce ring: a track along every hop and pulses hopping GPU to GPU, drawn
// from the step's own ring records (docs/scene.md says how).

import * as THREE from 'three';
import { DIMS, route } from '../layout.js';
import { activeFaults } from '../../store.js';
import { isPlanned, planOf } from '../plan.js';
import { aimY, commit, disposeTree, instanced, place, placeSegment, pointAlong, tag } from '../util.js';

const RING_KIND = 'allreduce';
// The gradient all-reduce's kinds: exposed, and hidden under the backward pass (beside it).
const RING_KINDS = new Set([RING_KIND, 'allreduce_hidden']);
const MAX_DRAWN_PASSES = 6;
const MAX_DRAWN_PASSES_SLOW = 10;
// Track tube radius in world units (a GPU package is 0.9 wide).
const TRACK_R = { default: 0.055, projector: 0.085 };
const PULSE_R = { default: 0.26, projector: 0.32 };
// How far the track's colour sits from the background at rest and while lit (0 = background).
const TRACK_REST = { default: 0.42, projector: 0.55 };
// A planned run's rings rest dimmer: until the step ends, the stages' work is the story.
const TRACK_REST_PLANNED = { default: 0.26, projector: 0.4 };
const TRACK_LIT = { default: 1.0, projector: 1.0 };
const TAIL = 1.1; // streak length behind a pulse

/** The rings to draw, as [{ring: [gpu ids], links: [kind]}], from a step's trace. */
function ringsOfTrace(trace) {
  // Buckets of one all-reduce share their ring: each ring is drawn once.
  const seen = new Set();
  return (trace?.rings ?? [])
    .filter((r) => RING_KINDS.has(r.kind) && r.ring.length > 1)
    .map((r) => ({ ring: r.ring, links: r.links }))
    .filter((r) => {
      const key = `${r.ring.join(',')}/${r.links.join(',')}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
}

/** The ring hops cut in this step: "src>dst" of every active link fault. */
function cutHops(run, step) {
  const out = new Set();
  for (const f of activeFaults(run?.faults, step?.step)) {
    if (f.kind === 'link' && f.detail?.src !== undefined) out.add(`${f.detail.src}>${f.detail.dst}`);
  }
  return out;
}

/** Before any step: one ring per data-parallel group from hello.roles, or null. */
function ringsOfRoles(roles) {
  if (!Array.isArray(roles) || !roles.length) return null;
  const groups = new Map();
  for (const r of [...roles].sort((a, b) => (a.dp ?? 0) - (b.dp ?? 0))) {
    const key = `${r.stage ?? 0}/${r.tp ?? 0}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(r.gpu);
  }
  return [...groups.values()].filter((g) => g.length > 1).map((ring) => ({ ring, links: null }));
}

const signature = (rings, cut = new Set()) =>
  `${rings.map((r) => `${r.ring.join(',')}/${(r.links ?? []).join(',')}`).join('|')}#${[...cut].join(',')}`;

export function build(ctx) {
  const { scene, layout: lay, palette, store } = ctx;
  const theme = palette.theme === 'projector' ? 'projector' : 'default';
  const group = new THREE.Group();
  tag(group, 'ring');
  scene.add(group);
  const radius = TRACK_R[theme];
  const pr = PULSE_R[theme];
  const topo = new Map(lay.ringPaths.map((p) => [`${p.src}>${p.dst}`, p]));
  const gpuKind = (a, b) => {
    const ga = lay.gpus.find((g) => g.id === a);
    const gb = lay.gpus.find((g) => g.id === b);
    return ga && gb && ga.server === gb.server ? 'nvlink' : 'spine';
  };

  let paths = [];
  let segs = [];
  let meshes = null;
  let builtSig = null;

  /** The way a cut hop goes instead, as the trace says (`via`): out of the server and back
   * through its leaf switch, or up via a spine. */
  function detour(src, dst, via) {
    const a = lay.gpus.find((g) => g.id === src);
    const b = lay.gpus.find((g) => g.id === dst);
    if (!a || !b) return null;
    const sa = lay.servers.find((x) => x.id === a.server);
    const sb = lay.servers.find((x) => x.id === b.server);
    if (via === 'spine') {
      const spine = lay.spines.length ? lay.spines[Math.min(src, dst) % lay.spines.length].id : null;
      const hops = spine === null ? [`leaf:${sa?.leaf ?? 0}`] : [`leaf:${sa?.leaf ?? 0}`, `spine:${spine}`, `leaf:${sb?.leaf ?? 0}`];
      return route(lay, src, dst, 'spine', hops);
    }
    const leaf = lay.leaves.find((l) => l.id === (sa?.leaf ?? 0));
    if (!leaf || !sa) return route(lay, src, dst, via);
    // Inside one server the layout's route is the NVLink arc: this one leaves the board.
    const top = DIMS.chassisH + DIMS.gpu[1] + 0.12;
    const up = DIMS.chassisH + DIMS.wall[1] + 0.3;
    const points = [
      [a.x, top, a.z],
      [sa.x, up, sa.z],
      [leaf.x, leaf.y, leaf.z],
      [(sb ?? sa).x, up, (sb ?? sa).z],
      [b.x, top, b.z],
    ];
    let length = 0;
    for (let i = 1; i < points.length; i++) length += Math.hypot(...points[i].map((v, k) => v - points[i - 1][k]));
    return { src, dst, kind: via, points, length };
  }

  /** Every hop of every ring, each once, on the route the topology (or the layout) gives; a
   * cut hop twice: its own route (cut, drawn red and broken) and the detour its chunks take. */
  function pathsFor(rings, cut = new Set()) {
    const out = [];
    const seen = new Set();
    const covered = new Set();
    for (const { ring, links } of rings) {
      // A ring through GPUs an earlier ring already joins (with experts: the rings that
      // average each expert's gradients, after the one for the shared weights) is drawn only
      // while it runs, so at rest it does not tangle the picture.
      const secondary = ring.some((g) => covered.has(g));
      for (const g of ring) covered.add(g);
      ring.forEach((src, i) => {
        const dst = ring[(i + 1) % ring.length];
        const key = `${src}>${dst}`;
        if (seen.has(key) || src === dst) return;
        seen.add(key);
        const p = topo.get(key) ?? route(lay, src, dst, links?.[i] ?? gpuKind(src, dst));
        if (!p) return;
        if (!cut.has(key)) {
          out.push({ ...p, secondary });
          return;
        }
        out.push({ ...p, secondary: false, cut: true });
        const via = links?.[i] && links[i] !== p.kind ? links[i] : null;
        const d = via ? detour(src, dst, via) : null;
        if (d) out.push({ ...d, secondary: false, detour: true });
      });
    }
    return out;
  }

  function makeMeshes(rings, cut = new Set()) {
    if (meshes) {
      for (const m of Object.values(meshes)) {
        m.removeFromParent();
        m.geometry.dispose();
        m.material.dispose();
      }
    }
    builtSig = signature(rings, cut);
    ringCount = rings.length;
    paths = pathsFor(rings, cut);
    segs = [];
    paths.forEach((p, pi) => {
      for (let i = 1; i < p.points.length; i++) {
        if (!p.cut) {
          segs.push({ pi, a: p.points[i - 1], b: p.points[i] });
          continue;
        }
        // A cut route: its two ends, with the middle of the route missing.
        const a = p.points[i - 1];
        const b = p.points[i];
        const f = (t) => a.map((v, k) => v + (b[k] - v) * t);
        const last = i === p.points.length - 1;
        const first = i === 1;
        if (p.points.length === 2) {
          segs.push({ pi, a, b: f(0.38) }, { pi, a: f(0.62), b });
        } else if (first) segs.push({ pi, a, b: f(0.75) });
        else if (last) segs.push({ pi, a: f(0.25), b });
      }
    });
    // The track: every hop's route as tubes, one instance per straight piece.
    const track = instanced(
      new THREE.CylinderGeometry(1, 1, 1, 10, 1, true),
      new THREE.MeshBasicMaterial({ color: '#ffffff' }),
      segs.length,
      'ring',
    );
    // A unit-radius cylinder scaled by the radius: the tube is 2 x radius thick.
    segs.forEach((s, i) => placeSegment(track, i, s.a, s.b, radius));
    track.count = segs.length;
    // Joints: a small ball where two pieces of a route meet, so bends stay solid.
    const joints = instanced(new THREE.SphereGeometry(1, 10, 6), new THREE.MeshBasicMaterial({ color: '#ffffff' }), segs.length, 'ring');
    let nj = 0;
    for (const p of paths) {
      for (let i = 1; i < p.points.length - 1; i++) {
        const q = p.points[i];
        place(joints, nj++, q[0], q[1], q[2], radius, radius, radius);
      }
    }
    joints.count = nj;
    // One arrowhead per hop, pointing the way the chunks travel: at its middle, or, where the
    // ring also runs back along the same route (a ring of two), a little before it.
    const arrows = instanced(new THREE.ConeGeometry(1, 1, 12), new THREE.MeshBasicMaterial({ color: '#ffffff' }), paths.length, 'ring');
    const keys = new Set(paths.filter((p) => !p.detour).map((p) => `${p.src}>${p.dst}`));
    const cutAt = [];
    const at = [0, 0, 0];
    const ahead = [0, 0, 0];
    const q = new THREE.Quaternion();
    const ar = radius * 3.2;
    paths.forEach((p, i) => {
      const mid = p.length * (keys.has(`${p.dst}>${p.src}`) ? 0.36 : 0.5);
      pointAlong(p.points, mid, at);
      pointAlong(p.points, mid + 0.05, ahead);
      aimY(ahead[0] - at[0], ahead[1] - at[1], ahead[2] - at[2], q);
      // A cut route carries nothing: a red X where it is broken instead of an arrow.
      const k = p.cut ? 0 : 1;
      place(arrows, i, at[0], at[1], at[2], ar * k, ar * 2.2 * k, ar * k, q);
      if (p.cut) cutAt.push([...at]);
    });
    arrows.count = paths.length;
    const pulses = instanced(new THREE.SphereGeometry(pr, 16, 10), new THREE.MeshBasicMaterial({ color: palette.allreduce }), paths.length, 'ring');
    // The streak: a cone from the pulse back along where it came from, so the direction of
    // travel reads even in a still picture.
    const tails = instanced(
      new THREE.CylinderGeometry(0.12, 1, 1, 10, 1, true),
      new THREE.MeshBasicMaterial({ color: palette.allreduce, transparent: true, opacity: 0.55, depthWrite: false }),
      paths.length,
      'ring',
    );
    // The break in a cut link: two crossed red bars where its route is missing.
    const breaks = instanced(new THREE.BoxGeometry(1, 1, 1), new THREE.MeshBasicMaterial({ color: palette.failure }), Math.max(1, cutAt.length * 2), 'ring');
    const qx = new THREE.Quaternion();
    cutAt.forEach((c, j) => {
      for (const [n, angle] of [[0, Math.PI / 4], [1, -Math.PI / 4]]) {
        qx.setFromAxisAngle(new THREE.Vector3(0, 0, 1), angle);
        place(breaks, 2 * j + n, c[0], c[1], c[2], 0.9, 0.16, 0.16, qx);
      }
    });
    breaks.count = cutAt.length * 2;
    commit(breaks);
    cutCount = cutAt.length;
    meshes = { track, joints, arrows, tails, pulses, breaks };
    group.add(track, joints, arrows, tails, pulses, breaks);
    tag(group, 'ring');
    sending = new Uint8Array(paths.length);
    lastKey = '';
    // The longest hop decides the pulse speed, so every pulse moves at the same constant speed.
    longest = paths.reduce((a, p) => Math.max(a, p.length), 0.001);
    passes = 2 * Math.max(1, (rings[0]?.ring.length ?? 2) - 1);
  }
  let ringCount = 0;
  let cutCount = 0;

  const bg = new THREE.Color(palette.background);
  const blue = new THREE.Color(palette.allreduce);
  const broken = new THREE.Color(palette.failure);
  const planned = isPlanned(planOf(store.state.hello));
  const rest = new THREE.Color().copy(bg).lerp(blue, (planned ? TRACK_REST_PLANNED : TRACK_REST)[theme]);
  const lit = new THREE.Color().copy(bg).lerp(blue, TRACK_LIT[theme]);
  const behind = [0, 0, 0];
  const at = [0, 0, 0];
  let sending = new Uint8Array(0);
  let longest = 0.001;
  let passes = 2;
  let lastKey = '';

  /** Show instance i of a mesh as built, or not at all (a secondary ring at rest). */
  function shown(mesh, i, on) {
    const a = mesh.instanceMatrix.array;
    const base = mesh.userData.base;
    for (let k = 0; k < 16; k++) a[i * 16 + k] = on ? base[i * 16 + k] : 0;
  }

  function colourTrack(deadGpu) {
    const { track, joints, arrows } = meshes;
    for (const m of [track, joints, arrows]) m.userData.base ??= m.instanceMatrix.array.slice();
    const broke = (p) => p.cut || (deadGpu !== null && (p.src === deadGpu || p.dst === deadGpu));
    const colourOf = (p, i) => (broke(p) ? broken : sending[i] ? lit : rest);
    const on = (p, i) => !p.secondary || sending[i] || broke(p);
    for (const m of [track, joints, arrows]) {
      if (m.userData.base.length !== m.instanceMatrix.array.length) m.userData.base = m.instanceMatrix.array.slice();
    }
    for (let i = 0; i < segs.length; i++) {
      const pi = segs[i].pi;
      track.setColorAt(i, colourOf(paths[pi], pi));
      shown(track, i, on(paths[pi], pi));
    }
    let j = 0;
    paths.forEach((p, i) => {
      for (let k = 1; k < p.points.length - 1; k++) {
        joints.setColorAt(j, colourOf(p, i));
        shown(joints, j++, on(p, i));
      }
      arrows.setColorAt(i, colourOf(p, i));
      shown(arrows, i, on(p, i));
    });
    commit(track);
    commit(joints);
    commit(arrows);
  }

  const initial =
    ringsOfTrace(store.state.step?.trace).length
      ? ringsOfTrace(store.state.step.trace)
      : ringsOfRoles(store.state.hello?.roles) ?? [{ ring: lay.ringPaths.map((p) => p.src), links: null }];
  makeMeshes(initial, cutHops(store.state, store.state.step));

  return {
    object: group,
    update(frame) {
      // The step's rings are the ones drawn (a new plan brings new rings).
      const fromStep = ringsOfTrace(frame.step?.trace);
      const cut = cutHops(frame.run, frame.step);
      if (fromStep.length && signature(fromStep, cut) !== builtSig) makeMeshes(fromStep, cut);
      const { track, arrows, pulses, tails } = meshes;
      frame.debug.ringCut = cutCount;
      frame.debug.ringDetours = paths.filter((p) => p.detour).length;
      frame.debug.ringSegments = track.count;
      frame.debug.ringRadius = radius;
      frame.debug.ringArrows = arrows.count;
      frame.debug.rings = ringCount;
      // Pulses go where the lanes say a chunk is travelling: each GPU whose event now is a
      // ring send to the next GPU on a drawn route.
      let active = 0;
      const going = frame.signal && [...RING_KINDS].some((k) => frame.block?.kinds?.has(k));
      let progress = frame.phaseT;
      let hidden = 0;
      // A GPU's ring send now: on its lane, or beside its backward (a hidden bucket).
      const ringSend = (g) => {
        const ev = frame.lane(g);
        if (ev && RING_KINDS.has(ev.kind)) return ev;
        const beside = frame.view?.transfersAt?.(g, frame.simT) ?? [];
        return beside.find((e) => RING_KINDS.has(e.kind)) ?? null;
      };
      for (let i = 0; i < paths.length; i++) {
        const ev = going && !paths[i].cut ? ringSend(paths[i].src) : null;
        sending[i] = ev && ev.peer === paths[i].dst ? 1 : 0;
        if (sending[i] && ev.kind !== RING_KIND) hidden += 1;
        if (sending[i]) {
          active += 1;
          passes = ev.passes || passes;
          // How far through its ring the step is (a planned step's rings need not fill a
          // block): the pulses run on the ring's own clock.
          // and so does a bucket hidden beside the backward, which fills only part of it.
          if ((frame.planned || ev.kind !== RING_KIND) && ev.passes) progress = (ev.index - 1 + ev.progress) / ev.passes;
        }
      }
      const dead = frame.failure?.dead ? frame.failure.gpu : null;
      const key = `${sending.join('')}|${dead}`;
      if (key !== lastKey) {
        lastKey = key;
        colourTrack(dead);
      }
      frame.debug.ringBroken = dead !== null;
      frame.debug.ringHidden = hidden;
      if (!active || frame.reduced) {
        // Reduced motion: the lit track is the signal; no moving pulses.
        pulses.count = 0;
        tails.count = 0;
        frame.debug.pulses = 0;
        if (active) frame.debug.ringLit = true;
        return false;
      }
      frame.debug.ringLit = true;
      // The ring's passes all look alike; a few laps are drawn over the ring's share of the
      // step so each stays a readable moment (the caption and HUD give the real count).
      const cap = frame.slow ? MAX_DRAWN_PASSES_SLOW : MAX_DRAWN_PASSES;
      const drawn = Math.max(1, Math.min(passes, cap));
      const t = Math.min(0.9999, Math.max(0, progress)) * drawn;
      const within = t - Math.floor(t); // progress through the current drawn pass
      let count = 0;
      for (let i = 0; i < paths.length; i++) {
        if (!sending[i]) continue;
        const p = paths[i];
        // Constant speed: a hop of length L finishes at L / longest of the pass. A hop that
        // arrives early waits at its GPU: a pass ends when its slowest hop lands, as in a
        // real ring, where the slowest link sets the pace.
        const d = Math.min(p.length, within * longest);
        pointAlong(p.points, d, at);
        place(pulses, count, at[0], at[1], at[2]);
        const back = Math.max(0, d - TAIL);
        if (d - back > 0.05) {
          pointAlong(p.points, back, behind);
          // +y (the cone's narrow top) points back along the route: wide at the pulse.
          placeSegment(tails, count, at, behind, pr * 0.85);
        } else {
          place(tails, count, at[0], at[1], at[2], 0, 0, 0);
        }
        count += 1;
      }
      pulses.count = count;
      tails.count = count;
      commit(pulses);
      commit(tails);
      frame.debug.pulses = count;
      return true;
    },
    dispose() {
      disposeTree(group);
    },
  };
}
