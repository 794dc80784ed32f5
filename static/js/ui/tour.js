// The guided tour: one stop per numbered part, from the scene data. Each stop flies the
// camera there, highlights the part and shows a caption that quotes the live run. It moves
// on by itself (with a visible progress bar), or with PageDown / PageUp from a clicker.

import { fillTemplate, liveValues } from './live.js';

const DEFAULT_DURATION_S = 12;
const FLIGHT_S = 1.1;

export function mountTour(store, { getStage, labels }) {
  const box = document.getElementById('tour-box');
  const count = document.getElementById('tour-count');
  const title = document.getElementById('tour-title');
  const caption = document.getElementById('tour-caption');
  const progress = document.getElementById('tour-progress');

  let stops = [];
  let parts = [];
  let index = 0;
  let timer = 0;

  function partName(id) {
    const p = parts.find((x) => x.id === id);
    return p ? `${p.number} · ${p.name}` : '';
  }

  function renderCaption() {
    const stop = stops[index];
    if (!stop) return;
    const text = fillTemplate(stop.caption, liveValues(store));
    if (caption.textContent !== text) caption.textContent = text;
  }

  function move(stop) {
    const stage = getStage();
    if (!stage) return;
    const instant = store.state.reducedMotion;
    if (stop.camera) stage.flyTo(stop.camera, instant ? 0 : FLIGHT_S);
    else if (Number.isInteger(stop.view)) stage.setView(stop.view, { instant });
    stage.highlight(stop.part ?? null);
  }

  function show(i) {
    index = Math.max(0, Math.min(stops.length - 1, i));
    const stop = stops[index];
    store.set('tour', { active: true, stop: index });
    if (Number.isInteger(stop.view)) store.set('view', stop.view);
    box.hidden = false;
    document.body.classList.add('touring');
    count.textContent = `stop ${index + 1} of ${stops.length}`;
    title.textContent = stop.title ?? partName(stop.part);
    renderCaption();
    labels.highlight(stop.part ?? null);
    move(stop);
    // The bar fills by a CSS transition (no per-frame script work next to the WebGL scene);
    // a timer moves the tour on when it is full.
    const dur = stop.duration_s ?? DEFAULT_DURATION_S;
    progress.classList.add('reset');
    progress.style.transform = 'scaleX(0)';
    void progress.offsetWidth; // commit the empty bar before filling it
    progress.classList.remove('reset');
    progress.style.setProperty('--tour-dur', `${dur}s`);
    progress.style.transform = 'scaleX(1)';
    clearTimeout(timer);
    timer = setTimeout(() => api.next(), dur * 1000);
  }

  function start(at = 0) {
    if (!stops.length) return;
    show(at);
  }

  function stop_() {
    clearTimeout(timer);
    if (!store.state.tour.active) return;
    box.hidden = true;
    document.body.classList.remove('touring');
    store.set('tour', { active: false, stop: index });
    labels.highlight(null);
    const stage = getStage();
    stage?.highlight(null);
    store.set('view', 0);
    stage?.setView(0, { instant: store.state.reducedMotion });
  }

  document.getElementById('tour-next').addEventListener('click', () => api.next());
  document.getElementById('tour-prev').addEventListener('click', () => api.prev());
  document.getElementById('tour-exit').addEventListener('click', () => stop_());
  store.on('step', () => store.state.tour.active && renderCaption());

  const api = {
    setSpec(spec) {
      stops = Array.isArray(spec?.tour) ? spec.tour : [];
      parts = spec?.parts ?? [];
    },
    start,
    stop: stop_,
    next() {
      if (index < stops.length - 1) show(index + 1);
      else stop_();
    },
    prev() {
      show(Math.max(0, index - 1));
    },
    get length() {
      return stops.length;
    },
  };
  return api;
}
