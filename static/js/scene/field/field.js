// The scale field: the whole cluster at 8 ... 131,072 GPUs, drawn in a handful of draw calls.
//
// What is drawn (each kind is one InstancedMesh or one merged LineSegments, so draw calls do not
// grow with the GPU count):
//   floor      one plate per pod
//   racks      one box per rack; its front and top carry a texture of its servers and their GPU
//              cells (the servers and GPUs are texture, not geometry: the far level of detail)
//   pods       one block per pod, the same picture for a whole pod, shown instead of the racks
//              when the camera is far (the farthest level of detail)
//   live       the live run's GPUs as cells of their own on their racks' faces (the near level
//              of detail), coloured by what each one's lane of the step is doing now
//   beacon     a column of light over the live racks so they can be found from anywhere
//   fabric     leaf, spine and (when the plan needs one) core switches, and a few of each
//              switch's links per tier
// Only the live GPUs train for real; every other GPU mirrors the live group: the racks' cells
// take the colour of what most live GPUs are doing (one material colour, no per-GPU work).

import * as THREE from 'three';
import { TONES, toneOf } from './tones.js';

// Field units: a rack is RACK.w wide and RACK.h tall (not to scale: the GPU cells are made large
// enough to see).
export const RACK = Object.freeze({ w: 1.6, d: 2.4, h: 4.2, gapX: 0.12, aisle: 2.2 });
const PER_ROW = 16; // racks side by side in a row
const POD_GAP = 7;
const LEAF_Y = RACK.h + 1.6;
const CELL_DEPTH = 0.08;
// Server slabs on the rack's front face (from the top), and the cell grid inside each slab.
const FACE = Object.freeze({ top: 0.25, bottom: 0.15, slabGap: 0.08, padX: 0.12, padY: 0.12 });

const ease = (t) => (t < 0.5 ? 4 * t * t * t : 1 - (-2 * t + 2) ** 3 / 2);

/** Cell grid of one server's GPUs on the face: two rows when there are four or more. */
function cellGrid(per) {
  const rows = per >= 4 ? 2 : 1;
  return { rows, cols: Math.ceil(per / rows) };
}

/** Where the field puts everything: pure arithmetic on the plan (no three.js objects). */
export function fieldLayout(plan) {
  const rowsPerPod = Math.max(1, Math.ceil(plan.racksPerPod / PER_ROW));
  const perRow = Math.min(PER_ROW, plan.racksPerPod);
  const pitchX = RACK.w + RACK.gapX;
  const pitchZ = RACK.d + RACK.aisle;
  const podW = perRow * pitchX - RACK.gapX;
  const podD = rowsPerPod * pitchZ - RACK.aisle;
  const podCols = plan.pods <= 4 ? plan.pods : Math.ceil(Math.sqrt(plan.pods * 2));
  const podRows = Math.ceil(plan.pods / podCols);
  const width = podCols * podW + (podCols - 1) * POD_GAP;
  const depth = podRows * podD + (podRows - 1) * POD_GAP;
  const pods = [];
  for (let p = 0; p < plan.pods; p++) {
    const c = p % podCols;
    const r = Math.floor(p / podCols);
    const x0 = -width / 2 + c * (podW + POD_GAP);
    const z0 = depth / 2 - r * (podD + POD_GAP); // front edge (largest z)
    pods.push({ id: p, x: x0 + podW / 2, z: z0 - podD / 2, w: podW, d: podD, x0, z0 });
  }
  const rackAt = (i) => {
    const p = Math.floor(i / plan.racksPerPod);
    const j = i % plan.racksPerPod;
    const pod = pods[Math.min(p, pods.length - 1)];
    const x = pod.x0 + (j % PER_ROW) * pitchX + RACK.w / 2;
    const z = pod.z0 - Math.floor(j / PER_ROW) * pitchZ - RACK.d / 2;
    return { x, y: RACK.h / 2, z, pod: pod.id };
  };
  // The fabric floats above: spines higher the bigger the field, cores above them.
  const span = Math.max(width, depth);
  const spineY = LEAF_Y + Math.max(5, span * 0.07);
  const coreY = spineY + Math.max(6, span * 0.1);
  return { pods, podCols, rackAt, width, depth, rowsPerPod, perRow, pitchX, pitchZ, spineY, coreY, top: plan.tiers === 3 ? coreY : spineY };
}

