// The 3D stage, composed of the renderer (renderer.js), what stands in the scene: lights,
// floor and parts (scenery.js), the camera rig (camera.js), the one render loop (loop.js), the
// step playback the loop reads (playback.js), picking and label anchors (picking.js) and the
// highlight outline (highlight.js).
//
// Its API, what the UI may call, is in docs/scene.md (the stage's API).
//
// It renders only when something changed or is animating, so an idle projector laptop stays
// cool: `info().frames` stops increasing when nothing moves.

import * as THREE from 'three';
import { canvasSize, createCameraRig } from './camera.js';
import { createFailureStaging } from './failure.js';
import { createHighlight } from './highlight.js';
import { gpuBox, layout } from './layout.js';
import { fitFog } from './floor.js';
import { createLoop } from './loop.js';
import { makePalette } from './palette.js';
import { createPicker } from './picking.js';
import { createPlayback } from './playback.js';
import { createRenderer } from './renderer.js';
import { createScenery } from './scenery.js';
import { planKey } from './plan.js';
import { mountSlowCaption } from './slowcaption.js';

const STAGE_METHODS = [
  'setField', 'fieldPath', 'setView', 'rotate', 'zoom', 'reset', 'flyTo', 'framePart', 'setExploded', 'setSignal', 'setSpin',
  'setReducedMotion', 'setTheme', 'highlight', 'setSafeArea', 'rebuild', 'requestRender', 'dispose',
];

/** The stand-in when WebGL cannot start: the same API, doing nothing. */
function noopStage(error) {
  const nothing = () => {};
  return {
    ...Object.fromEntries(STAGE_METHODS.map((name) => [name, nothing])),
    ok: false,
    error,
    anchors: () => [],
    partRect: () => null,
    slowCaption: () => null,
    pickPart: () => null,
    pickField: () => null,
    fieldInfo: () => ({ on: false }),
    info: () => ({ drawCalls: 0, frames: 0, triangles: 0, view: 0, drawables: 0, programs: 0, playing: false }),
    views: () => [],
    onFrame: () => nothing,
    onUpdate: () => nothing,
  };
}

