// Concept labs: the ring all-reduce, GPU memory, "swap it" parallelism cards, cost and energy,
// classroom questions, and what the cluster really looks like in a data hall. main.js calls
// mountLabs once the page is up; it returns one key per lab (the toolbar shows a button for
// each, the help lists them) and closeAll() for Esc. A lab's code loads on its first opening
// (catalog.js lists them), so the page's first load carries none of it.
// One panel is open at a time, docked at the side. A lab that changes the scene names the
// part it changes (lab.scene = {part, view, headroom}); while it is open the stage frames that
// part in the window's free area (see frame.js), so no panel covers what it changes.
//
// The stage comes from ui.getStage() (main.js passes it); without one (no WebGL, or an older
// main.js) the labs still work and only the re-framing is skipped.

import { t } from '../i18n/lang.js';
import { say } from '../i18n/content.js';
import { h } from './dom.js';
import { peekingRight, safeAreaFor, topClear } from './frame.js';
import { CATALOG } from './catalog.js';

export function mountLabs({ store, ui } = {}) {
  const root = h('div', { class: 'labs-root', id: 'labs' });
  document.body.append(root);
  let openId = null;
  const getStage = () => {
    try {
      const st = ui?.getStage?.();
      return st && st.ok !== false ? st : null;
    } catch {
      return null;
    }
  };

  const panels = CATALOG.map((lab) => {
    const titleId = `lab-${lab.id}-title`;
    const title = h('h2', { id: titleId, text: lab.title() });
    const close = h('button', {
      type: 'button',
      class: 'lab-close',
      'aria-label': t('Close (Esc)'),
      title: t('Close (Esc)'),
      text: '×',
      onclick: () => closeAll(),
    });
    const head = h(
      'header',
      { class: 'lab-head' },
      h('div', {}, h('p', { class: 'lab-kicker', text: t('{kicker} · key {key}', { kicker: lab.kicker(), key: lab.key.toUpperCase() }) }), title),
      close,
    );
    const body = h('div', { class: 'lab-body' });
    const panel = h(
      'section',
      { class: `lab-panel lab-${lab.id} dock-${lab.scene?.dock ?? 'left'}`, id: `lab-${lab.id}`, role: 'dialog', 'aria-modal': 'false', 'aria-labelledby': titleId, hidden: true },
      head,
      body,
    );
    // The page's keys ignore Esc while someone types in a field; in a lab's own fields Esc
    // should still put the panel away.
    panel.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape' && ev.target.matches?.('input, select, textarea')) {
        ev.target.blur();
        closeAll();
      }
    });
    root.append(panel);
    return { lab, panel, body, title, impl: null, loading: null };
  });

  /** The lab's code, loaded once: it gets the store (where it puts the case the scene should
   * show) and the page's actions (to move the camera there); the scene follows the store, so
   * no lab needs the stage or the socket. */
  function load(p) {
    p.loading ??= p.lab.load().then((mod) => {
      const impl = mod.create({ store, ui });
      impl.mount(p.body, { setTitle: (text) => (p.title.textContent = say(text)) }); // the lab's title from the scene's words
      p.impl = impl;
      return impl;
    });
    return p.loading;
  }

  // ---- keeping the changed part in sight ----
  let framed = null; // {p, stage, area} while a lab's part is framed in the free area
  let retry = null;
  let tries = 0;
  let queued = 0;

  /** Move the panel below the top bar's pieces above it (they wrap onto more rows on small
   * screens and in projector mode). */
  function placePanel(p) {
    root.style.setProperty('--labs-min-width', '0px'); // measure the panel's own width first
    const r = p.panel.getBoundingClientRect();
    const clear = topClear(r.left, r.right);
    root.style.setProperty('--labs-top', `${Math.max(12, Math.round(clear + 10))}px`);
    // A HUD panel of the left column that is a little wider than this one would peek out
    // beside it: cover it instead (the free area would lose that strip anyway).
    const cover = p.lab.scene?.dock === 'right' ? 0 : peekingRight(r);
    root.style.setProperty('--labs-min-width', cover ? `${Math.round(cover - r.left + 8)}px` : '0px');
  }

  function frameScene(p, { fly = false } = {}) {
    const spec = p.lab.scene;
    if (!spec || p.panel.hidden) return;
    const stage = getStage();
    if (!stage) {
      if (fly && spec.view !== undefined) ui?.actions?.view?.(spec.view);
      // The stage starts after the labs on a slow machine: try again shortly (no WebGL at
      // all: give up after a while).
      clearTimeout(retry);
      if (typeof ui?.getStage === 'function' && tries < 120) {
        tries += 1;
        retry = setTimeout(() => frameScene(p), 500);
      }
      return;
    }
    tries = 0;
    const area = safeAreaFor(p.panel.getBoundingClientRect(), spec);
    // Setting the safe area re-frames the view at once, which would cut a camera flight
    // short: only when the free area really moved.
    const same = framed && framed.p === p && framed.stage === stage && ['left', 'right', 'top', 'bottom'].every((k) => Math.abs(framed.area[k] - area[k]) < 2);
    try {
      if (!same) stage.setSafeArea?.(area);
      framed = { p, stage, area };
      store?.set?.('labFocus', spec.part);
      if (fly && spec.view !== undefined) ui?.actions?.view?.(spec.view);
    } catch (err) {
      console.warn(`framing lab ${p.lab.id} failed`, err);
    }
  }

  function unframe() {
    clearTimeout(retry);
    if (!framed) return;
    try {
      framed.stage.setSafeArea?.(null); // back to the HUD's own safe area
    } catch (err) {
      console.warn('restoring the safe area failed', err);
    }
    framed = null;
    store?.set?.('labFocus', null);
  }

  /** The window, the panel or the HUD changed size: re-measure, at most once a frame. */
  function relayout() {
    if (queued) return;
    queued = requestAnimationFrame(() => {
      queued = 0;
      const p = panels.find((x) => x.lab.id === openId);
      if (!p) return;
      placePanel(p);
      if (p.lab.scene) frameScene(p);
    });
  }
  const watcher = typeof ResizeObserver === 'function' ? new ResizeObserver(relayout) : null;
  window.addEventListener('resize', relayout);
  store?.on?.('change:projector', relayout);
  store?.on?.('change:tour', relayout);

  function closeOne(p) {
    if (p.panel.hidden) return;
    p.panel.hidden = true;
    watcher?.unobserve(p.panel);
    try {
      p.impl?.onClose?.();
    } catch (err) {
      console.warn(`closing lab ${p.lab.id} failed`, err);
    }
  }

  function closeAll() {
    for (const p of panels) closeOne(p);
    unframe();
    openId = null;
    root.classList.remove('has-open');
  }

  function open(id) {
    if (openId === id) {
      closeAll(); // the same key again puts the panel away
      return;
    }
    closeAll();
    const p = panels.find((x) => x.lab.id === id);
    p.panel.hidden = false;
    openId = id;
    root.classList.add('has-open');
    placePanel(p);
    // Frame before the lab's own opening moves, so the flight to its view ends in the free area.
    frameScene(p, { fly: true });
    watcher?.observe(p.panel);
    p.panel.focus?.({ preventScroll: true });
    load(p)
      .then((impl) => {
        if (openId !== id) return;
        impl.onOpen?.();
        relayout();
      })
      .catch((err) => {
        console.warn(`lab ${id} could not be loaded`, err);
        p.body.replaceChildren(h('p', { class: 'lab-error', role: 'alert', text: t('This lab could not be loaded. Reload the page to try again.') }));
      });
  }

  // Read-only view for tests and the console (window.trainingRun belongs to the main UI).
  const hook = {};
  const getters = {
    open: () => openId,
    memoryCase: () => (store?.state.memoryCase ? JSON.parse(JSON.stringify(store.state.memoryCase)) : null),
    placement: () => store?.state.placement ?? null,
    // The safe area the open lab gave the stage (CSS px at each edge), or null.
    safeArea: () => (framed ? { ...framed.area, part: framed.p.lab.scene.part } : null),
    ...Object.fromEntries(panels.map((p) => [p.lab.id, () => p.impl?.info?.() ?? null])),
  };
  for (const [name, get] of Object.entries(getters)) Object.defineProperty(hook, name, { get, enumerable: true });
  Object.freeze(hook);
  Object.defineProperty(window, 'trainingRunLabs', { value: hook, configurable: true });

  return {
    // label and title ("ring lab (R)") in the page's language, made when read
    keys: panels.map(({ lab }) => ({
      key: lab.key,
      get label() {
        return lab.label();
      },
      get title() {
        return t('{label} ({key})', { label: lab.label(), key: lab.key.toUpperCase() });
      },
      open: () => open(lab.id),
    })),
    closeAll,
    open,
    // For presenting and lesson links (presenter/parts.js): which lab is open, and a lab by id.
    get openId() {
      return openId;
    },
    // The lab's code once loaded (null before, or for a lab this page does not have).
    lab: (id) => panels.find((p) => p.lab.id === id)?.impl ?? null,
    has: (id) => panels.some((p) => p.lab.id === id),
  };
}