/** Where GPU `local` of server `slot` (0 = top) sits on its rack's front face, relative to
 * the rack's centre: [x, y]. The texture below draws the same grid. */
function cellOffset(plan, slot, local) {
  const { rows, cols } = cellGrid(plan.perServer);
  const slabH = (RACK.h - FACE.top - FACE.bottom - (plan.serversPerRack - 1) * FACE.slabGap) / plan.serversPerRack;
  const slabTop = RACK.h / 2 - FACE.top - slot * (slabH + FACE.slabGap);
  const cw = (RACK.w - 2 * FACE.padX) / cols;
  const ch = (slabH - 2 * FACE.padY) / rows;
  const r = Math.floor(local / cols);
  const c = local % cols;
  return { x: -RACK.w / 2 + FACE.padX + (c + 0.5) * cw, y: slabTop - FACE.padY - (r + 0.5) * ch, w: cw * 0.8, h: ch * 0.72 };
}

/** The rack's picture: front face (left half) and top (right half) of one canvas. */
function rackTexture(plan) {
  const W = 256;
  const H = 512;
  const cv = document.createElement('canvas');
  cv.width = W * 2;
  cv.height = H;
  const g = cv.getContext('2d');
  g.fillStyle = '#2a3447';
  g.fillRect(0, 0, W * 2, H);
  const sx = W / RACK.w;
  const sy = H / RACK.h;
  // Front: server slabs, each with its GPU cells (white, tinted by the material).
  for (let s = 0; s < plan.serversPerRack; s++) {
    const a = cellOffset(plan, s, 0);
    const slabH = (RACK.h - FACE.top - FACE.bottom - (plan.serversPerRack - 1) * FACE.slabGap) / plan.serversPerRack;
    const top = RACK.h / 2 - FACE.top - s * (slabH + FACE.slabGap);
    g.fillStyle = '#3a475e';
    g.fillRect(0.05 * sx, (RACK.h / 2 - top) * sy, (RACK.w - 0.1) * sx, slabH * sy);
    for (let i = 0; i < plan.perServer; i++) {
      const c = cellOffset(plan, s, i);
      g.fillStyle = '#ffffff';
      g.fillRect((c.x + RACK.w / 2 - c.w / 2) * sx, (RACK.h / 2 - c.y - c.h / 2) * sy, c.w * sx, c.h * sy);
    }
    void a;
  }
  // Top: the rack's servers from above, a strip each, with its GPUs as cells.
  const { rows, cols } = cellGrid(plan.perServer);
  const n = plan.serversPerRack;
  const stripH = H / n;
  for (let s = 0; s < n; s++) {
    g.fillStyle = '#3a475e';
    g.fillRect(W + 10, s * stripH + 8, W - 20, stripH - 16);
    const cw = (W - 40) / cols;
    const ch = (stripH - 36) / rows;
    for (let i = 0; i < plan.perServer; i++) {
      const r = Math.floor(i / cols);
      const c = i % cols;
      g.fillStyle = '#ffffff';
      g.fillRect(W + 20 + c * cw + cw * 0.12, s * stripH + 18 + r * ch + ch * 0.12, cw * 0.76, ch * 0.76);
    }
  }
  const tex = new THREE.CanvasTexture(cv);
  tex.colorSpace = THREE.SRGBColorSpace;
  tex.anisotropy = 4;
  return tex;
}