export function createStage(canvas, { spec, topology, store, draw = true }) {
  let renderer;
  try {
    renderer = createRenderer(canvas);
  } catch (err) {
    return noopStage(String(err?.message || err));
  }

  const state = store.state;
  const scene = new THREE.Scene();
  // How the scene looks now. The camera rig and the loop read it; only the setters below
  // change it.
  const look = {
    palette: makePalette(spec, state.projector ? 'projector' : 'default'),
    layout: null,
    signal: state.signal !== false,
    spin: !!state.spin,
    reduced: !!state.reducedMotion,
    exploded: !!state.exploded,
    portrait: false, // a tall canvas (a phone or tablet held upright): the layout stands up too
  };
  let topo = topology;
  let highlighted = null;
  const overlays = new Set();
  function frameBox(box, { instant = false, direction = [0.15, 0.7, 1], fill = 0.85 } = {}) {
    rig.flyTo(rig.fit(box, direction, fill), instant ? 0 : undefined);
  }
  // A box every view and re-framing frames while it is held (a chapter's close-up), or null.
  let held = null;
  function holdView(box, opts = {}) {
    held = box;
    rig.setViewOverride(box && (({ instant }) => frameBox(box, { ...opts, instant })));
    if (box) frameBox(box, opts);
    else rig.setView(rig.view, { instant: opts.instant });
  }

  const requestRender = () => loop.requestRender();
  const scenery = createScenery(scene, { spec, store, requestRender });
  const rig = createCameraRig({ canvas, spec, look, requestRender });
  // The scale field replaces the live scene while it shows: everything but the lights and
  // the field is hidden, and the parts' labels step aside.
  let sceneryShown = true;
  let sceneFog = null;
  function showScenery(on) {
    sceneryShown = on;
    for (const o of scene.children) if (!o.isLight && o.name !== 'field') o.visible = on;
    // The floor's fog is sized for the live scene; the field is many times larger.
    if (!on && scene.fog) [sceneFog, scene.fog] = [scene.fog, null];
    if (on && sceneFog) [scene.fog, sceneFog] = [sceneFog, null];
  }
  // The scale field (field/scale.js) loads the first time it is asked for: it is not part
  // of the page's first load.
  const noField = { on: false, part: null, set() {}, fly: () => false, info: () => ({ on: false }), pick: () => null };
  let scale = noField;
  let fieldLoading = null;
  const wanted = { gpus: null, path: false };
  function setField(n) {
    if (scale !== noField) {
      scale.set(n);
      return;
    }
    wanted.gpus = n ?? null;
    if (wanted.gpus === null) return;
    fieldLoading ??= import('./field/scale.js')
      .then(({ createScaleField }) => {
        scale = createScaleField({ scene, rig, canvas, store, look, requestRender, showScenery });
        if (wanted.gpus !== null) scale.set(wanted.gpus);
        if (wanted.path) scale.fly();
      })
      .catch((err) => console.warn('the scale field could not be loaded', err));
  }
  const playback = createPlayback(store, requestRender);
  const staging = createFailureStaging(store, { onStart: (ms) => playback.hold(ms), requestRender });
  const loop = createLoop({
    renderer,
    scene,
    camera: rig.camera,
    store,
    look,
    playback,
    staging,
    animateCamera: (now, dt) => {
      const moving = rig.advance(now, dt);
      fitFog(scene.fog, rig.distance);
      return moving;
    },
    parts: () => (scale.part ? [...scenery.parts(), scale.part] : scenery.parts()),
    draw,
  });
  const caption = mountSlowCaption(store);
  const offCaption = loop.onUpdate((frame) => caption.update(frame));
  const outline = createHighlight(scene);
  const picker = createPicker(canvas, rig.camera);

  function build() {
    look.layout = layout(spec, topo, {
      loaders: state.hello?.config?.loader_workers ?? 2,
      prefetch: state.hello?.config?.prefetch ?? 4,
      exploded: look.exploded,
      portrait: look.portrait,
    });
    scenery.build({ layout: look.layout, palette: look.palette, topology: topo });
    if (!sceneryShown) showScenery(false);
    if (highlighted) highlight(highlighted);
    requestRender();
  }

  // A part's id, or `gpu:N` for one GPU and its memory wall (the story's GPU 1 is gpu:0).
  function highlight(id) {
    highlighted = id || null;
    const one = /^gpu:(\d+)$/.exec(highlighted ?? '');
    const bounds = one ? gpuBox(look.layout, Number(one[1])) : highlighted && look.layout.parts[highlighted];
    outline.show(bounds, one ? look.palette.forward : look.palette.text);
    requestRender();
  }

  const unsub = ['event', 'change', 'change:failedGpus'].map((name) => store.on(name, requestRender));
  // A reset can re-plan the run on the same cluster: the parts that draw roles, rings and
  // placements are rebuilt for the new plan. (A new cluster shape comes through rebuild().)
  let plan = planKey(state.hello);
  unsub.push(
    store.on('hello', (msg) => {
      const next = planKey(msg);
      if (next === plan) return;
      plan = next;
      if ((msg?.topology?.gpus?.length ?? 0) === (topo?.gpus?.length ?? 0)) build();
    }),
  );

  function resize() {
    const { w, h } = canvasSize(canvas);
    renderer.setSize(w, h, false);
    if (look.portrait !== h > w * 1.1) {
      look.portrait = !look.portrait;
      build();
    }
    rig.resized();
    requestRender();
  }
  // The canvas changes size with the window (and with full screen).
  const ro = new ResizeObserver(resize);
  ro.observe(canvas);

  build();
  resize();
  rig.setView(0, { instant: true });
  loop.start();

  return {
    ok: true,
    // While the scale field shows, a view (or 0, reset) frames the whole field again.
    setView: (n, opts) => (scale.on ? scale.home(opts?.instant) : rig.setView(n, opts)),
    rotate: rig.rotate,
    zoom: rig.zoom,
    reset: () => (scale.on ? scale.home() : rig.setView(0)),
    flyTo: rig.flyTo,
    framePart: rig.framePart,
    /** Fly to one GPU (0-based) with room round it for its neighbours on the board. */
    frameGpu(i, { instant = false } = {}) {
      const b = gpuBox(look.layout, i);
      if (b) frameBox({ min: [b.min[0] - 3, b.min[1], b.min[2] - 2], max: [b.max[0] + 3, b.max[1] + 1, b.max[2] + 2] }, { instant });
    },
    frameBox,
    holdView,
    layout: () => look.layout,
    // What a story chapter draws in the scene (story/gpu3d.js), each piece named with its
    // screen box for the test hook (describe() -> [{name, box}]).
    addOverlay(obj) {
      overlays.add(obj);
      scene.add(obj);
      requestRender();
    },
    removeOverlay(obj) {
      overlays.delete(obj);
      scene.remove(obj);
      requestRender();
    },
    figure: () => [...overlays].flatMap((o) => o.userData.describe?.() ?? []).map((p) => ({ name: p.name, rect: picker.rect(p.box), box: p.box, ...(p.words ? { words: p.words } : {}) })),
    setExploded(on) {
      if (look.exploded === !!on) return;
      look.exploded = !!on;
      build();
      // The lifted fabric is taller: re-frame the current view so it stays on screen.
      rig.setView(rig.view);
    },
    setSignal(on) {
      look.signal = !!on;
      requestRender();
    },
    setSpin(on) {
      look.spin = !!on;
      requestRender();
    },
    setReducedMotion(on) {
      look.reduced = !!on;
      requestRender();
    },
    setTheme(name) {
      const next = name === 'projector' ? 'projector' : 'default';
      if (next === look.palette.theme) return;
      look.palette = makePalette(spec, next);
      build();
      if (scale.on) scale.set(scale.info().plan.gpus);
    },
    highlight,
    setSafeArea: rig.setSafeArea,
    // The parts' labels step aside for the field and for a close-up.
    anchors: () => picker.anchors(spec, look.layout).map((a) => (scale.on || held ? { ...a, visible: false } : a)),
    partRect: (id) => (!scale.on && look.layout?.parts?.[id] ? picker.rect(look.layout.parts[id]) : null),
    slowCaption: () => caption.state(),
    pickPart: (x, y) => (scale.on ? null : picker.pick(x, y, scenery.objects())),
    setField,
    fieldPath() {
      if (scale === noField) {
        wanted.path = wanted.gpus !== null;
        return wanted.path;
      }
      return scale.fly();
    },
    fieldInfo: () => scale.info(),
    pickField: (x, y) => scale.pick(x, y),
    // The camera moved by hand (an orbit, a zoom), for a presenter's room to follow; null
    // while it stands at a numbered view or the scale field shows.
    cameraPose: () => (rig.manual && !scale.on ? rig.pose() : null),
    setCameraPose: (pose) => rig.setPose(pose),
    rebuild(newTopology) {
      if (newTopology) topo = newTopology;
      build();
      if (scale.on) scale.set(scale.info().plan.gpus);
      else rig.setView(rig.view, { instant: true });
    },
    requestRender,
    views: () => spec.views.map((v) => ({ key: v.key, name: v.name })),
    info: () => ({
      drawCalls: renderer.info.render.calls,
      frames: loop.frames,
      triangles: renderer.info.render.triangles,
      view: rig.view,
      distance: rig.distance,
      flying: rig.flying,
      drawables: scenery.drawables(),
      programs: renderer.info.programs?.length ?? null,
      playing: playback.playing(look.signal),
      field: scale.on,
      portrait: look.portrait,
    }),
    onFrame: loop.onFrame,
    onUpdate: loop.onUpdate,
    dispose() {
      loop.stop();
      for (const u of unsub) u();
      offCaption();
      caption.dispose();
      staging.dispose();
      scale.part?.dispose();
      playback.dispose();
      scenery.dispose();
      ro.disconnect();
      rig.dispose();
      renderer.dispose();
    },
  };
}
