// The 3D stage: renderer, camera, one render loop, and the seven parts of the scene.
//
// API (the UI calls this; extended compatibly, additions marked +):
//   const stage = createStage(canvas, { spec, topology, store })
//   stage.setView(n 0..4, {instant}) rotate(dAz, dPolar) zoom(factor) reset()
//   stage.flyTo({position, target}, seconds) setExploded(bool) setSignal(bool) setSpin(bool)
//   stage.setReducedMotion(bool) setTheme('default'|'projector') highlight(partId|null)
//   stage.anchors() -> [{id, number, x, y, visible}]   (CSS px, for the current camera)
//   stage.pickPart(clientX, clientY) -> partId|null
//   stage.rebuild(topology) requestRender() onFrame(fn) -> unsubscribe   dispose()
//   stage.info() -> {drawCalls, frames, triangles, view, +drawables (meshes, lines and
//       sprites in the scene: the ceiling on draw calls whatever is lit)}
//   + stage.debug() -> {phase, phaseT, activeGpus, pulses, waiting, failed, seen}
//       `seen` counts what has been shown since start: {forward, backward, allreduce, data,
//       maxPulses, steps} so a test can ask "did a glow and pulses happen during a step".
//   + stage.framePart(partId, {instant}) flies to frame one part (the tour uses it when a
//       stop names no view)
//   + stage.views() -> [{key, name}]
//   + stage.setSafeArea({left, right, top, bottom} | null) CSS px the HUD covers at each
//       edge; views centre and fit in the rest. null = the built-in guess for app.css.
//   + stage.ok: false when WebGL could not start (then every method is a harmless no-op and
//       stage.error says why); the UI shows its no-WebGL notice.
//
// It renders only when something changed or is animating, so an idle projector laptop stays
// cool: `info().frames` stops increasing when nothing moves.

import * as THREE from 'three';
import { OrbitControls } from 'three/addons/controls/OrbitControls.js';
import { frameBox, layout } from './layout.js';
import { makePalette } from './palette.js';
import { Timeline } from './timeline.js';
import { ease } from './util.js';
import * as checkpoints from './parts/checkpoints.js';
import * as datalake from './parts/datalake.js';
import * as fabric from './parts/fabric.js';
import * as gpus from './parts/gpus.js';
import * as loaders from './parts/loaders.js';
import * as model from './parts/model.js';
import * as placement from './parts/placement.js';
import * as ring from './parts/ring.js';

const PART_MODULES = { datalake, loaders, gpus, fabric, ring, model, checkpoints, placement };
const SPIN_RAD_S = 0.12;
const FLIGHT_S = 1.0;

function noopStage(error) {
  const nothing = () => {};
  return {
    ok: false,
    error,
    setView: nothing,
    rotate: nothing,
    zoom: nothing,
    reset: nothing,
    flyTo: nothing,
    framePart: nothing,
    setExploded: nothing,
    setSignal: nothing,
    setSpin: nothing,
    setReducedMotion: nothing,
    setTheme: nothing,
    highlight: nothing,
    anchors: () => [],
    pickPart: () => null,
    rebuild: nothing,
    requestRender: nothing,
    info: () => ({ drawCalls: 0, frames: 0, triangles: 0, view: 0 }),
    debug: () => ({ phase: null, activeGpus: 0, pulses: 0, seen: {} }),
    views: () => [],
    onFrame: () => nothing,
    dispose: nothing,
  };
}

/** True when WebGL is drawn by the CPU (SwiftShader, llvmpipe): a laptop with no usable GPU,
 * or a headless test browser. There, multisampling costs more than it gives. */
function softwareWebGL() {
  try {
    const probe = document.createElement('canvas').getContext('webgl2');
    if (!probe) return false;
    const ext = probe.getExtension('WEBGL_debug_renderer_info');
    const name = String(probe.getParameter(ext ? ext.UNMASKED_RENDERER_WEBGL : probe.RENDERER));
    probe.getExtension('WEBGL_lose_context')?.loseContext();
    return /swiftshader|llvmpipe|software/i.test(name);
  } catch {
    return false;
  }
}

