// Page entry point: wires the store, the socket, the HUD and panels, the 3D stage, the
// keys, the tour and the labs together. The numbers come up first (they need only the
// socket); the 3D stage follows once the scene data and the cluster's shape have arrived,
// and only if this browser can draw WebGL at all.

import { store } from './store.js';
import { connect } from './net/socket.js';
import { createActions } from './ui/actions.js';
import { mountAnnouncer } from './ui/announce.js';
import { mountAttach } from './ui/attach.js';
import { mountCards } from './ui/cards.js';
import { mountChart } from './ui/chart.js';
import { mountHelp, mountHowBig } from './ui/help.js';
import { mountFaults } from './ui/faults.js';
import { mountHud } from './ui/hud.js';
import { keepBelowTopBar, keepClear } from './ui/clear.js';
import { mountKeys } from './ui/keys.js';
import { mountLabels } from './ui/labels.js';
import { rememberProbe } from './ui/live.js';
import { createOverlays } from './ui/overlays.js';
import { mountProbe } from './ui/probe.js';
import { mountRewind } from './ui/rewind.js';
import { mountDrawer, mountProjector, watchCompact } from './ui/projector.js';
import { mountOwnRun, mountSettings } from './ui/settings.js';
import { mountToolbar } from './ui/toolbar.js';
import { mountTour } from './ui/tour.js';
import { installTestHook } from './testhook.js';
import { lazyStory } from './story/lazy.js';
import { mountPresenter } from './presenter/index.js';
import { mountStepWords } from './ui/describe.js';
import { mountScaleField } from './scene/field/panel.js';
import { mountLanguagePicker, startLanguage } from './i18n/lang.js';
import { say } from './i18n/content.js';

const SCENE_NAME = 'training-run';
// A phone's width: the scene gets a band of its own and the controls go behind one menu
// (the same breakpoint as static/css/app.css).
const PHONE = '(max-width: 699px)';

let stage = null;
let labs = null;
const getStage = () => stage;

/** Ask for a WebGL context on a throwaway canvas before three.js is even loaded. */
function webglAvailable() {
  try {
    const c = document.createElement('canvas');
    return Boolean(c.getContext('webgl2') || c.getContext('webgl'));
  } catch {
    return false;
  }
}

async function loadSpec() {
  try {
    const res = await fetch(`/api/scenes/${SCENE_NAME}`);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    return await res.json();
  } catch (err) {
    console.warn('scene data could not be loaded; labels and tour are unavailable', err);
    return null;
  }
}

function firstHello() {
  if (store.state.hello) return Promise.resolve(store.state.hello);
  return new Promise((resolve) => {
    const off = store.on('hello', (msg) => {
      off();
      resolve(msg);
    });
  });
}

function topologyKey(t) {
  return t ? `${t.gpus?.length}/${t.servers?.length}/${t.leaves?.length}/${t.spines?.length}` : '';
}

const TOKEN_KEY = 'trainingRun.presenterToken';
const PAGE_KEY = 'trainingRun.pageKey';

/** The presenter token from `?token=` in the address, taken out of the address bar at once
 * so that copying the link never shares it. This tab keeps it (sessionStorage) so a reload
 * stays in control; other tabs and other people do not get it. */
function takeToken() {
  const url = new URL(window.location.href);
  const token = url.searchParams.get('token');
  if (token === null) {
    try {
      return sessionStorage.getItem(TOKEN_KEY);
    } catch {
      return null; // storage disabled: a reload is view-only, nothing worse
    }
  }
  url.searchParams.delete('token');
  history.replaceState(history.state, '', `${url.pathname}${url.search}${url.hash}`);
  try {
    sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // storage disabled: this page still has the token for as long as it is open
  }
  return token || null;
}

/** This tab's own random key: a run it starts of its own is controlled by this key, kept for
 * the tab's life (sessionStorage), so a reload or a reconnect still controls that run. */
function pageKey() {
  let key = null;
  try {
    key = sessionStorage.getItem(PAGE_KEY);
  } catch {
    // storage disabled: a key for as long as the page is open
  }
  if (!key || !/^[A-Za-z0-9_-]{8,64}$/.test(key)) {
    const bytes = crypto.getRandomValues(new Uint8Array(12));
    key = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
    try {
      sessionStorage.setItem(PAGE_KEY, key);
    } catch {
      // as above
    }
  }
  return key;
}

