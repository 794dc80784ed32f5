// The guided tour: one stop per numbered part, from the scene data. Each stop flies the
// camera there, highlights the part and shows a short caption, quoting the live run, for the
// teacher to say; "more" unfolds the longer story for whoever asks why.
//
// A stop waits for the next press (a clicker's PageDown / PageUp, Enter, the next / previous
// buttons): a teacher talks for as long as the room needs. Auto-advance is a choice, kept for
// the browser session; then a progress bar fills and the tour moves on by itself, except
// while the run is paused or the "more" text is open, which hold it where it is.

import { say } from '../i18n/content.js';
import { join, t } from '../i18n/lang.js';
import { watchedGpuCloseUp } from '../story/closeup.js';
import { liveValues } from './live.js';
import { word } from './words.js';

const DEFAULT_DURATION_S = 12;
const FLIGHT_S = 1.1;
const AUTO_KEY = 'trainingRun.tourAuto';

function remembered() {
  try {
    return sessionStorage.getItem(AUTO_KEY) === '1';
  } catch {
    return false; // storage disabled: the default, waiting for presses
  }
}

export function mountTour(store, { getStage, labels, onHowBig }) {
  const $ = (id) => document.getElementById(id);
  const box = $('tour-box');
  const count = $('tour-count');
  const title = $('tour-title');
  const caption = $('tour-caption');
  const moreBox = $('tour-more');
  const moreText = $('tour-more-text');
  const moreBtn = $('tour-more-btn');
  const autoBtn = $('tour-auto');
  const track = $('tour-progress-track');
  const nextBtn = $('tour-next');
  const progress = $('tour-progress');

  let stops = [];
  let parts = [];
  let index = 0;
  // Predict, then reveal: a stop with `ask` shows its question first; the next press shows
  // the answer (quoting the live run) and only the press after that moves on.
  let revealed = true;
  // Past the last stop: the box says the tour is over and offers to start again; previous
  // goes back to the last stop.
  let ended = false;
  // The auto-advance clock: this stop's length, what is left of it, and since when it runs.
  let timer = 0;
  let durMs = 0;
  let leftMs = 0;
  let since = 0; // performance.now() when the clock last started; 0 while it stands still

  // A stop with `inside` opens GPU 1 up close on the watched run, the live step playing
  // through its layers (the story's own pieces); put away when the stop changes.
  let inside = null;
  function lookInside(stop) {
    if (!stop?.inside) {
      inside?.leave();
      inside = null;
    } else if (!inside) {
      inside = watchedGpuCloseUp({ getStage, store }); // null until the run's hello is here
    }
  }

  function partName(id) {
    const p = parts.find((x) => x.id === id);
    return p ? join([String(p.number), '·', say(p.name)]) : '';
  }

  function renderText() {
    const stop = stops[index];
    if (!stop || ended) return;
    const values = liveValues(store);
    const ask = stop.ask;
    const said = () => say(stop.caption, values, stop.caption_not_yet);
    const text = ask
      ? revealed
        ? t('Answer: {answer} {caption}', { answer: say(ask.answer, values, ask.answer_not_yet), caption: said() })
        : t('Predict first: {question} (next press shows the answer)', { question: say(ask.question, values) })
      : said();
    box.classList.toggle('asking', Boolean(ask) && !revealed);
    conceal(ask && !revealed ? ask.conceals : null);
    if (caption.textContent !== text) caption.textContent = text;
    const more = stop.more ? say(stop.more, values) : '';
    if (moreText.textContent !== more) moreText.textContent = more;
  }

  /** Predict, then reveal, for real: the panels a question names (data-conceal) hide what
   * they show until the answer is revealed; null shows them all again. */
  function conceal(names) {
    for (const el of document.querySelectorAll('[data-conceal]')) {
      el.classList.toggle('concealed', Boolean(names?.includes(el.dataset.conceal)));
    }
  }

  function move(stop) {
    const stage = getStage();
    if (!stage) return;
    const instant = store.state.reducedMotion;
    if (stop.camera) stage.flyTo(stop.camera, instant ? 0 : FLIGHT_S);
    else if (Number.isInteger(stop.view)) stage.setView(stop.view, { instant });
    stage.highlight(stop.part ?? null);
  }

  // ---- the clock ------------------------------------------------------------------------

  const held = () => store.state.status?.state === 'paused' || store.state.tourMore;

  /** Show the bar at `from` (0..1) at once, then, when `ms` > 0, fill it over `ms`. The bar
   * moves by a CSS transition: no per-frame script work next to the WebGL scene. */
  function bar(from, ms) {
    progress.classList.add('reset');
    progress.style.transform = `scaleX(${Math.max(0, Math.min(1, from))})`;
    void progress.offsetWidth; // commit the jump before the transition starts
    if (ms > 0) {
      progress.classList.remove('reset');
      progress.style.setProperty('--tour-dur', `${ms / 1000}s`);
      progress.style.transform = 'scaleX(1)';
    }
  }

  function stopClock() {
    clearTimeout(timer);
    if (since) leftMs = Math.max(0, leftMs - (performance.now() - since));
    since = 0;
    bar(durMs ? 1 - leftMs / durMs : 0, 0);
  }

  function runClock() {
    if (!store.state.tour.active || !store.state.tourAuto || held() || ended) {
      stopClock();
      return;
    }
    if (since) return; // already running
    since = performance.now();
    bar(durMs ? 1 - leftMs / durMs : 0, leftMs);
    clearTimeout(timer);
    timer = setTimeout(() => {
      since = 0;
      api.next();
    }, leftMs);
  }

  // ---- stops ------------------------------------------------------------------------------

  function setMore(open) {
    store.set('tourMore', open);
    moreBox.hidden = !open;
    moreBtn.setAttribute('aria-expanded', String(open));
    moreBtn.textContent = open ? t('less') : t('more');
    runClock();
  }

  function setAuto(on) {
    store.set('tourAuto', on);
    try {
      sessionStorage.setItem(AUTO_KEY, on ? '1' : '0');
    } catch {
      // storage disabled: the choice lasts as long as the page
    }
    autoBtn.setAttribute('aria-pressed', String(on));
    autoBtn.textContent = on ? t('auto-advance: on') : t('auto-advance: off');
    track.hidden = !on;
    if (on) {
      stopClock();
      leftMs = durMs; // a fresh full stop from the moment it was switched on
    }
    runClock();
  }

  function show(i) {
    index = Math.max(0, Math.min(stops.length - 1, i));
    ended = false;
    nextBtn.textContent = word('tourNext');
    const stop = stops[index];
    revealed = !stop.ask;
    store.set('tour', { active: true, stop: index, revealed });
    if (Number.isInteger(stop.view)) store.set('view', stop.view);
    box.hidden = false;
    document.body.classList.add('touring');
    count.textContent = t('stop {n} of {total}', { n: index + 1, total: stops.length });
    title.textContent = stop.title ?? partName(stop.part);
    moreBtn.hidden = !stop.more;
    renderText();
    labels.highlight(stop.part ?? null);
    lookInside(null);
    move(stop);
    lookInside(stop);
    clearTimeout(timer);
    since = 0;
    durMs = (stop.duration_s ?? DEFAULT_DURATION_S) * 1000;
    leftMs = durMs;
    if (store.state.tourMore) setMore(false); // each stop starts with its short line
    else runClock();
  }

  /** The end of the tour: said in the box, which stays, with "start again" for next. */
  function showEnd() {
    if (!stops.length) return;
    index = stops.length - 1;
    ended = true;
    lookInside(null);
    conceal(null);
    clearTimeout(timer);
    since = 0;
    if (store.state.tourMore) store.set('tourMore', false);
    moreBox.hidden = true;
    moreBtn.hidden = true;
    store.set('tour', { active: true, stop: index, revealed: true, ended: true });
    box.hidden = false;
    box.classList.remove('asking');
    document.body.classList.add('touring');
    count.textContent = word('tourEndCount', { total: stops.length });
    title.textContent = word('tourEnd');
    caption.textContent = word('tourEndCaption');
    nextBtn.textContent = word('tourAgain');
    labels.highlight(null);
    getStage()?.highlight(null);
    bar(0, 0);
  }

  function start(at = 0) {
    if (!stops.length) return;
    show(at);
  }

  function stop_() {
    clearTimeout(timer);
    since = 0;
    if (!store.state.tour.active) return;
    ended = false;
    lookInside(null);
    conceal(null);
    nextBtn.textContent = word('tourNext');
    box.hidden = true;
    document.body.classList.remove('touring');
    store.set('tour', { active: false, stop: index });
    if (store.state.tourMore) setMore(false);
    labels.highlight(null);
    const stage = getStage();
    stage?.highlight(null);
    store.set('view', 0);
    stage?.setView(0, { instant: store.state.reducedMotion });
  }

  $('tour-next').addEventListener('click', () => api.next());
  $('tour-prev').addEventListener('click', () => api.prev());
  $('tour-exit').addEventListener('click', () => stop_());
  moreBtn.addEventListener('click', () => setMore(!store.state.tourMore));
  autoBtn.addEventListener('click', () => setAuto(!store.state.tourAuto));
  $('tour-howbig').addEventListener('click', () => onHowBig?.());
  store.on('step', () => {
    if (!store.state.tour.active) return;
    renderText();
    if (!ended) lookInside(stops[index]);
    inside?.update();
  });
  store.on('snapshot', () => store.state.tour.active && renderText());
  // Pausing the run holds an auto-advancing tour; resuming lets it go on from where it was.
  for (const name of ['change:status', 'snapshot']) {
    store.on(name, () => store.state.tour.active && runClock());
  }
  setAuto(remembered());

  const api = {
    setSpec(spec) {
      stops = Array.isArray(spec?.tour) ? spec.tour : [];
      parts = spec?.parts ?? [];
    },
    start,
    stop: stop_,
    next() {
      if (ended) show(0);
      else if (store.state.tour.active && !revealed) api.reveal();
      else if (index < stops.length - 1) show(index + 1);
      else showEnd();
    },
    prev() {
      // From the end, back to the last stop; from a stop, to the one before.
      show(ended ? index : Math.max(0, index - 1));
    },
    /** Past the last stop (a follower shown where its presenter is). */
    end: showEnd,
    get ended() {
      return ended;
    },
    setAuto,
    setMore,
    get length() {
      return stops.length;
    },
    /** The part the current stop names (null off the tour). */
    get part() {
      return store.state.tour.active && !ended ? stops[index]?.part ?? null : null;
    },
    /** Whether the current stop opens GPU 1 up close. */
    get inside() {
      return Boolean(store.state.tour.active && !ended && stops[index]?.inside);
    },
    /** Show the answer of the current stop's question (a no-op on a stop without one). */
    reveal() {
      if (revealed || !store.state.tour.active) return;
      revealed = true;
      store.set('tour', { active: true, stop: index, revealed });
      renderText();
    },
    /** Go to stop `i` (0-based) as a follower or a lesson link asks: the tour starts if need be. */
    goTo(i, { reveal = false } = {}) {
      if (!stops.length) return false;
      if (!store.state.tour.active || index !== i || ended) show(i);
      if (reveal) api.reveal();
      return true;
    },
    get revealed() {
      return revealed;
    },
  };
  return api;
}