export function createStage(canvas, { spec, topology, store }) {
  let renderer;
  const software = softwareWebGL();
  try {
    renderer = new THREE.WebGLRenderer({
      canvas,
      antialias: !software,
      powerPreference: 'high-performance',
    });
  } catch (err) {
    return noopStage(String(err?.message || err));
  }
  renderer.setPixelRatio(software ? 1 : Math.min(window.devicePixelRatio || 1, 2));
  renderer.outputColorSpace = THREE.SRGBColorSpace;

  const state = store.state;
  const scene = new THREE.Scene();
  const camera = new THREE.PerspectiveCamera(30, 16 / 9, 0.5, 800);
  const controls = new OrbitControls(camera, canvas);
  controls.enableDamping = false; // damping would keep the loop busy after every drag
  controls.maxPolarAngle = Math.PI * 0.49;
  controls.minDistance = 4;
  controls.maxDistance = 400;

  // One key light and a soft ambient: flat, calm shading; activity shows as emissive glow.
  const hemi = new THREE.HemisphereLight(0xd6e0ff, 0x1a2233, 1.9);
  const key = new THREE.DirectionalLight(0xffffff, 2.4);
  key.position.set(-20, 40, 30);
  scene.add(hemi, key);

  let theme = state.projector ? 'projector' : 'default';
  let palette = makePalette(spec, theme);
  let topo = topology;
  let lay = null;
  let built = {};
  let floor = null;
  let highlightBox = null;
  let highlighted = null;
  let exploded = !!state.exploded;
  let signal = state.signal !== false;
  let spin = !!state.spin;
  let reduced = !!state.reducedMotion;
  let view = 0;
  let frames = 0;
  let dirty = true;
  let flight = null;
  let lastT = performance.now();
  let partsBusy = false;
  let safe = { left: 0, right: 0, top: 0, bottom: 0 };
  let customSafe = false;
  let manual = false; // the camera was moved by hand since the last view was chosen
  let lastPhase = null;
  let disposed = false;
  const frameFns = new Set();
  const timeline = new Timeline();
  const seen = { forward: 0, backward: 0, allreduce: 0, data: 0, maxPulses: 0, steps: 0, maxDrawCalls: 0 };
  const unsub = [];
  let lastDebug = { phase: null, phaseT: 0, activeGpus: 0, pulses: 0, waiting: 0, failed: 0 };

  const layoutOpts = () => ({
    loaders: state.hello?.config?.loader_workers ?? 2,
    prefetch: state.hello?.config?.prefetch ?? 4,
    exploded,
  });

  function buildFloor() {
    if (floor) {
      scene.remove(floor);
      floor.traverse((o) => {
        o.geometry?.dispose();
        o.material?.dispose();
      });
    }
    // A wide floor with a faint grid: it gives depth without drawing the eye, and its edges
    // stay out of every view.
    const b = lay.all;
    const span = Math.max(b.max[0] - b.min[0], b.max[2] - b.min[2]) * 3 + 40;
    floor = new THREE.Group();
    const plane = new THREE.Mesh(
      new THREE.PlaneGeometry(span, span),
      new THREE.MeshLambertMaterial({ color: palette.floor }),
    );
    plane.rotation.x = -Math.PI / 2;
    const cells = Math.round(span / 2);
    const grid = new THREE.GridHelper(span, cells, palette.grid, palette.grid);
    grid.position.y = 0.005;
    grid.material.transparent = true;
    grid.material.opacity = 0.55;
    floor.add(plane, grid);
    floor.position.set((b.min[0] + b.max[0]) / 2, -0.01, (b.min[2] + b.max[2]) / 2);
    scene.add(floor);
    // Fade the far floor into the background instead of showing an edge.
    scene.fog = new THREE.Fog(palette.background, span * 0.35, span * 0.75);
  }

  function build() {
    for (const p of Object.values(built)) p.dispose();
    built = {};
    lay = layout(spec, topo, layoutOpts());
    scene.background = new THREE.Color(palette.background);
    buildFloor();
    const ctx = { scene, layout: lay, palette, topology: topo, store, spec, requestRender };
    for (const [id, mod] of Object.entries(PART_MODULES)) {
      const partSpec = spec.parts.find((p) => p.id === id) || { id };
      built[id] = mod.build(ctx, partSpec);
    }
    if (highlighted) highlight(highlighted);
    dirty = true;
  }

  // --- camera -----------------------------------------------------------------------------

  function fitCamera(box, direction, fill = 1) {
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
    // Fit inside the safe area (the part of the canvas the HUD panels leave free), measured
    // from its centre, which the view offset has made the camera's centre.
    const { w, h } = size();
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
    let hi = 600;
    for (let i = 0; i < 32; i++) {
      const mid = (lo + hi) / 2;
      if (overflow(mid) > 1) lo = mid;
      else hi = mid;
    }
    const dist = hi;
    const target = centre.clone();
    return { position: centre.clone().addScaledVector(dir, dist), target };
  }

  function viewCamera(n) {
    const v = spec.views.find((x) => x.key === n) || spec.views[0];
    return fitCamera(frameBox(lay, v.frame), v.direction, v.fill);
  }

  function flyTo({ position, target }, seconds = FLIGHT_S) {
    const to = {
      position: new THREE.Vector3(...(position.toArray ? position.toArray() : position)),
      target: new THREE.Vector3(...(target.toArray ? target.toArray() : target)),
    };
    if (reduced || seconds <= 0) {
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

  function setView(n, { instant = false } = {}) {
    view = Math.max(0, Math.min(4, n | 0));
    manual = false;
    flyTo(viewCamera(view), instant ? 0 : FLIGHT_S);
  }

  function framePart(id, { instant = false } = {}) {
    const part = lay.parts[id];
    if (!part) return;
    flyTo(fitCamera(part, [0.1, 0.45, 1], 0.9), instant ? 0 : FLIGHT_S);
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

  function zoom(factor) {
    const off = camera.position.clone().sub(controls.target);
    manual = true;
    const len = Math.min(controls.maxDistance, Math.max(controls.minDistance, off.length() / factor));
    off.setLength(len);
    flight = null;
    camera.position.copy(controls.target).add(off);
    requestRender();
  }

  // --- sizing and the loop -----------------------------------------------------------------

  function size() {
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

  function applyViewOffset() {
    const { w, h } = size();
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

  function resize() {
    const { w, h } = size();
    renderer.setSize(w, h, false);
    if (!customSafe) safe = defaultSafe(w);
    applyViewOffset();
    // A new window shape changes what fits: re-frame the view unless someone has moved the
    // camera by hand since choosing it.
    if (lay && !manual && !flight) setView(view, { instant: true });
    requestRender();
  }

  function requestRender() {
    dirty = true;
  }

  function loop() {
    if (disposed) return;
    const now = performance.now();
    const dt = Math.min(0.1, (now - lastT) / 1000);
    lastT = now;
    let animating = false;

    if (flight) {
      const k = Math.min(1, (now - flight.t0) / flight.dur);
      const e = ease(k);
      camera.position.lerpVectors(flight.fromP, flight.to.position, e);
      controls.target.lerpVectors(flight.fromT, flight.to.target, e);
      camera.lookAt(controls.target);
      if (k >= 1) flight = null;
      animating = true;
    }
    if (spin && !reduced) {
      const off = camera.position.clone().sub(controls.target);
      off.applyAxisAngle(THREE.Object3D.DEFAULT_UP, SPIN_RAD_S * dt);
      camera.position.copy(controls.target).add(off);
      camera.lookAt(controls.target);
      animating = true;
    }

    const tl = signal ? timeline.at(now) : { phase: null, phaseT: 0, stepT: 1, active: false };
    const frame = {
      run: state,
      step: timeline.msg || state.step,
      phase: tl.phase,
      phaseT: tl.phaseT,
      stepT: tl.stepT,
      time: now / 1000,
      signal,
      reduced,
      exploded,
      palette,
      layout: lay,
      debug: { activeGpus: 0, pulses: 0, waiting: 0, failed: 0, ringLit: false },
    };
    // Parts are only asked to update while something may have changed; idle frames cost
    // nothing (no matrix uploads, no render).
    const updating = tl.active || dirty || partsBusy || tl.phase !== lastPhase;
    if (updating) {
      partsBusy = false;
      for (const p of Object.values(built)) if (p.update(frame, dt)) partsBusy = true;
      if (partsBusy) animating = true;
      // One more pass after the step animation ends so parts settle to their idle look.
      if (!tl.active && lastPhase !== null) dirty = true;
    }
    lastPhase = tl.phase;
    if (tl.active) animating = true;
    if (tl.phase) {
      if (frame.debug.activeGpus > 0 && (tl.phase === 'forward' || tl.phase === 'backward')) seen[tl.phase] += 1;
      if (tl.phase === 'allreduce' && (frame.debug.pulses > 0 || frame.debug.ringLit)) seen.allreduce += 1;
      if (tl.phase === 'data') seen.data += 1;
      seen.maxPulses = Math.max(seen.maxPulses, frame.debug.pulses);
    }
    // Idle frames skip the parts, so their counters are only fresh after an update.
    if (updating) lastDebug = { phase: tl.phase, phaseT: tl.phaseT, ...frame.debug };

    if (!animating && !dirty) return;
    dirty = false;
    renderer.render(scene, camera);
    frames += 1;
    seen.maxDrawCalls = Math.max(seen.maxDrawCalls, renderer.info.render.calls);
    for (const fn of frameFns) {
      try {
        fn();
      } catch (err) {
        console.warn('stage onFrame listener failed', err);
      }
    }
  }

  // --- store wiring --------------------------------------------------------------------------

  unsub.push(
    store.on('step', (msg) => {
      seen.steps += 1;
      timeline.onStep(msg, performance.now(), state.status?.speed ?? 'lesson');
      requestRender();
    }),
    store.on('event', () => requestRender()),
    store.on('snapshot', () => {
      timeline.clear();
      requestRender();
    }),
    store.on('change', () => requestRender()),
    store.on('change:failedGpus', () => requestRender()),
  );

  /** Objects that could each cost a draw call: the ceiling on draw calls, whatever is lit. */
  function drawables() {
    let n = 0;
    scene.traverse((o) => {
      if (o.isMesh || o.isLine || o.isSprite || o.isPoints) n += 1;
    });
    return n;
  }

  function highlight(id) {
    highlighted = id || null;
    if (highlightBox) {
      scene.remove(highlightBox);
      highlightBox.geometry.dispose();
      highlightBox.material.dispose();
      highlightBox = null;
    }
    const b = highlighted && lay.parts[highlighted];
    if (b) {
      const b3 = new THREE.Box3(new THREE.Vector3(...b.min), new THREE.Vector3(...b.max));
      b3.expandByScalar(0.35);
      highlightBox = new THREE.Box3Helper(b3, new THREE.Color(palette.text));
      highlightBox.material.transparent = true;
      highlightBox.material.opacity = 0.55;
      scene.add(highlightBox);
    }
    requestRender();
  }

  function anchors() {
    const w = canvas.clientWidth;
    const h = canvas.clientHeight;
    const rect = canvas.getBoundingClientRect();
    const v = new THREE.Vector3();
    camera.updateMatrixWorld();
    return spec.parts.map((p) => {
      const a = lay.anchors[p.id];
      v.set(a[0], a[1], a[2]).project(camera);
      const visible = v.z < 1 && Math.abs(v.x) <= 1 && Math.abs(v.y) <= 1;
      return {
        id: p.id,
        number: p.number,
        x: rect.left + ((v.x + 1) / 2) * w,
        y: rect.top + ((1 - v.y) / 2) * h,
        visible,
      };
    });
  }

  const raycaster = new THREE.Raycaster();
  function pickPart(clientX, clientY) {
    const rect = canvas.getBoundingClientRect();
    const ndc = new THREE.Vector2(
      ((clientX - rect.left) / rect.width) * 2 - 1,
      -((clientY - rect.top) / rect.height) * 2 + 1,
    );
    raycaster.setFromCamera(ndc, camera);
    const targets = Object.values(built)
      .map((p) => p.object)
      .filter(Boolean);
    for (const hit of raycaster.intersectObjects(targets, true)) {
      let o = hit.object;
      while (o && !o.userData.part) o = o.parent;
      if (o?.userData.part && o.userData.part !== 'placement') return o.userData.part;
    }
    return null;
  }

  function rebuild(newTopology) {
    if (newTopology) topo = newTopology;
    build();
    setView(view, { instant: true });
  }

  controls.addEventListener('start', () => {
    manual = true;
  });
  controls.addEventListener('change', () => {
    flight = null;
    requestRender();
  });
  // Re-lay out when the loader settings arrive, in case the first build guessed them.
  const ro = new ResizeObserver(resize);
  ro.observe(canvas);

  build();
  resize();
  setView(0, { instant: true });
  renderer.setAnimationLoop(loop);
  // Tests reach the debug counters through the canvas they handed us, not a global.
  Object.defineProperty(canvas, 'stageDebug', {
    value: () => ({
      ...lastDebug,
      playing: signal && timeline.playing,
      seen: { ...seen },
      frames,
      drawCalls: renderer.info.render.calls,
      drawables: drawables(),
    }),
    configurable: true,
  });

  return {
    ok: true,
    setView,
    rotate,
    zoom,
    reset: () => setView(0),
    flyTo,
    framePart,
    setExploded(on) {
      if (exploded === !!on) return;
      exploded = !!on;
      build();
      // The lifted fabric is taller: re-frame the current view so it stays on screen.
      setView(view);
    },
    setSignal(on) {
      signal = !!on;
      requestRender();
    },
    setSpin(on) {
      spin = !!on;
      requestRender();
    },
    setReducedMotion(on) {
      reduced = !!on;
      requestRender();
    },
    setTheme(name) {
      const next = name === 'projector' ? 'projector' : 'default';
      if (next === theme) return;
      theme = next;
      palette = makePalette(spec, theme);
      build();
    },
    highlight,
    setSafeArea(area) {
      customSafe = !!area;
      safe = area ? { left: 0, right: 0, top: 0, bottom: 0, ...area } : defaultSafe(size().w);
      applyViewOffset();
      setView(view, { instant: true });
    },
    anchors,
    pickPart,
    rebuild,
    requestRender,
    views: () => spec.views.map((v) => ({ key: v.key, name: v.name })),
    info: () => ({
      drawCalls: renderer.info.render.calls,
      frames,
      triangles: renderer.info.render.triangles,
      view,
      drawables: drawables(),
      programs: renderer.info.programs?.length ?? null,
    }),
    debug: () => ({ ...lastDebug, playing: signal && timeline.playing, seen: { ...seen } }),
    onFrame(fn) {
      frameFns.add(fn);
      return () => frameFns.delete(fn);
    },
    dispose() {
      disposed = true;
      renderer.setAnimationLoop(null);
      for (const u of unsub) u();
      for (const p of Object.values(built)) p.dispose();
      ro.disconnect();
      controls.dispose();
      renderer.dispose();
    },
  };
}
