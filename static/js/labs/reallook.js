// What it really looks like: the same cluster as it stands in a data hall (labs/hall.js draws
// it), each numbered part of the main scene pointed out on the real thing, with a figure and
// its source. The words come from scenes/reallook.json (GET /api/labs/reallook).

import { t } from '../i18n/lang.js';
import { say } from '../i18n/content.js';
import { h } from './dom.js';
import { once } from './api.js';
import { LEADS, buildHall } from './hall.js';

export function create() {
  let hall = null;
  let els = null;
  let text = null;
  let watcher = null;
  let shown = false;
  let failed = '';

  // Each callout stands a little away from the point it names, joined to it by a line; where
  // two would touch, the later one moves clear, and none leaves the picture.
  function placeTags() {
    if (!hall || !els) return;
    const W = els.canvas.clientWidth;
    const H = els.canvas.clientHeight;
    const boxes = [];
    for (const [n, tag] of els.tags) {
      const part = text.parts.find((p) => p.n === n);
      const at = hall.project(part.anchor);
      tag.hidden = !at.visible;
      if (!at.visible) continue;
      const [dx, dy] = LEADS[part.anchor] ?? [0, -30];
      const w = tag.offsetWidth;
      const h2 = tag.offsetHeight;
      boxes.push({ tag, at, w, h: h2, x: at.x + dx - w / 2, y: at.y + dy - h2 / 2 });
    }
    const clamp = (b) => {
      b.x = Math.max(4, Math.min(W - b.w - 4, b.x));
      b.y = Math.max(4, Math.min(H - b.h - 4, b.y));
    };
    boxes.forEach(clamp);
    const GAP = 6;
    for (let pass = 0; pass < 8; pass += 1) {
      let moved = false;
      for (let i = 0; i < boxes.length; i += 1) {
        for (let j = 0; j < i; j += 1) {
          const a = boxes[j];
          const b = boxes[i];
          if (b.x >= a.x + a.w + GAP || a.x >= b.x + b.w + GAP || b.y >= a.y + a.h + GAP || a.y >= b.y + b.h + GAP) continue;
          // Move the later one up or down, whichever is the shorter way out (and fits).
          const down = a.y + a.h + GAP - b.y;
          const up = b.y + b.h + GAP - a.y;
          b.y += (down <= up && b.y + down + b.h < H - 4) || b.y - up < 4 ? down : -up;
          clamp(b);
          moved = true;
        }
      }
      if (!moved) break;
    }
    const lines = [];
    for (const b of boxes) {
      b.tag.style.transform = `translate(${Math.round(b.x)}px, ${Math.round(b.y)}px)`;
      const cx = Math.round(b.x + b.w / 2);
      const cy = Math.round(b.y + b.h / 2);
      lines.push(`<line x1="${b.at.x.toFixed(1)}" y1="${b.at.y.toFixed(1)}" x2="${cx}" y2="${cy}"/><circle cx="${b.at.x.toFixed(1)}" cy="${b.at.y.toFixed(1)}" r="4"/>`);
    }
    els.leads.innerHTML = lines.join('');
  }

  function draw() {
    if (!hall) return;
    const r = els.canvas.getBoundingClientRect();
    hall.resize(Math.round(r.width), Math.round(r.height));
    hall.render();
    placeTags();
  }

  function start() {
    if (hall || !els || !text) return;
    try {
      hall = buildHall(els.canvas);
    } catch (err) {
      failed = t('This browser could not draw the hall ({error}); the parts are listed below.', { error: err.message });
      els.error.textContent = failed;
      return;
    }
    draw();
    watcher = typeof ResizeObserver === 'function' ? new ResizeObserver(() => draw()) : null;
    watcher?.observe(els.canvas);
  }

  function stop() {
    watcher?.disconnect();
    watcher = null;
    hall?.dispose();
    hall = null;
  }

  // Drag (or arrow keys on the picture) turns the view around the row a little.
  function wireOrbit(canvas) {
    let last = null;
    canvas.addEventListener('pointerdown', (ev) => {
      last = ev.clientX;
      canvas.setPointerCapture?.(ev.pointerId);
    });
    canvas.addEventListener('pointermove', (ev) => {
      if (last === null || !hall) return;
      hall.orbit((ev.clientX - last) * -0.006);
      last = ev.clientX;
      hall.render();
      placeTags();
    });
    const end = () => (last = null);
    canvas.addEventListener('pointerup', end);
    canvas.addEventListener('pointercancel', end);
    canvas.addEventListener('keydown', (ev) => {
      if (!hall || (ev.key !== 'ArrowLeft' && ev.key !== 'ArrowRight')) return;
      ev.preventDefault();
      ev.stopPropagation();
      hall.orbit(ev.key === 'ArrowLeft' ? 0.08 : -0.08);
      hall.render();
      placeTags();
    });
  }

  function point(n, on) {
    els?.tags.get(n)?.classList.toggle('lit', on);
  }

  function mount(body) {
    const canvas = h('canvas', { class: 'hall-canvas', tabindex: '0', 'aria-label': t('A row of a data hall: drag or use the arrow keys to turn it') });
    const overlay = h('div', { class: 'hall-tags', 'aria-hidden': 'true' });
    const leads = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    leads.setAttribute('class', 'hall-leads');
    overlay.append(leads);
    const lede = h('p', { class: 'lab-lede' });
    const note = h('p', { class: 'hall-scale' });
    const list = h('ol', { class: 'hall-parts' });
    const scale = h('ul', { class: 'hall-big' });
    const error = h('p', { class: 'lab-error', role: 'alert' });
    body.append(lede, h('div', { class: 'hall-view' }, canvas, overlay), note, list, scale, error);
    els = { canvas, overlay, leads, lede, note, list, scale, error, tags: new Map() };
    wireOrbit(canvas);
    once('/api/labs/reallook')
      .then((doc) => {
        text = doc;
        lede.textContent = say(doc.lede);
        note.textContent = say(doc.scale_note);
        list.replaceChildren(...doc.parts.map((p) => {
          const item = h(
            'li',
            { class: 'hall-part', 'data-part': p.part, tabindex: '0' },
            h('span', { class: 'hall-n', text: String(p.n) }),
            h(
              'div',
              {},
              h('p', { class: 'hall-name', text: say(p.name) }),
              h('p', { class: 'hall-real', text: say(p.real) }),
              h('p', { class: 'hall-figure', text: say(p.figure) }),
              h('p', { class: 'hall-source', text: t('Source: {source}', { source: say(p.source) }) }),
            ),
          );
          for (const [ev, on] of [['mouseenter', true], ['mouseleave', false], ['focus', true], ['blur', false]]) {
            item.addEventListener(ev, () => point(p.n, on));
          }
          return item;
        }));
        for (const p of doc.parts) {
          const tag = h('span', { class: 'hall-tag', 'data-n': String(p.n) }, h('b', { text: String(p.n) }), h('span', { text: say(p.name) }));
          overlay.append(tag);
          els.tags.set(p.n, tag);
        }
        scale.replaceChildren(...doc.scale.map((s) => h('li', { text: say(s) })), h('li', { class: 'hall-source', text: t('Source: {source}', { source: say(doc.scale_source) }) }));
        if (shown) start();
        else placeTags();
      })
      .catch((err) => (error.textContent = t("Could not load the data hall's notes ({error}).", { error: err.message })));
  }

  return {
    mount,
    onOpen() {
      shown = true;
      start();
    },
    onClose() {
      shown = false;
      stop();
    },
    info() {
      const tags = els ? [...els.tags.values()].filter((t) => !t.hidden).map((t) => Number(t.dataset.n)) : [];
      return {
        drawn: Boolean(hall),
        failed,
        parts: text ? text.parts.map((p) => p.part) : [],
        tagsInView: tags,
        colours: hall ? hall.distinctColours() : 0,
      };
    },
  };
}
