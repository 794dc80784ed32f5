// The camera rig: one perspective camera and the mouse's orbit controls, the numbered views,
// eased flights, rotate / zoom / spin, and the safe area (the part of the canvas the HUD
// panels leave free), which every view is fitted into and centred on.
//
// The stage owns one rig. The render loop calls advance(now, dt) once a tick; it says whether
// the camera is still moving, so the loop keeps drawing only while it does.

import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { frameBox } from './layout.js';
import { ease } from './util.js';

const SPIN_RAD_S = 0.12;
const FLIGHT_S = 1.0;
const NO_MARGIN = { left: 0, right: 0, top: 0, bottom: 0 };

/** The canvas size in CSS px (the window's, before the canvas has been laid out). */
export function canvasSize(canvas) {
  return {
    w: Math.max(1, canvas.clientWidth || window.innerWidth),
    h: Math.max(1, canvas.clientHeight || window.innerHeight),
  };
}

function defaultSafe(w) {
  // The page's panels sit in the corners (left column top and bottom, probe bottom right)
  // under a top bar; the wide scene runs through the free band across the middle.
  return w >= 1100 ? { left: 24, right: 24, top: 120, bottom: 190 } : { left: 0, right: 0, top: 72, bottom: 40 };
}

function toVector(v) {
  return new THREE.Vector3(...(v.toArray ? v.toArray() : v));
}

/**
 * createCameraRig({canvas, spec, look, requestRender})
 *   look: the stage's shared look; the rig reads `layout`, `reduced` and `spin` from it.
 */