/** A pod seen from above: its rows of racks, each a block of bright cells. */
function podTexture(lay) {
  const cols = lay.perRow;
  const rows = lay.rowsPerPod;
  const px = 32;
  const cv = document.createElement('canvas');
  // Power-of-two sizes: the texture is mipmapped, and it is stretched over the pod anyway.
  cv.width = 512;
  cv.height = 512;
  void px;
  const g = cv.getContext('2d');
  g.fillStyle = '#1c2538';
  g.fillRect(0, 0, cv.width, cv.height);
  const rw = cv.width / cols;
  const rh = cv.height / (rows * lay.pitchZ);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const x = c * rw;
      const y = r * lay.pitchZ * rh;
      g.fillStyle = '#3a475e';
      g.fillRect(x + 1, y, rw - 2, RACK.d * rh);
      g.fillStyle = '#ffffff';
      for (let s = 0; s < 4; s++) g.fillRect(x + rw * 0.2, y + (s + 0.2) * ((RACK.d * rh) / 4), rw * 0.6, ((RACK.d * rh) / 4) * 0.6);
    }
  }
  const tex = new THREE.CanvasTexture(cv);
  tex.colorSpace = THREE.SRGBColorSpace;
  tex.anisotropy = 4;
  return tex;
}

/** A unit box whose front (+z) shows the left half of the rack texture, its top the right
 * half, and its other faces a plain corner of it. */
function rackGeometry() {
  const geo = new THREE.BoxGeometry(1, 1, 1);
  const uv = geo.attributes.uv;
  // BoxGeometry faces: +x, -x, +y, -y, +z, -z; four vertices each, uv corners (0,1) (1,1) (0,0) (1,0).
  for (let f = 0; f < 6; f++) {
    for (let v = 0; v < 4; v++) {
      const i = f * 4 + v;
      const u = uv.getX(i);
      const w = uv.getY(i);
      if (f === 4) uv.setXY(i, u * 0.5, w);
      else if (f === 2) uv.setXY(i, 0.5 + u * 0.5, w);
      else uv.setXY(i, 0.002, 0.998); // the plain body colour in the top-left corner
    }
  }
  uv.needsUpdate = true;
  return geo;
}

function lineMesh(positions, colour, opacity) {
  const geo = new THREE.BufferGeometry();
  geo.setAttribute('position', new THREE.Float32BufferAttribute(positions, 3));
  const mat = new THREE.LineBasicMaterial({ color: colour, transparent: true, opacity, depthWrite: false });
  return new THREE.LineSegments(geo, mat);
}

function switches(count, colour, size) {
  const mesh = new THREE.InstancedMesh(new THREE.BoxGeometry(...size), new THREE.MeshLambertMaterial({ color: colour }), Math.max(1, count));
  mesh.count = count;
  mesh.frustumCulled = false;
  return mesh;
}

/** Lay `count` switches out over a rectangle (centre x, z; width, depth) at height y. */
function spread(count, cx, cz, w, d, y) {
  const cols = Math.max(1, Math.min(count, Math.round(Math.sqrt((count * w) / Math.max(1, d)))));
  const rows = Math.ceil(count / cols);
  const out = [];
  for (let i = 0; i < count; i++) {
    const c = i % cols;
    const r = Math.floor(i / cols);
    out.push([cx + (cols > 1 ? (c / (cols - 1) - 0.5) * w : 0), y, cz + (rows > 1 ? (0.5 - r / (rows - 1)) * d : 0)]);
  }
  return out;
}

/**
 * buildField(scene, {plan, palette, topology, maxAnisotropy}) -> the field's object: group,
 * update(frame) -> true while something in it still moves (nothing does on its own), layout,
 * stops (the camera path's stops), liveCell(gpu) -> world position, pick(raycaster), dispose().
 */
