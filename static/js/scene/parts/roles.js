// Who does what under the run's plan (part of part 3, the GPU servers), from hello.roles:
//
// - a plate on the board under each group of GPUs that work as one: the GPUs of a stage that
//   split its layers between them (tensor parallel), or, without that, each GPU of a pipeline
//   stage, or the GPUs that share out the experts. Plates are quiet shades of the board,
//   lighter stage by stage (stage 1 darkest), framed by a thin bracket;
// - a tag on the front of every GPU: its stage and the experts it holds ("S1", "S2 E3–4");
// - a tag on the front of every server: which data-parallel copy of the model it holds.
//
// The overview stays calm: plates and server tags always, the GPUs' own tags only once the
// camera is close enough for them to be read. A data-parallel run draws none of it (every GPU
// is a full copy, as before). Words are one atlas texture and one InstancedMesh, plates and
// brackets one InstancedMesh each: draw calls do not grow with GPUs.

import * as THREE from 'three';
import { isPlanned, planOf, roleTag, rolesOf } from '../plan.js';
import { atlasQuad, commit, disposeTree, instanced, place, tag, textAtlas } from '../util.js';

// The GPUs' tags show once a GPU package is this wide on screen (CSS px).
const DETAIL_PX = 44;
const BAR = 0.045; // bracket thickness

/** The groups that get one plate: [{key, gpus, stage}]. */
function plateGroups(roles, plan) {
  const groups = new Map();
  for (const r of roles) {
    let key;
    if (plan.tp > 1) key = `t${r.dp}/${r.stage}`;
    else if (plan.pp > 1) key = `g${r.gpu}`;
    else key = `e${r.stage}/${r.tp}/${Math.floor(r.dp / Math.max(1, plan.ep))}`;
    if (!groups.has(key)) groups.set(key, { key, gpus: [], stage: r.stage });
    groups.get(key).gpus.push(r.gpu);
  }
  return [...groups.values()];
}

function copiesText(dps) {
  const a = Math.min(...dps) + 1;
  const b = Math.max(...dps) + 1;
  return a === b ? `copy ${a}` : `copies ${a}–${b}`;
}

