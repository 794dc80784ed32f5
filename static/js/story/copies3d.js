// Chapter 27 ("Copies"): the 64-GPU block (team3d.js) copied behind itself, one copy after
// another in a ripple, until every stage is a slab of GPUs: the front block is the live run,
// the copies behind it the field's mirrors of it. Brackets name two ways the work is
// split: the experts across the foot, the data down the side (every GPU of a stage reads its
// own microbatch); the stages are the block's rows. A counter over the block rolls from one
// block's GPUs to the field's as the copies land. With reduced motion every copy is there.

import * as THREE from 'three';
import { t } from '../i18n/lang.js';
import { textSprite } from '../scene/util.js';
import { boxOf } from './parts3d.js';

const RIPPLE_S = 0.28; // between one copy's arrival and the next
const SLIDE_S = 0.45; // a copy's slide from the block in front of it to its place
const MIRROR = 0x323c52; // a mirrored copy's GPUs: the live block's colour, dimmer

/** A bracket from `a` to `b` (world-space arrays, in the group), its ticks pointing along
 * `tick`, named by `words` beside its middle (at `off` from it). */
function bracket(group, a, b, tick, words, off) {
  const A = new THREE.Vector3(...a);
  const B = new THREE.Vector3(...b);
  const T = new THREE.Vector3(...tick);
  const pts = [A.clone().add(T), A, A, B, B, B.clone().add(T)];
  const line = new THREE.LineSegments(
    new THREE.BufferGeometry().setFromPoints(pts),
    new THREE.LineBasicMaterial({ color: 0xdfe7f5, depthTest: false }),
  );
  line.renderOrder = 11; // over the GPUs that stand in front of it
  line.userData.piece = 'bracket';
  const label = textSprite(words, { height: 0.75, bg: 'rgba(8,13,24,0.88)' });
  label.position.copy(A.clone().add(B).multiplyScalar(0.5)).add(new THREE.Vector3(...off));
  label.material.depthTest = false;
  label.renderOrder = 11;
  label.userData.piece = 'bracket-label';
  label.userData.words = words;
  group.add(line, label);
  return [line, label];
}

/**
 * addCopies({root, cells, centre, cell, pitch, copies, plan, reduced}) ->
 * {frame(), landed(), describe(), box(), info()}: `copies - 1` mirrors of the block's `cells`
 * (centre(c) places a cell in the block), each `pitch.z` behind the one before.
 */
export function addCopies({ root, cells, centre, cell, pitch, copies, plan, reduced }) {
  const behind = copies - 1;
  const mesh = new THREE.InstancedMesh(
    new THREE.BoxGeometry(cell.w, cell.h, cell.d),
    new THREE.MeshLambertMaterial({ color: MIRROR }),
    cells.length * behind,
  );
  mesh.name = 'team-copies';
  root.add(mesh);
  const start = performance.now();
  const at = new THREE.Matrix4();
  const spot = new THREE.Vector3();
  const turn = new THREE.Quaternion();
  const scale = new THREE.Vector3();
  let landed = -1; // copies in place behind the live one
  function place(now) {
    if (landed === behind) return false; // every copy in place: nothing moves any more
    const s = reduced() ? Infinity : (now - start) / 1000;
    let done = 0;
    for (let k = 1; k <= behind; k++) {
      const p = Math.min(1, Math.max(0, (s - (k - 1) * RIPPLE_S) / SLIDE_S));
      if (p >= 1) done++;
      const eased = 1 - (1 - p) ** 3;
      const z = -pitch.z * (k - 1 + eased); // from the copy in front of it
      const g = p > 0 ? 1 : 0.0001; // not there yet: nothing
      cells.forEach((c, i) => {
        const [x, y] = centre(c);
        mesh.setMatrixAt((k - 1) * cells.length + i, at.compose(spot.set(x, y, z), turn, scale.set(g, g, g)));
      });
    }
    mesh.instanceMatrix.needsUpdate = true;
    if (done !== landed) {
      landed = done;
      counter(landed + 1);
    }
    return done < behind;
  }

  // The counter over the block: GPUs in place, from the live block's to the field's.
  const top = Math.max(...cells.map((c) => centre(c)[1])) + cell.h / 2;
  const wide = Math.max(...cells.map((c) => centre(c)[0]));
  const deep = -pitch.z * behind;
  let count = null;
  function counter(n) {
    if (count) {
      root.remove(count);
      count.material.map?.dispose();
      count.material.dispose();
    }
    const words = t('{copies} × {gpus} = {all} GPUs', { copies: n, gpus: cells.length, all: n * cells.length });
    count = textSprite(words, { height: 1.0, bg: 'rgba(8,13,24,0.9)' });
    count.userData.words = words;
    count.position.set(wide / 2, top + 1.6, deep / 2);
    count.material.depthTest = false;
    count.renderOrder = 12;
    count.userData.piece = 'copy-count';
    root.add(count);
  }

  // The brackets, in the seed's words: the experts across the foot, the data down the side.
  const foot = -0.45;
  const x0 = -cell.w / 2;
  const x1 = wide + cell.w / 2;
  const z0 = cell.d / 2 + 0.3;
  const pieces = [
    ...bracket(root, [x0, foot, z0], [x1, foot, z0], [0, 0.3, 0], t('Expert parallelism · {ep} across', { ep: plan?.ep ?? 1 }), [0, -0.75, 0]),
    ...bracket(root, [x1 + 0.3, foot, z0 - cell.d], [x1 + 0.3, foot, deep - cell.d / 2], [-0.3, 0, 0], t('Data · {dp}-way', { dp: (plan?.dp ?? 1) * copies }), [1.2, -0.75, 0]),
  ];
  place(performance.now());

  return {
    /** Move the ripple on; true while copies are still arriving. */
    frame: () => place(performance.now()),
    landed: () => landed,
    box: () => ({ min: [x0 - 2.6, foot - 1.3, deep - cell.d], max: [x1 + 1.5, top + 2.2, z0 + 0.5] }),
    describe: () => [
      ...Array.from({ length: Math.max(0, landed) }, (_, k) => {
        const z = -pitch.z * (k + 1);
        const a = root.localToWorld(new THREE.Vector3(x0, 0, z - cell.d / 2));
        const b = root.localToWorld(new THREE.Vector3(x1, top, z + cell.d / 2));
        return { name: 'copy', box: { min: a.toArray(), max: b.toArray() } };
      }),
      ...pieces.map((p) => ({ name: p.userData.piece, box: boxOf(p), words: p.userData.words })),
      ...(count ? [{ name: 'copy-count', box: boxOf(count), words: count.userData.words }] : []),
    ],
    info: () => ({ copies, landed: landed + 1, gpus: (landed + 1) * cells.length }),
  };
}