function main() {
  const token = takeToken();
  const key = pageKey();
  const socket = connect(store, { token, key });
  const send = (msg) => socket.send(msg);

  const overlays = createOverlays(store);
  rememberProbe(store);
  // Seven labels pile up on a phone's narrow scene: they start off there (L brings them back).
  if (window.matchMedia?.(PHONE).matches) store.set('labels', false);
  mountHud(store);
  watchCompact(store);
  mountDrawer(store, document.querySelector('.time-panel'), { label: 'One step, simulated' });
  keepClear('.time-panel', '.chart-panel');
  keepBelowTopBar();
  mountAttach(store); // an attached real job: waiting box, "measured on your cluster"
  mountProbe(store);
  mountAnnouncer(store);
  mountRewind(store); // drag back through the recorded run while the live one goes on
  mountChart(store, document.getElementById('loss-chart'));
  const cards = mountCards(store, { getStage: () => stage });
  const labels = mountLabels(store, {
    container: document.getElementById('labels'),
    onOpen: (id, pin) => cards.open(id, pin),
    onHover: (id) => {
      cards.hover(id);
      if (!store.state.tour.active) stage?.highlight(id);
    },
  });
  const panels = { card: cards, help: null, howBig: null, newRun: null, menu: null };
  let tour = null;
  const actions = createActions({
    store,
    getStage,
    send,
    watch: (id) => socket.watch(id),
    key,
    overlays,
    getTour: () => tour,
    getLabs: () => labs,
    panels,
  });
  panels.help = mountHelp(store, { getLabKeys: () => labs?.keys, actions });
  mountLanguagePicker();
  panels.howBig = mountHowBig(store);
  panels.newRun = mountSettings(store, { actions });
  tour = mountTour(store, { getStage, labels, onHowBig: () => panels.howBig.open() });
  const projector = mountProjector(store, getStage);
  const toolbar = mountToolbar(store, actions, document.getElementById('toolbar'));
  panels.menu = toolbar.menu;
  panels.faults = mountFaults(store, { send, overlays });
  // The scale field (G cycles the sizes, Z flies out and back; ?gpus=N opens it).
  const scaleField = mountScaleField({ store, getStage });
  Object.assign(actions, { fieldNext: scaleField.next, fieldPath: scaleField.fly, setField: scaleField.set });
  mountKeys(actions, () => labs?.keys);
  // The guided stories (static/js/story/): the "One GPU" button, Shift+G, ?story=one-gpu.
  const story = lazyStory(store, { getStage, actions, labels });
  const storyBtn = document.getElementById('story-open');
  document.querySelector('#toolbar .group.tour')?.append(storyBtn); // beside the tour
  storyBtn?.addEventListener('click', () => story.open('one-gpu', 1));
  const testHook = installTestHook({ store, getStage, actions, labels, tour, story });
  story.fromUrl();
  // Presenting and following, and lesson links (?view=3&tour=4&lab=memory ...): after the
  // keys, so a follower's own key press is seen (and breaks away) before it acts.
  mountPresenter({ store, send, actions, overlays, getTour: () => tour, getLabs: () => labs, getStage, getStory: () => story });
  mountStepWords(store); // each step in words, for screen readers
  mountOwnRun(store, actions); // "your own run · back to the class run"

  // The labs load on their own: a broken lab must never take the live run down with it.
  import('./labs/index.js')
    .then(({ mountLabs }) => {
      labs = mountLabs({ store, ui: { actions, getStage } });
      toolbar.addLabs(labs?.keys);
    })
    .catch((err) => {
      console.warn('the concept labs could not be loaded', err);
      labs = { keys: [], closeAll() {} };
    });

  // Fetch the three.js stage while the socket and the scene data are on their way.
  const stageModule = import('./scene/stage.js');
  stageModule.catch(() => {}); // reported below, where it is awaited

  loadSpec().then(async (spec) => {
    cards.setParts(spec?.parts);
    labels.build(spec);
    tour.setSpec(spec);
    if (spec?.title) document.title = say(spec.title);
    panels.help.setNote(spec?.note);
    panels.howBig.setNote(spec?.note);
    // Probing for WebGL costs a context (slow on software renderers), so it waits until the
    // numbers are already on their way.
    const canDraw = webglAvailable();
    if (!canDraw) overlays.showNoWebGL();
    if (!canDraw || !spec) return;
    const hello = await firstHello();
    let createStage;
    try {
      ({ createStage } = await stageModule);
    } catch (err) {
      console.warn('the 3D stage could not be loaded', err);
      return;
    }
    const canvas = document.getElementById('stage');
    let created;
    try {
      // ?draw=0: no WebGL draws (scene/loop.js)
      const draw = new URL(window.location.href).searchParams.get('draw') !== '0';
      created = createStage(canvas, { spec, topology: hello.topology, store, draw });
    } catch (err) {
      created = { ok: false, error: err };
    }
    // WebGL can pass the probe above and still refuse the real canvas; then the stage is a
    // no-op stand-in, and the page carries on as if there were no WebGL at all.
    if (created.ok === false) {
      console.warn('the 3D stage could not start', created.error);
      overlays.showNoWebGL();
      return;
    }
    stage = created;
    testHook.observeStage(stage);
    scaleField.attach(stage);
    projector.attach();
    stage.setSignal(store.state.signal);
    stage.setSpin(store.state.spin);
    stage.setExploded(store.state.exploded);
    stage.setView(store.state.view, { instant: true });
    labels.attach(stage);
    keepSceneClear(stage);
    let shape = topologyKey(hello.topology);
    store.on('hello', (msg) => {
      const next = topologyKey(msg.topology);
      if (next !== shape) {
        shape = next;
        stage.rebuild(msg.topology);
      }
    });
    installCanvasPicking(canvas, cards);
  });
}

