// Presenting and following. A page with the presenter's rights can present (the Present
// button, or `?present`); from then on it sends what it shows (presenter/parts.js) through
// the websocket, and every other page follows: it applies the same parts through its own
// actions. A follower wears a "following the presenter" badge, breaks away with any key or a
// drag (to explore on its own), and follows again with one click or J. The presenting page
// shows the join link and its QR code (made by the server, offline) and how many follow.
// Lesson links (ui/links.js) are applied here too, through the same parts.

import { createParts } from './parts.js';
import { applyHide, linkFor, readLink } from '../ui/links.js';
import { word } from '../ui/words.js';

const SEND_GAP_MS = 120; // at most about 8 moves a second (the server's budget is 10)
const WATCH_MS = 400; // a slow look for changes no store event announced
const DRAG_PX = 5;

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'text') node.textContent = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : v);
  }
  node.append(...children);
  return node;
}

function isTyping(target) {
  return target instanceof Element && Boolean(target.closest('input, textarea, select, [contenteditable]'));
}

export function mountPresenter({ store, send, actions, overlays, getTour, getLabs, getStage, getStory }) {
  const parts = createParts({ store, actions, getTour, getLabs, getStage, getStory });
  const link = readLink();
  applyHide(link.hide);

  let wantPresent = link.present; // this page means to present (kept across reconnects)
  let presenting = false; // the server confirmed this page leads
  let on = false; // a presentation is on (led by another page)
  let away = false; // this page broke away to explore on its own
  let lastParts = null; // the presenter's latest view
  let lastSent = '';
  let sendTimer = 0;
  let lastSendAt = 0;
  let joinShown = true;
  const sentLog = []; // the latest moves this page sent as presenter: [{at, parts}]
  const applied = []; // the latest presenter views applied here, with when: [{at, seq, parts}]

  const canPresent = () => store.state.hello?.can_control === true;
  const following = () => on && !presenting && !away;

  // ---- the page's furniture -------------------------------------------------------------
  const presentBtn = h('button', { type: 'button', class: 'present-btn', title: word('presentTitle'), onclick: () => (presenting || wantPresent ? stop() : start()) });
  const count = h('span', { class: 'present-count', role: 'status', 'aria-live': 'polite' });
  const copyBtn = h('button', { type: 'button', class: 'copy-link', text: word('copyLink'), onclick: () => copyLink() });
  const joinUrl = h('b', { class: 'join-url' });
  const qr = h('img', { class: 'join-qr', alt: '', width: '400', height: '400' });
  const joinToggle = h('button', { type: 'button', class: 'join-toggle', onclick: () => setJoinShown(!joinShown) });
  const join = h('div', { class: 'join-card', hidden: true }, h('p', { class: 'join-line' }, h('span', { text: `${word('joinAt')} ` }), joinUrl), qr);
  const bar = h('aside', { class: 'presenter-bar', id: 'presenter', 'aria-label': word('presenting') }, h('div', { class: 'presenter-row' }, presentBtn, count, joinToggle, copyBtn), join);
  const badgeText = h('span', { class: 'follow-text' });
  const badgeHint = h('span', { class: 'follow-hint' });
  const rejoinBtn = h('button', { type: 'button', class: 'rejoin', text: word('rejoin'), onclick: () => rejoin() });
  const badge = h('div', { class: 'follow-badge', id: 'follow-badge', role: 'status', 'aria-live': 'polite', hidden: true }, h('span', { class: 'follow-dot', 'aria-hidden': 'true' }), badgeText, badgeHint, rejoinBtn);
  bar.prepend(badge); // at the top of the right-hand column, clear of the panels on the left
  document.body.append(bar);

  // Compact (ui/projector.js): the buttons go in the toolbar's menu, the count stays here.
  const row = bar.querySelector('.presenter-row');
  // A phone keeps them in its menu too: floating, they would cover the panels below the scene.
  const phone = window.matchMedia?.('(max-width: 699px)');
  function dock() {
    const menu = document.getElementById('tb-more');
    const inMenu = Boolean((store.state.compact || phone?.matches) && menu);
    row.classList.toggle('group', inMenu);
    if (inMenu && row.parentElement !== menu) {
      menu.append(row);
      join.before(count);
    } else if (!inMenu && row.parentElement !== bar) {
      join.before(row);
      joinToggle.before(count);
    }
  }
  store.on('change:compact', dock);
  phone?.addEventListener?.('change', dock);
  dock();

  // What sits above the bar's corner: the top bar and the colour key (whatever rows they wrap
  // onto), and the scale panel where it docks in the top right.
  const ABOVE = ['.topbar', '#colour-key', '#field-panel'];

  /** Below everything in the top right corner. */
  function place() {
    let top = 0;
    for (const sel of ABOVE) {
      const r = document.querySelector(sel)?.getBoundingClientRect();
      const corner = r && r.height && r.top < window.innerHeight * 0.3 && r.right > window.innerWidth * 0.8;
      if (corner) top = Math.max(top, r.bottom);
    }
    if (!top || window.matchMedia?.('(max-width: 699px)').matches) {
      bar.style.top = '';
      return;
    }
    bar.style.top = `${Math.round(top + 10)}px`;
  }
  window.addEventListener('resize', place);
  store.on('change:projector', () => requestAnimationFrame(place));
  if (typeof ResizeObserver === 'function') {
    const ro = new ResizeObserver(place);
    const watch = () => {
      for (const sel of ABOVE) {
        const node = document.querySelector(sel);
        if (node) ro.observe(node);
      }
    };
    watch();
    setTimeout(watch, 3000); // panels that mount a little later
  }
  requestAnimationFrame(place);

  function render() {
    store.set('presenting', presenting);
    store.set('following', following());
    document.body.classList.toggle('presenting', presenting);
    document.body.classList.toggle('following', following());
    // A following page may take the lead too, but not from the corner of its eye: the
    // button shows while it does not follow (the presenter's own page, or on its own).
    presentBtn.hidden = (!canPresent() && !presenting) || following();
    presentBtn.textContent = presenting || wantPresent ? word('stopPresenting') : word('present');
    presentBtn.setAttribute('aria-pressed', String(presenting));
    const n = store.state.followers ?? 0;
    count.hidden = !presenting;
    count.textContent = word('followers', { n });
    joinToggle.hidden = !presenting;
    joinToggle.textContent = joinShown ? word('joinHide') : word('joinShow');
    joinToggle.setAttribute('aria-expanded', String(joinShown));
    join.hidden = !(presenting && joinShown);
    badge.hidden = !on || presenting;
    badge.classList.toggle('away', away);
    badgeText.textContent = away ? word('away') : word('following');
    badgeHint.textContent = away ? '' : word('followingHint');
    badgeHint.hidden = away;
    rejoinBtn.hidden = !away;
  }

  // The code is for the start of the lesson: once the tour starts it steps aside (the
  // "join code" button brings it back for a latecomer).
  let touring = false;
  store.on('change:tour', (t) => {
    const now = Boolean(t?.active);
    if (now && !touring && presenting && joinShown) setJoinShown(false);
    touring = now;
  });

  function setJoinShown(show) {
    joinShown = show;
    if (show) loadJoin();
    render();
  }

  let joinLoaded = false;
  async function loadJoin() {
    if (joinLoaded) return;
    try {
      const res = await fetch('/api/join');
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      const j = await res.json();
      joinUrl.textContent = j.url.replace(/^https?:\/\//, '').replace(/\/$/, '');
      qr.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(j.svg)}`;
      qr.alt = word('joinAlt', { url: j.url });
      joinLoaded = true;
    } catch (err) {
      console.warn('the join link could not be loaded', err);
    }
  }

  // ---- presenting ---------------------------------------------------------------------------
  function start() {
    if (!canPresent()) {
      overlays.toast(word('presentTitle'), 'info', 4000);
      return;
    }
    wantPresent = true;
    lastSent = JSON.stringify(parts.read());
    send({ type: 'present', action: 'start', parts: JSON.parse(lastSent) });
    loadJoin();
    render();
  }

  function stop() {
    wantPresent = false;
    if (presenting) send({ type: 'present', action: 'stop' });
    presenting = false;
    render();
  }

  /** Send what this page shows now, if it changed, at most every SEND_GAP_MS. */
  function moved() {
    if (!presenting || sendTimer) return;
    const wait = Math.max(0, lastSendAt + SEND_GAP_MS - performance.now());
    sendTimer = setTimeout(() => {
      sendTimer = 0;
      if (!presenting) return;
      const now = JSON.stringify(parts.read());
      if (now === lastSent) return;
      lastSent = now;
      lastSendAt = performance.now();
      send({ type: 'present', action: 'move', parts: JSON.parse(now) });
      sentLog.push({ at: Date.now(), parts: JSON.parse(now) });
      if (sentLog.length > 20) sentLog.shift();
    }, wait);
  }
  store.on('change', (key) => {
    if (key !== 'presenting' && key !== 'following' && key !== 'followers') moved();
  });
  setInterval(moved, WATCH_MS);
  // What a person does on the presenting page (a click, a typed value, a key) is a move as
  // soon as it lands, before any answer it waits for from the server.
  for (const type of ['click', 'change', 'keyup', 'pointerup']) document.addEventListener(type, moved, true);

  // ---- following ----------------------------------------------------------------------------
  function breakAway() {
    if (!following()) return;
    away = true;
    send({ type: 'following', following: false });
    render();
  }

  function rejoin() {
    if (!away) return;
    away = false;
    send({ type: 'following', following: true });
    if (on && lastParts) parts.apply(lastParts);
    render();
  }

  store.on('follow', (msg) => {
    if (msg.lead) {
      presenting = true;
      store.set('followers', msg.followers ?? 0);
      render();
      return;
    }
    if (presenting) {
      // Another page took the lead: this one follows it from now on.
      presenting = false;
      wantPresent = false;
      if (msg.presenting) overlays.toast(word('tookOver'), 'info', 5000);
    }
    const was = on;
    on = Boolean(msg.presenting);
    if (on) {
      lastParts = msg.parts ?? {};
      if (!away) {
        const got = Date.now();
        parts.apply(lastParts);
        applied.push({ at: Date.now(), got, serverAt: Math.round(msg.sent_at * 1000), seq: msg.seq, parts: lastParts });
        if (applied.length > 20) applied.shift();
      }
    } else if (was) {
      overlays.toast(word('presenterLeft'), 'info', 4000);
    }
    render();
  });

  // A hello on a new connection starts over; one on the same connection (the page handed to
  // another run, as a follower is when the room goes into a story) keeps what it was doing.
  let connected = false;
  store.on('hello', () => {
    if (connected) {
      render();
      return;
    }
    connected = true;
    // Every (re)connection: a page that means to present takes the lead again.
    presenting = false;
    on = false;
    if (wantPresent) {
      if (canPresent()) start();
      else wantPresent = false;
    }
    render();
  });
  store.on('change:connection', (state) => {
    if (state !== 'open') {
      connected = false;
      presenting = false;
      render();
    }
  });

  // Any key or drag on a following page: explore on your own. J (or the button) follows again.
  document.addEventListener(
    'keydown',
    (ev) => {
      if (['Shift', 'Control', 'Alt', 'Meta', 'CapsLock', 'Tab'].includes(ev.key)) return;
      if ((ev.key === 'j' || ev.key === 'J') && !isTyping(ev.target) && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
        if (away) {
          rejoin();
          ev.preventDefault();
        }
        return;
      }
      breakAway();
    },
    true,
  );
  let down = null;
  const canvas = document.getElementById('stage');
  canvas?.addEventListener('pointerdown', (ev) => {
    down = { x: ev.clientX, y: ev.clientY };
  });
  canvas?.addEventListener('pointermove', (ev) => {
    if (down && Math.hypot(ev.clientX - down.x, ev.clientY - down.y) > DRAG_PX) breakAway();
  });
  window.addEventListener('pointerup', () => (down = null));
  canvas?.addEventListener('wheel', () => breakAway(), { passive: true });

  // ---- lesson links and "copy link to this view" --------------------------------------------
  if (Object.keys(link.parts).length) parts.apply(link.parts);

  function currentLink() {
    return linkFor(parts.read());
  }

  let lastCopied = null;
  async function copyLink() {
    const url = currentLink();
    lastCopied = url;
    // A browser may leave the clipboard's promise waiting on a permission nobody is asked
    // for: after a moment the link is shown to copy by hand instead.
    const late = new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 1500));
    try {
      await Promise.race([navigator.clipboard.writeText(url), late]);
      overlays.toast(word('copied', { url }), 'info', 5000);
    } catch {
      overlays.toast(word('copyFailed', { url }), 'info', 12000);
    }
  }

  const hook = {};
  const getters = {
    parts: () => JSON.parse(JSON.stringify(parts.read())),
    link: () => currentLink(),
    lastCopied: () => lastCopied,
    joinShown: () => presenting && joinShown,
    away: () => away,
    presentationOn: () => on || presenting,
    applied: () => JSON.parse(JSON.stringify(applied)),
    sent: () => JSON.parse(JSON.stringify(sentLog)),
  };
  for (const [name, get] of Object.entries(getters)) Object.defineProperty(hook, name, { get, enumerable: true });
  Object.freeze(hook);
  Object.defineProperty(window, 'trainingRunPresenter', { value: hook, configurable: true });

  render();
  return { parts, start, stop, rejoin, breakAway, link: currentLink };
}
