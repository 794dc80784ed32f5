// The scale field on the stage: switching between the live scene and the field of N GPUs, the
// camera path from one live GPU out to the whole field and back, and what tests and the page's
// note read about it (info()).
//
// createScaleField({scene, rig, canvas, store, look, requestRender, showScenery}) ->
//   set(n | null)        show a field of n GPUs (8 ... 131,072), or the live scene again
//   fly()                play the camera path (out to the whole field, a pause, back); again
//                        to stop it. With reduced motion it cuts from stop to stop instead.
//   part                 {update(frame, dt), dispose()}: the loop updates it like a scene part
//   info()               {on, plan, lod, mirror, path, live: [{gpu, x, y, visible}], beacon}
//   pick(x, y)           what is under a CSS px point: a live GPU, a mirroring rack, or null

import * as THREE from 'three';
import { buildField, poseAt } from './field.js';
import { fieldPlan } from './plan.js';

const LEG_S = 1.4;
const HOLD_S = 1.6;

export function createScaleField({ scene, rig, canvas, store, look, requestRender, showScenery }) {
  let field = null;
  let plan = null;
  let path = null; // {t0, legs, reduced}
  let pathState = { playing: false, t: 0, stop: null, leg: 'idle' };
  let pending = false; // a path was asked for before the field was built
  // The path left the camera somewhere of its own (stopped midway, or back on the GPU): the
  // page re-framing itself (a resize, the panels moving) leaves it there. home() frames the
  // whole field again.
  let placed = false;
  const raycaster = new THREE.Raycaster();
  const ndc = new THREE.Vector2();
  const v = new THREE.Vector3();

  function topology() {
    return store.state.hello?.topology ?? null;
  }

  function build(n) {
    const topo = topology();
    const live = topo?.gpus?.length ?? 0;
    const perServer = topo?.servers?.[0]?.gpus?.length ?? 8;
    field?.dispose();
    plan = fieldPlan(n, { perServer, live });
    field = buildField(scene, { plan, palette: look.palette, topology: topo });
    // Wide enough for the whole field (fit() searches up to the far plane).
    const span = Math.max(field.layout.width, field.layout.depth, field.layout.top);
    rig.setRange({ min: 0.8, max: span * 6 + 100, near: 0.1, far: span * 20 + 1000 });
    fitStops();
  }

  /** How much of the stage's width the field may take: the band between the panels on the
   * left and the scale panel on the right (the field is wider than it is tall). */
  function freeShare() {
    const w = canvas.clientWidth || window.innerWidth;
    const left = document.querySelector('.time-panel')?.getBoundingClientRect();
    const right = document.getElementById('field-panel')?.getBoundingClientRect();
    if (!left || !right || right.left <= 0 || left.right >= right.left || w < 1100) return 1;
    const free = right.left - left.right - 24;
    return Math.min(1, Math.max(0.35, free / (w - 48)));
  }

  /** The pod and field stops just fit the part of the canvas the page leaves free. */
  function fitStops() {
    const share = freeShare();
    for (const st of field.stops) {
      if (!st.box) continue;
      const pose = rig.fit(st.box, st.dir.toArray(), share);
      st.target = pose.target;
      st.distance = pose.position.distanceTo(pose.target);
    }
  }

  function home(instant = false) {
    if (!field) return;
    placed = false;
    path = null;
    pathState = { ...pathState, playing: false, leg: 'idle' };
    fitStops();
    overview(instant);
  }

  function overview(instant) {
    const last = field.stops[field.stops.length - 1];
    const pose = poseAt(field.stops, 1);
    rig.flyTo({ position: pose.position, target: last.target }, instant ? 0 : 1.2);
  }

  function set(n) {
    path = null;
    placed = false;
    pathState = { playing: false, t: 0, stop: null, leg: 'idle' };
    if (n === null || n === undefined) {
      if (!field) return;
      field.dispose();
      field = null;
      plan = null;
      rig.setViewOverride(null);
      rig.setRange(null);
      showScenery(true);
      rig.setView(rig.view, { instant: true });
      requestRender();
      return;
    }
    showScenery(false);
    build(n);
    rig.setViewOverride(({ instant }) => {
      if (!field || path || placed) return;
      fitStops();
      overview(instant);
    });
    overview(true);
    requestRender();
    if (pending) {
      pending = false;
      fly();
    }
  }

  function fly() {
    if (!field) {
      pending = true;
      return false;
    }
    if (path) {
      // A second press stops the path where it is.
      path = null;
      placed = true;
      pathState = { ...pathState, playing: false, leg: 'idle' };
      requestRender();
      return false;
    }
    path = { t0: performance.now(), legs: field.stops.length - 1, reduced: look.reduced };
    // The path starts on one live GPU, close up.
    rig.flyTo(poseAt(field.stops, 0), 0);
    pathState = { playing: true, t: 0, stop: field.stops[0].name, leg: 'out' };
    requestRender();
    return true;
  }

  /** Path position (0 = one GPU, 1 = the whole field) at `now`, or null when it is over. */
  function pathAt(now) {
    const out = path.legs * LEG_S;
    const s = (now - path.t0) / 1000;
    let t;
    let leg;
    if (s < out) [t, leg] = [s / out, 'out'];
    else if (s < out + HOLD_S) [t, leg] = [1, 'hold'];
    else if (s < 2 * out + HOLD_S) [t, leg] = [1 - (s - out - HOLD_S) / out, 'back'];
    else return null;
    // Reduced motion: no gliding, a cut to each stop, held for a leg's time.
    if (path.reduced) t = Math.round(t * path.legs) / path.legs;
    return { t, leg };
  }

  const part = {
    update(frame) {
      if (!field) return false;
      let busy = false;
      if (path) {
        const at = pathAt(performance.now());
        if (!at) {
          path = null;
          placed = true;
          const pose = poseAt(field.stops, 0);
          rig.flyTo(pose, 0);
          pathState = { playing: false, t: 0, stop: field.stops[0].name, leg: 'done' };
        } else {
          const pose = poseAt(field.stops, at.t);
          rig.flyTo(pose, 0);
          pathState = { playing: true, t: at.t, stop: field.stops[pose.stop].name, leg: at.leg };
          busy = true;
        }
      }
      // false, or the step whose tenfold the field's shade shows (the story's climb).
      frame.tone = store?.state?.fieldTone || false;
      field.update(frame);
      return busy;
    },
    dispose() {
      field?.dispose();
      field = null;
    },
  };

  /** A world point in CSS px on the canvas (page coordinates), and whether it is in view. */
  function toScreen(p) {
    // The camera may have moved since the last frame was drawn.
    rig.camera.updateMatrixWorld();
    v.copy(p).project(rig.camera);
    const r = canvas.getBoundingClientRect();
    const x = r.left + ((v.x + 1) / 2) * r.width;
    const y = r.top + ((1 - v.y) / 2) * r.height;
    const visible = v.z > -1 && v.z < 1 && x >= r.left && x <= r.right && y >= r.top && y <= r.bottom;
    return { x: Math.round(x), y: Math.round(y), visible };
  }

  return {
    set,
    fly,
    home,
    part,
    get on() {
      return Boolean(field);
    },
    info() {
      if (!field) return { on: false, path: { ...pathState } };
      return {
        on: true,
        plan: { ...plan },
        lod: field.lod,
        mirror: field.mirror,
        decade: field.decade,
        stops: field.stops.map((s) => s.name),
        path: { ...pathState },
        live: field.liveCells.map((c) => ({ gpu: c.gpu, ...toScreen(c.pos) })),
        beacon: toScreen(field.beamTop),
        tiers: field.tierAnchors.map((a) => ({ tier: a.tier, count: a.count, ...toScreen(a.pos) })),
        liveCentre: toScreen(field.liveCentre),
      };
    },
    pick(clientX, clientY) {
      if (!field) return null;
      const r = canvas.getBoundingClientRect();
      ndc.set(((clientX - r.left) / r.width) * 2 - 1, -((clientY - r.top) / r.height) * 2 + 1);
      rig.camera.updateMatrixWorld();
      raycaster.setFromCamera(ndc, rig.camera);
      return field.pick(raycaster);
    },
  };
}