/** Tell the stage which part of the canvas the page's own furniture leaves free, where the
 * layout differs from the stage's built-in guess: on a phone the canvas is a band of its own
 * (nothing covers it), and on narrower screens the top bar takes two rows. */
function keepSceneClear(stage) {
  const phone = window.matchMedia?.(PHONE);
  const bar = document.querySelector('.topbar');
  let last = '';
  function fit() {
    // An open lab frames its part in the room its panel leaves (labs/frame.js); it hands
    // the safe area back when it closes.
    if (store.state.labFocus) return;
    let area = null;
    const docked = window.innerWidth <= 1400 && document.body.matches('.touring, .storying');
    if (phone?.matches) area = { left: 0, right: 0, top: 6, bottom: 6 };
    else if (docked && bar) {
      // The tour's box or the story's card is docked to the right edge (app.css): the scene
      // is framed in the room left of it, so the part a stop names is never under it.
      // Its top stays clear of the step panel, folded to its heading in the top left corner.
      const dock = document.getElementById('caption').getBoundingClientRect().width;
      const step = document.querySelector('.time-panel')?.getBoundingClientRect();
      const top = Math.max(bar.getBoundingClientRect().bottom, step?.height ? step.bottom : 0);
      // ... and its bottom above the loss chart in the bottom left corner.
      const chart = document.querySelector('.chart-panel')?.getBoundingClientRect();
      const bottom = Math.max(150, chart?.height ? window.innerHeight - chart.top : 0);
      area = { left: 0, right: Math.ceil(dock) + 24, top: Math.ceil(top) + 8, bottom: Math.ceil(bottom) + 8 };
    } else if (document.body.matches('.touring, .storying') && window.innerWidth > 1400) {
      // The tour's box or the story's card along the bottom: the scene is framed above it,
      // and above the card's top where a chapter's figure makes it taller (in steps, so a
      // caption a line longer does not move the camera).
      const tops = [...document.querySelectorAll('#story-box, .tour-box')]
        .map((el) => el.getBoundingClientRect()).filter((r) => r.height > 0).map((r) => r.top);
      const over = tops.length ? Math.ceil((window.innerHeight - Math.min(...tops) + 16) / 48) * 48 : 0;
      area = { left: 24, right: 24, top: 120, bottom: Math.max(document.body.matches('.storying') ? 400 : 260, over) };
    } else if (window.innerWidth < 1100 && bar) {
      // The loss chart and the prediction take the bottom corners: keep the parts above them
      // (a tablet held upright: the whole scene, standing tall between the panels).
      const chart = document.querySelector('.chart-panel')?.getBoundingClientRect();
      const step = document.querySelector('.time-panel')?.getBoundingClientRect();
      const tall = window.innerHeight > window.innerWidth * 1.1 && chart?.height;
      const top = Math.max(bar.getBoundingClientRect().bottom, tall && step?.height ? step.bottom : 0);
      area = { left: 0, right: 0, top: Math.ceil(top) + 8, bottom: tall ? Math.ceil(window.innerHeight - chart.top) + 8 : 150 };
    }
    const key = JSON.stringify(area);
    if (key === last) return; // re-framing on every resize event would fight the viewer
    last = key;
    stage.setSafeArea?.(area);
  }
  window.addEventListener('resize', fit);
  if (bar && typeof ResizeObserver === 'function') new ResizeObserver(fit).observe(bar);
  // The card grows with a chapter's figure: the room above it shrinks.
  if (typeof ResizeObserver === 'function') {
    const cards = new ResizeObserver(fit);
    for (const el of document.querySelectorAll('#story-box, .tour-box')) cards.observe(el);
  }
  // The tour or the story starting or ending (their class on the body) moves the free room.
  new MutationObserver(fit).observe(document.body, { attributes: true, attributeFilter: ['class'] });
  store.on('change:labFocus', (focus) => {
    if (focus) return;
    last = null; // the lab set its own area: ours must be applied again
    fit();
  });
  fit();
}

/** Click a part in the 3D scene to pin its card; hovering previews it. A drag (orbiting)
 * is not a click. */
function installCanvasPicking(canvas, cards) {
  let down = null;
  let lastHover = 0;
  let hovered = null;
  canvas.addEventListener('pointerdown', (ev) => {
    down = { x: ev.clientX, y: ev.clientY };
  });
  canvas.addEventListener('pointerup', (ev) => {
    if (!down || !stage) return;
    const moved = Math.hypot(ev.clientX - down.x, ev.clientY - down.y);
    down = null;
    if (moved > 5) return;
    const id = stage.pickPart(ev.clientX, ev.clientY);
    if (id) cards.open(id, true);
    else cards.close();
  });
  canvas.addEventListener('pointermove', (ev) => {
    if (down || !stage || ev.pointerType !== 'mouse') return;
    const now = performance.now();
    if (now - lastHover < 100) return;
    lastHover = now;
    const id = stage.pickPart(ev.clientX, ev.clientY);
    if (id === hovered) return;
    hovered = id;
    canvas.style.cursor = id ? 'pointer' : '';
    cards.hover(id);
    if (!store.state.tour.active) stage.highlight(id);
  });
}

// Another language's words load first, so the page never shows in English before them.
startLanguage().then(main);