export function createCameraRig({ canvas, spec, look, requestRender }) {
  const camera = new THREE.PerspectiveCamera(30, 16 / 9, 0.5, 800);
  const controls = new OrbitControls(camera, canvas);
  controls.enableDamping = false; // damping would keep the loop busy after every drag
  controls.maxPolarAngle = Math.PI * 0.49;
  controls.minDistance = 4;
  controls.maxDistance = 400;

  let safe = { ...NO_MARGIN };
  let customSafe = false;
  let manual = false; // the camera was moved by hand since the last view was chosen
  let flight = null;
  let view = 0;

  /** Where the camera must stand, looking back along `direction`, so `box` just fits the
   * safe area (scaled by `fill`). */
  function fit(box, direction, fill = 1) {
    const dir = new THREE.Vector3(...direction).normalize();
    const centre = new THREE.Vector3(
      (box.min[0] + box.max[0]) / 2,
      (box.min[1] + box.max[1]) / 2,
      (box.min[2] + box.max[2]) / 2,
    );
    const corners = [];
    for (const x of [box.min[0], box.max[0]])
      for (const y of [box.min[1], box.max[1]])
        for (const z of [box.min[2], box.max[2]]) corners.push(new THREE.Vector3(x, y, z));
    const probe = camera.clone();
    // Fit inside the safe area, measured from its centre, which the view offset has made the
    // camera's centre.
    const { w, h } = canvasSize(canvas);
    const cx = (safe.left - safe.right) / w;
    const cy = (safe.bottom - safe.top) / h;
    const limitX = ((w - safe.left - safe.right) / w) * 0.96 * fill;
    const limitY = ((h - safe.top - safe.bottom) / h) * 0.96 * fill;
    const v = new THREE.Vector3();
    // How far past the safe area the box pokes out from a distance (>1 = too close). It falls
    // as the camera backs away, so a bisection finds the distance where the box just fits.
    const overflow = (dist) => {
      probe.position.copy(centre).addScaledVector(dir, dist);
      probe.lookAt(centre);
      probe.updateMatrixWorld();
      probe.updateProjectionMatrix();
      let worst = 0;
      for (const c of corners) {
        v.copy(c).project(probe);
        // A corner behind the camera is as bad as it gets.
        if (v.z > 1 || v.z < -1) return Infinity;
        worst = Math.max(worst, Math.abs(v.x - cx) / limitX, Math.abs(v.y - cy) / limitY);
      }
      return worst;
    };
    let lo = 1;
    let hi = Math.max(600, camera.far * 0.9);
    for (let i = 0; i < 32; i++) {
      const mid = (lo + hi) / 2;
      if (overflow(mid) > 1) lo = mid;
      else hi = mid;
    }
    return { position: centre.clone().addScaledVector(dir, hi), target: centre.clone() };
  }

  function flyTo({ position, target }, seconds = FLIGHT_S) {
    const to = { position: toVector(position), target: toVector(target) };
    if (look.reduced || seconds <= 0) {
      camera.position.copy(to.position);
      controls.target.copy(to.target);
      flight = null;
    } else {
      flight = {
        t0: performance.now(),
        dur: seconds * 1000,
        fromP: camera.position.clone(),
        fromT: controls.target.clone(),
        to,
      };
    }
    camera.lookAt(controls.target);
    requestRender();
  }

  // While the scale field shows (field/scale.js), every view, reset and re-framing frames the
  // field instead of the live scene's parts.
  let viewOverride = null;

  function setView(n, { instant = false } = {}) {
    if (viewOverride) {
      manual = false;
      viewOverride({ instant });
      return;
    }
    view = Math.max(0, Math.min(4, n | 0));
    manual = false;
    const v = spec.views.find((x) => x.key === view) || spec.views[0];
    flyTo(fit(frameBox(look.layout, v.frame), v.direction, v.fill), instant ? 0 : FLIGHT_S);
  }

  function framePart(id, { instant = false } = {}) {
    const part = look.layout.parts[id];
    if (!part) return;
    flyTo(fit(part, [0.1, 0.45, 1], 0.9), instant ? 0 : FLIGHT_S);
  }

  function rotate(dAz, dPolar) {
    const off = camera.position.clone().sub(controls.target);
    const sph = new THREE.Spherical().setFromVector3(off);
    manual = true;
    sph.theta += dAz;
    sph.phi = Math.min(controls.maxPolarAngle, Math.max(0.1, sph.phi + dPolar));
    off.setFromSpherical(sph);
    flight = null;
    camera.position.copy(controls.target).add(off);
    camera.lookAt(controls.target);
    requestRender();
  }

  /** factor > 1 moves the camera closer (the distance is divided by it). */
  function zoom(factor) {
    const off = camera.position.clone().sub(controls.target);
    manual = true;
    const len = Math.min(controls.maxDistance, Math.max(controls.minDistance, off.length() / factor));
    off.setLength(len);
    flight = null;
    camera.position.copy(controls.target).add(off);
    requestRender();
  }

  const baseRange = { min: controls.minDistance, max: controls.maxDistance, near: camera.near, far: camera.far };
  /** The distances the camera may take and see: the scale field (field/scale.js) is far
   * bigger than the live scene. null puts back the scene's own. */
  function setRange(range) {
    const r = range ? { ...baseRange, ...range } : baseRange;
    controls.minDistance = r.min;
    controls.maxDistance = r.max;
    camera.near = r.near;
    camera.far = r.far;
    camera.updateProjectionMatrix();
  }

  function applyViewOffset() {
    const { w, h } = canvasSize(canvas);
    // Move the camera's centre to the middle of the safe area (a larger virtual frame of
    // which the canvas is one corner), so every view and orbit centres there.
    const sx = (safe.left - safe.right) / 2;
    const sy = (safe.top - safe.bottom) / 2;
    const fullW = w + 2 * Math.abs(sx);
    const fullH = h + 2 * Math.abs(sy);
    camera.setViewOffset(fullW, fullH, sx > 0 ? 0 : 2 * -sx, sy > 0 ? 0 : 2 * -sy, w, h);
    camera.aspect = fullW / fullH;
    camera.updateProjectionMatrix();
  }

  /** After the canvas changed size: a new window shape changes what fits, so re-frame the
   * view unless someone has moved the camera by hand since choosing it. */
  function resized() {
    if (!customSafe) safe = defaultSafe(canvasSize(canvas).w);
    applyViewOffset();
    if (look.layout && !manual && !flight) setView(view, { instant: true });
  }

  function setSafeArea(area) {
    customSafe = !!area;
    safe = area ? { ...NO_MARGIN, ...area } : defaultSafe(canvasSize(canvas).w);
    applyViewOffset();
    setView(view, { instant: true });
  }

  /** Move the camera for this tick (a flight, the slow spin); true while it is moving. */
  function advance(now, dt) {
    let moving = false;
    if (flight) {
      const k = Math.min(1, (now - flight.t0) / flight.dur);
      const e = ease(k);
      camera.position.lerpVectors(flight.fromP, flight.to.position, e);
      controls.target.lerpVectors(flight.fromT, flight.to.target, e);
      camera.lookAt(controls.target);
      if (k >= 1) flight = null;
      moving = true;
    }
    if (look.spin && !look.reduced) {
      const off = camera.position.clone().sub(controls.target);
      off.applyAxisAngle(THREE.Object3D.DEFAULT_UP, SPIN_RAD_S * dt);
      camera.position.copy(controls.target).add(off);
      camera.lookAt(controls.target);
      moving = true;
    }
    return moving;
  }

  controls.addEventListener('start', () => {
    manual = true;
  });
  controls.addEventListener('change', () => {
    flight = null;
    requestRender();
  });

  return {
    camera,
    get view() {
      return view;
    },
    /** Whether an eased flight is under way (it ends on a frame drawn at its goal). */
    get flying() {
      return flight !== null;
    },
    /** Whether the camera was moved by hand since the last view was chosen. */
    get manual() {
      return manual;
    },
    /** Where the camera stands and looks: {position: [x, y, z], target: [x, y, z]}. */
    pose: () => ({ position: camera.position.toArray(), target: controls.target.toArray() }),
    /** Move to a pose someone else chose by hand (a presenter's orbit): it counts as by hand. */
    setPose(pose, seconds = 0.35) {
      flyTo(pose, seconds);
      manual = true;
    },
    /** Distance from the camera to the point it orbits (smaller is closer). */
    get distance() {
      return camera.position.distanceTo(controls.target);
    },
    setView,
    framePart,
    flyTo,
    rotate,
    zoom,
    setRange,
    /** fit(box, direction, fill) -> {position, target}: where the camera stands, looking
     * back along `direction`, so `box` ({min, max}) just fits the safe area. */
    fit,
    setViewOverride: (fn) => {
      viewOverride = fn || null;
    },
    resized,
    setSafeArea,
    advance,
    dispose: () => controls.dispose(),
  };
}