export function buildField(scene, { plan, palette, topology }) {
  const group = new THREE.Group();
  group.name = 'field';
  const lay = fieldLayout(plan);
  const m = new THREE.Matrix4();
  const q = new THREE.Quaternion();
  const v = new THREE.Vector3();
  const s = new THREE.Vector3();
  const disposables = [];

  // Floor plates, one per pod.
  const floor = new THREE.InstancedMesh(new THREE.BoxGeometry(1, 0.1, 1), new THREE.MeshLambertMaterial({ color: palette.floor }), plan.pods);
  lay.pods.forEach((p, i) => floor.setMatrixAt(i, m.compose(v.set(p.x, -0.06, p.z), q, s.set(p.w + 2.4, 1, p.d + 2.4))));
  floor.frustumCulled = false;

  // Racks (near and middle distance) and pod blocks (far), both tinted by the mirrored state.
  const rackTex = rackTexture(plan);
  const rackMat = new THREE.MeshLambertMaterial({ map: rackTex, emissiveMap: rackTex, emissive: new THREE.Color(palette.gpuIdle), emissiveIntensity: 0.35 });
  const racks = new THREE.InstancedMesh(rackGeometry(), rackMat, plan.racks);
  for (let i = 0; i < plan.racks; i++) {
    const r = lay.rackAt(i);
    racks.setMatrixAt(i, m.compose(v.set(r.x, r.y, r.z), q, s.set(RACK.w, RACK.h, RACK.d)));
  }
  racks.frustumCulled = false;
  const podTex = podTexture(lay);
  const podMat = new THREE.MeshLambertMaterial({ map: podTex, emissiveMap: podTex, emissive: new THREE.Color(palette.gpuIdle), emissiveIntensity: 0.35 });
  const podGeo = new THREE.BoxGeometry(1, 1, 1);
  {
    // Only the top carries the picture; the sides take the body colour.
    const uv = podGeo.attributes.uv;
    for (let i = 0; i < uv.count; i++) if (Math.floor(i / 4) !== 2) uv.setXY(i, 0.001, 0.999);
  }
  const podBlocks = new THREE.InstancedMesh(podGeo, podMat, plan.pods);
  lay.pods.forEach((p, i) => {
    // Only as far as the pod's racks go (the last pod may be partly filled).
    const racksHere = Math.min(plan.racksPerPod, plan.racks - i * plan.racksPerPod);
    const rowsHere = Math.ceil(racksHere / lay.perRow);
    const dHere = rowsHere * lay.pitchZ - RACK.aisle;
    podBlocks.setMatrixAt(i, m.compose(v.set(p.x, RACK.h / 2, p.z0 - dHere / 2), q, s.set(p.w, RACK.h, dHere)));
  });
  podBlocks.frustumCulled = false;
  podBlocks.visible = false;

  // The live GPUs: cells of their own on the face of their racks.
  const liveGpus = (topology?.gpus ?? []).slice(0, plan.gpus);
  const liveCells = new THREE.InstancedMesh(new THREE.BoxGeometry(1, 1, CELL_DEPTH), new THREE.MeshBasicMaterial({ color: '#ffffff' }), Math.max(1, liveGpus.length));
  const cellPos = [];
  // The live racks stand in the middle of the front row of the front middle pod, where the
  // camera finds them first.
  const liveRackCount = Math.max(1, Math.ceil(Math.ceil(liveGpus.length / plan.perServer) / plan.serversPerRack));
  const homePod = Math.min(plan.pods - 1, Math.floor((Math.min(plan.pods, lay.podCols) - 1) / 2));
  const homeCol = Math.max(0, Math.floor((Math.min(lay.perRow, plan.racksPerPod) - liveRackCount) / 2));
  const home = Math.min(plan.racks - liveRackCount, homePod * plan.racksPerPod + homeCol);
  const serverIndex = new Map((topology?.servers ?? []).map((sv, i) => [sv.id, i]));
  liveGpus.forEach((g, i) => {
    const sIdx = serverIndex.get(g.server) ?? Math.floor(i / plan.perServer);
    const rack = home + Math.floor(sIdx / plan.serversPerRack);
    const slot = sIdx % plan.serversPerRack;
    const local = g.local ?? i % plan.perServer;
    const r = lay.rackAt(rack);
    const c = cellOffset(plan, slot, local);
    const pos = new THREE.Vector3(r.x + c.x, r.y + c.y, r.z + RACK.d / 2 + CELL_DEPTH / 2 + 0.01);
    cellPos.push({ gpu: g.id, pos, rack, slot, server: g.server });
    liveCells.setMatrixAt(i, m.compose(pos, q, s.set(c.w * 1.05, c.h * 1.1, 1)));
    liveCells.setColorAt(i, new THREE.Color(palette.gpuIdle));
  });
  liveCells.count = liveGpus.length;
  liveCells.frustumCulled = false;
  const liveRacks = [...new Set(cellPos.map((c) => c.rack))];

  // The beacon: a thin column of light from the live racks up past the top tier, and a ring.
  const liveBox = new THREE.Box3();
  for (const r of liveRacks) {
    const p = lay.rackAt(r);
    liveBox.expandByPoint(v.set(p.x - RACK.w / 2, 0, p.z - RACK.d / 2));
    liveBox.expandByPoint(v.set(p.x + RACK.w / 2, RACK.h, p.z + RACK.d / 2));
  }
  const liveCentre = liveBox.getCenter(new THREE.Vector3());
  const beamH = lay.top * 1.25 + 2;
  const beamR = Math.max(0.16, Math.max(lay.width, lay.depth) * 0.005);
  const beam = new THREE.Mesh(
    new THREE.CylinderGeometry(beamR, beamR, beamH, 20, 1, true),
    new THREE.MeshBasicMaterial({ color: palette.text, transparent: true, opacity: 0.55, depthWrite: false, side: THREE.DoubleSide }),
  );
  beam.position.set(liveCentre.x, RACK.h + beamH / 2, liveCentre.z);
  const ringR = Math.max(liveBox.max.x - liveBox.min.x, liveBox.max.z - liveBox.min.z) * 0.75 + 0.8;
  const ring = new THREE.Mesh(
    new THREE.RingGeometry(ringR, ringR + Math.max(0.12, beamR * 0.5), 48),
    new THREE.MeshBasicMaterial({ color: palette.text, side: THREE.DoubleSide }),
  );
  ring.rotation.x = -Math.PI / 2;
  ring.position.set(liveCentre.x, 0.03, liveCentre.z);

  // A white outline round each live rack, so the live group reads as a group close up too.
  const edges = new THREE.EdgesGeometry(new THREE.BoxGeometry(RACK.w + 0.12, RACK.h + 0.12, RACK.d + 0.12));
  const edgePts = edges.attributes.position.array;
  const outlinePts = [];
  for (const r of liveRacks) {
    const p = lay.rackAt(r);
    for (let i = 0; i < edgePts.length; i += 3) outlinePts.push(edgePts[i] + p.x, edgePts[i + 1] + p.y, edgePts[i + 2] + p.z);
  }
  edges.dispose();
  const liveOutline = lineMesh(outlinePts, palette.text, 0.95);

  // The fabric.
  const gpusPerLeaf = plan.radix / 2;
  const leafPos = [];
  for (let i = 0; i < plan.leaves; i++) {
    const a = lay.rackAt(Math.floor((i * gpusPerLeaf) / plan.gpusPerRack));
    const b = lay.rackAt(Math.min(plan.racks - 1, Math.floor(((i + 1) * gpusPerLeaf - 1) / plan.gpusPerRack)));
    leafPos.push([(a.x + b.x) / 2, LEAF_Y, (a.z + b.z) / 2]);
  }
  const spinePos = [];
  const podOfSpine = [];
  if (plan.tiers === 3) {
    const perPod = plan.radix / 2;
    lay.pods.forEach((p) => {
      const n = Math.min(perPod, plan.spines - spinePos.length);
      for (const pt of spread(n, p.x, p.z, p.w * 0.92, p.d * 0.12, lay.spineY)) {
        spinePos.push(pt);
        podOfSpine.push(p.id);
      }
    });
  } else if (plan.tiers === 2) {
    for (const pt of spread(plan.spines, 0, 0, lay.width * 0.8, lay.depth * 0.12, lay.spineY)) spinePos.push(pt);
  }
  const corePos = plan.tiers === 3 ? spread(plan.cores, 0, 0, lay.width * 0.95, lay.depth * 0.25, lay.coreY) : [];
  const sw = Math.max(1, Math.min(3.2, Math.sqrt((lay.width * lay.depth) / Math.max(1, plan.leaves + plan.spines)) * 0.35));
  const leafMesh = switches(leafPos.length, palette.switch, [1.3, 0.3, 0.7]);
  leafPos.forEach((p, i) => leafMesh.setMatrixAt(i, m.compose(v.set(...p), q, s.set(1, 1, 1))));
  const spineMesh = switches(spinePos.length, palette.switchLit, [sw * 1.4, sw * 0.35, sw * 0.7]);
  spinePos.forEach((p, i) => spineMesh.setMatrixAt(i, m.compose(v.set(...p), q, s.set(1, 1, 1))));
  const coreMesh = switches(corePos.length, palette.text, [sw * 1.8, sw * 0.45, sw * 0.9]);
  corePos.forEach((p, i) => coreMesh.setMatrixAt(i, m.compose(v.set(...p), q, s.set(1, 1, 1))));

  // Links: every rack to its leaf; each leaf to a few spines; each spine to a core (the
  // rest of each switch's links are left out, or the fabric would be a solid fog).
  const rackLinks = [];
  for (let i = 0; i < plan.racks; i++) {
    const r = lay.rackAt(i);
    const l = leafPos[Math.min(leafPos.length - 1, Math.floor((i * plan.gpusPerRack) / gpusPerLeaf))];
    rackLinks.push(r.x, RACK.h, r.z, l[0], l[1], l[2]);
  }
  const leafLinks = [];
  if (spinePos.length) {
    const each = plan.tiers === 2 && leafPos.length * spinePos.length <= 4096 ? spinePos.length : 2;
    leafPos.forEach((l, i) => {
      let pool = spinePos.map((_, j) => j);
      if (plan.tiers === 3) {
        const pod = lay.rackAt(Math.floor((i * gpusPerLeaf) / plan.gpusPerRack)).pod;
        pool = pool.filter((j) => podOfSpine[j] === pod);
      }
      for (let e = 0; e < Math.min(each, pool.length); e++) {
        const sp = spinePos[pool[(i + e * Math.ceil(pool.length / each)) % pool.length]];
        leafLinks.push(...l, ...sp);
      }
    });
  }
  const coreLinks = [];
  if (corePos.length) {
    spinePos.forEach((sp, i) => {
      const c = corePos[(i * 7 + podOfSpine[i]) % corePos.length];
      coreLinks.push(...sp, ...c);
    });
  }
  const rackCables = lineMesh(rackLinks, palette.cable, 0.45);
  const leafCables = lineMesh(leafLinks, palette.cable, 0.35);
  const coreCables = lineMesh(coreLinks, palette.cable, 0.3);

  group.add(floor, racks, podBlocks, liveCells, liveOutline, beam, ring, leafMesh, spineMesh, coreMesh, rackCables, leafCables, coreCables);
  group.traverse((o) => {
    o.userData.part = 'field';
  });
  scene.add(group);
  disposables.push(rackTex, podTex);

  // Camera stops for the path, from one live GPU out to the whole field.
  const first = cellPos[0]?.pos ?? liveCentre;
  const firstRack = lay.rackAt(cellPos[0]?.rack ?? 0);
  const firstPod = lay.pods[firstRack.pod];
  const fieldCentre = new THREE.Vector3(0, lay.top * 0.35, 0);
  const stops = [
    { name: 'GPU', target: first.clone(), distance: 2.4, dir: [0.12, 0.18, 1] },
    { name: 'server', target: new THREE.Vector3(firstRack.x, first.y, firstRack.z + RACK.d / 2), distance: 5.5, dir: [0.2, 0.3, 1] },
    { name: 'rack', target: new THREE.Vector3(firstRack.x, RACK.h / 2, firstRack.z), distance: 14, dir: [0.35, 0.45, 1] },
    {
      name: plan.pods > 1 ? 'pod' : 'row',
      target: new THREE.Vector3(firstPod.x, RACK.h, firstPod.z),
      distance: Math.max(24, Math.max(firstPod.w, firstPod.d) * 1.7),
      dir: [0.25, 0.7, 1],
      box: { min: [firstPod.x0, 0, firstPod.z0 - firstPod.d], max: [firstPod.x0 + firstPod.w, plan.tiers === 3 ? lay.spineY : RACK.h, firstPod.z0] },
    },
    {
      name: 'field',
      target: fieldCentre,
      distance: Math.max(40, Math.max(lay.width * 1.55, lay.depth * 1.5, lay.top * 2.2)),
      dir: [0, 1.15, 1],
      box: { min: [-lay.width / 2, 0, -lay.depth / 2], max: [lay.width / 2, lay.top, lay.depth / 2] },
    },
  ];
  // A pod stop that already shows the whole field adds nothing.
  if (plan.pods === 1 && stops[3].distance > stops[4].distance * 0.8) stops.splice(3, 1);
  for (const st of stops) st.dir = new THREE.Vector3(...st.dir).normalize();

  let mirror = null;
  let decade = -1; // the step's tenfold while the field re-tones with training (-1: it does not)
  let lastKey = '';
  let lod = 'racks';
  const colourOf = (pal, kind) =>
    kind === 'forward' ? pal.forward : kind === 'backward' ? pal.backward : kind === 'allreduce' ? pal.allreduce : kind === 'wait' ? pal.waiting : kind === 'failed' ? pal.failure : pal.gpuIdle;
  const tmp = new THREE.Color();
  const tone = new THREE.Color();
  const kinds = new Array(liveGpus.length).fill(null);

  // Where each tier's name is written on screen: above its first switch, at the left.
  const leftmost = (list) => list.reduce((a, p) => (p[0] < a[0] - 1e-6 || (Math.abs(p[0] - a[0]) < 1e-6 && p[2] > a[2]) ? p : a), list[0]);
  const tierAnchors = [];
  if (leafPos.length) tierAnchors.push({ tier: 'leaf', count: plan.leaves, pos: new THREE.Vector3(...leftmost(leafPos)) });
  if (spinePos.length) tierAnchors.push({ tier: 'spine', count: plan.spines, pos: new THREE.Vector3(...leftmost(spinePos)) });
  if (corePos.length) tierAnchors.push({ tier: 'core', count: plan.cores, pos: new THREE.Vector3(...leftmost(corePos)) });

  return {
    object: group,
    layout: lay,
    tierAnchors,
    stops,
    liveCentre,
    // Where the live group's tag hangs on the beam: inside the field's box, so on screen
    // whenever the whole field is.
    beamTop: new THREE.Vector3(liveCentre.x, RACK.h + (lay.top - RACK.h) * 0.7, liveCentre.z),
    liveCells: cellPos,
    meshes: { liveCells, racks, podBlocks },
    get lod() {
      return lod;
    },
    get mirror() {
      return mirror;
    },
    get decade() {
      return decade;
    },
    update(frame) {
      const pal = frame.palette;
      const failed = frame.run?.failedGpus ?? new Set();
      const tally = {};
      for (let i = 0; i < liveGpus.length; i++) {
        const id = liveGpus[i].id;
        const ev = frame.lane ? frame.lane(id) : null;
        let kind = ev?.show ?? ev?.kind ?? null;
        if (kind === 'data' && frame.step?.loader?.waited) kind = 'wait';
        if (failed.has?.(id)) kind = 'failed';
        kinds[i] = kind;
        if (kind !== 'failed') tally[kind ?? 'idle'] = (tally[kind ?? 'idle'] ?? 0) + 1;
      }
      let best = 'idle';
      for (const [k, n] of Object.entries(tally)) if (n > (tally[best] ?? 0)) best = k;
      const shown = ['forward', 'backward', 'allreduce', 'wait'].includes(best) ? best : 'idle';
      // Far away, one block per pod; closer, every rack.
      const d = frame.camera.position.length();
      const far = plan.pods > 1 && frame.camera.position.distanceTo(fieldCentre) > Math.max(lay.width, lay.depth) * 1.05;
      void d;
      const nextLod = far ? 'pods' : 'racks';
      // The beam fades out close up, where it would stand in front of the live rack.
      const near = frame.camera.position.distanceTo(liveCentre);
      const fade = Math.min(1, Math.max(0, (near - 12) / 40));
      beam.visible = fade > 0.02;
      beam.material.opacity = 0.55 * fade;
      // "Every tenfold more steps, the weights shift a shade": frame.tone is the step whose
      // tenfold the racks' colour shows (one shade further at 10, 100, 1,000, ...), or false.
      const dec = frame.tone ? toneOf(frame.tone) : -1;
      const key = `${kinds.join(',')}|${shown}|${nextLod}|${pal.theme}|${fade.toFixed(2)}|${dec}`;
      if (key === lastKey) return false;
      lastKey = key;
      decade = dec;
      mirror = shown;
      lod = nextLod;
      racks.visible = lod === 'racks';
      rackCables.visible = lod === 'racks';
      podBlocks.visible = lod === 'pods';
      const lit = shown !== 'idle';
      tmp.set(colourOf(pal, shown));
      for (const mat of [rackMat, podMat]) {
        mat.emissive.copy(tmp);
        // The mirrors glow a little less than the live cells, so the live group stands out.
        mat.emissiveIntensity = lit ? 0.75 : 0.22;
        mat.color.set(lit ? '#e6ebf5' : '#9aa6bd');
        if (dec >= 0) mat.color.lerp(tone.set(TONES[dec]), lit ? 0.35 : 0.7);
      }
      leafCables.material.color.set(shown === 'allreduce' ? pal.allreduce : pal.cable);
      coreCables.material.color.set(shown === 'allreduce' ? pal.allreduce : pal.cable);
      leafCables.material.opacity = shown === 'allreduce' ? 0.6 : 0.35;
      // A live GPU between passes is pale, brighter than every mirror: the lit ones are live.
      for (let i = 0; i < liveGpus.length; i++) liveCells.setColorAt(i, tmp.set(kinds[i] ? colourOf(pal, kinds[i]) : pal.switchLit).multiplyScalar(kinds[i] ? 1 : 1.2));
      if (liveCells.instanceColor) liveCells.instanceColor.needsUpdate = true;
      frame.debug.fieldLit = liveGpus.length;
      return false;
    },
    /** What a ray hits first: a live GPU {kind: 'live', gpu} or a mirroring rack
     * {kind: 'mirror', rack, gpus: [first, last]}, or null. */
    pick(raycaster) {
      const hitLive = raycaster.intersectObject(liveCells, false)[0];
      const mesh = racks.visible ? racks : podBlocks;
      const hitRack = raycaster.intersectObject(mesh, false)[0];
      if (hitLive && (!hitRack || hitLive.distance <= hitRack.distance + 0.2)) return { kind: 'live', gpu: cellPos[hitLive.instanceId].gpu };
      if (!hitRack) return null;
      if (mesh === podBlocks) return { kind: 'mirror', pod: hitRack.instanceId };
      const live = liveRacks.includes(hitRack.instanceId);
      return { kind: live ? 'live-rack' : 'mirror', rack: hitRack.instanceId, pod: lay.rackAt(hitRack.instanceId).pod };
    },
    dispose() {
      scene.remove(group);
      group.traverse((o) => {
        o.geometry?.dispose?.();
        o.material?.dispose?.();
        o.dispose?.();
      });
      for (const d of disposables) d.dispose();
    },
  };
}

/** The camera's pose at path position t (0 = the first stop, 1 = the last): eased from stop
 * to stop, the distance changing by a constant factor per second rather than linearly. */
export function poseAt(stops, t) {
  const u = Math.min(1, Math.max(0, t)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(u));
  const f = ease(u - i);
  const a = stops[i];
  const b = stops[i + 1];
  const target = a.target.clone().lerp(b.target, f);
  const dist = Math.exp(Math.log(a.distance) + (Math.log(b.distance) - Math.log(a.distance)) * f);
  const dir = a.dir.clone().lerp(b.dir, f).normalize();
  return { position: target.clone().addScaledVector(dir, dist), target, stop: f < 0.5 ? i : i + 1 };
}