export function build(ctx) {
  const { scene, layout: lay, palette, store } = ctx;
  const group = new THREE.Group();
  group.name = 'roles';
  tag(group, 'gpus');
  scene.add(group);
  const hello = store.state.hello;
  const plan = planOf(hello);
  const roles = rolesOf(hello);
  const planned = isPlanned(plan) && roles.length === lay.gpus.length;
  const tags = planned ? roles.map((r) => ({ gpu: r.gpu, text: roleTag(r, plan), dp: r.dp, stage: r.stage, tp: r.tp, experts: r.experts })) : [];
  const debugTags = tags.map(({ gpu, text }) => ({ gpu, text }));
  let shownKey = null;
  let serverTags = [];

  if (!planned) {
    return {
      object: group,
      update(frame) {
        frame.debug.roleTags = debugTags;
        frame.debug.roleTagsShown = false;
        frame.debug.rolePlates = 0;
        return false;
      },
      dispose: () => disposeTree(group),
    };
  }

  const [gw, gh, gd] = lay.dims.gpu;
  const byId = new Map(lay.gpus.map((g) => [g.id, g]));
  const groups = plateGroups(roles, plan);
  const low = new THREE.Color(palette.stageLow);
  const high = new THREE.Color(palette.stageHigh);
  const shade = (stage) => low.clone().lerp(high, plan.pp > 1 ? stage / (plan.pp - 1) : 0.5);

  // Plates and their brackets.
  const plates = instanced(new THREE.BoxGeometry(1, 1, 1), new THREE.MeshLambertMaterial({ color: '#ffffff' }), groups.length, 'gpus');
  const bars = instanced(new THREE.BoxGeometry(1, 1, 1), new THREE.MeshBasicMaterial({ color: '#ffffff' }), groups.length * 4, 'gpus');
  const y = lay.dims.chassisH + 0.012;
  let nb = 0;
  groups.forEach((grp, i) => {
    const ps = grp.gpus.map((g) => byId.get(g)).filter(Boolean);
    const pad = 0.12;
    const x0 = Math.min(...ps.map((p) => p.x)) - gw / 2 - pad;
    const x1 = Math.max(...ps.map((p) => p.x)) + gw / 2 + pad;
    const z0 = Math.min(...ps.map((p) => p.z)) - gd / 2 - pad;
    const z1 = Math.max(...ps.map((p) => p.z)) + gd / 2 + pad;
    const cx = (x0 + x1) / 2;
    const cz = (z0 + z1) / 2;
    const c = shade(grp.stage);
    place(plates, i, cx, y, cz, x1 - x0, 0.02, z1 - z0);
    plates.setColorAt(i, c);
    const edge = c.clone().lerp(new THREE.Color(palette.roleText), 0.45);
    for (const [bx, bz, sx, sz] of [
      [cx, z0, x1 - x0, BAR],
      [cx, z1, x1 - x0, BAR],
      [x0, cz, BAR, z1 - z0],
      [x1, cz, BAR, z1 - z0],
    ]) {
      place(bars, nb, bx, y + 0.02, bz, sx, 0.04, sz);
      bars.setColorAt(nb++, edge);
    }
  });
  plates.count = groups.length;
  bars.count = nb;
  commit(plates);
  commit(bars);

  // Words: the GPUs' tags and the servers' copies, one atlas.
  if (plan.dp > 1) {
    serverTags = lay.servers.map((s) => {
      const dps = roles.filter((r) => byId.get(r.gpu)?.server === s.id).map((r) => r.dp);
      return { server: s, text: dps.length ? copiesText(dps) : '' };
    });
  }
  const atlas = textAtlas([...tags.map((t) => t.text), ...serverTags.map((t) => t.text)], { colour: palette.roleText });
  const words = new THREE.InstancedMesh(atlasQuad(tags.length + serverTags.length), atlas.material(), Math.max(1, tags.length + serverTags.length));
  words.instanceMatrix.setUsage(THREE.DynamicDrawUsage);
  words.frustumCulled = false;
  words.userData.part = 'gpus';
  words.count = 0;
  group.add(plates, bars, words);
  tag(group, 'gpus');

  // Tag size: a GPU's tag stands on the package's front face, a server's on the chassis's.
  const tagH = gh * 0.5;
  const serverH = lay.dims.chassisH * 0.78;

  function layWords(detail) {
    let k = 0;
    if (detail) {
      for (const t of tags) {
        const g = byId.get(t.gpu);
        if (!g || !t.text || !atlas.setCell(words, k, t.text)) continue;
        place(words, k++, g.x, g.y - gh * 0.02, g.z + gd / 2 + 0.015, tagH * atlas.aspect * 0.9, tagH, 1);
      }
    }
    for (const t of serverTags) {
      const s = t.server;
      if (!t.text || !atlas.setCell(words, k, t.text)) continue;
      place(words, k++, s.x, s.y, s.z + lay.server.d / 2 + 0.012, serverH * atlas.aspect, serverH, 1);
    }
    words.count = k;
    words.visible = k > 0;
    commit(words);
  }

  const centre = new THREE.Vector3(
    (lay.parts.gpus.min[0] + lay.parts.gpus.max[0]) / 2,
    lay.dims.chassisH,
    (lay.parts.gpus.min[2] + lay.parts.gpus.max[2]) / 2,
  );

  return {
    object: group,
    update(frame) {
      // Up close enough, the GPUs' own tags; from afar only plates and copies.
      let detail = false;
      const cam = frame.camera;
      if (cam?.isPerspectiveCamera) {
        const dist = cam.position.distanceTo(centre) || 1;
        const px = (gw * (window.innerHeight / 2)) / (dist * Math.tan((cam.fov * Math.PI) / 360));
        detail = px >= DETAIL_PX;
      }
      if (detail !== shownKey) {
        shownKey = detail;
        layWords(detail);
      }
      frame.debug.roleTags = debugTags;
      frame.debug.roleTagsShown = detail;
      frame.debug.rolePlates = groups.length;
      return false;
    },
    dispose() {
      atlas.texture.dispose();
      disposeTree(group);
    },
  };
}
