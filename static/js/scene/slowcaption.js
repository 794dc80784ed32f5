// The slow-motion caption: one line over the scene naming the block of the step on screen
// ("Forward: every GPU guesses ..."), from steptext.js, and, in a planned step whose blocks
// hold several kinds of work at once, a second line naming the others ("also: Pipeline
// hand-off · Waiting for a turn"). It is the scene's own element (the page shell only hosts
// it) and is styled by static/css/scene.css, linked from here.

import { t } from '../i18n/lang.js';
import { KIND_MEANING } from './palette.js';
import { alsoText, stepText } from './steptext.js';

const CSS_HREF = '/static/css/scene.css';
// The meaning colour each kind is drawn in: the palette's one table.
const KIND_COLOUR = KIND_MEANING;

function linkStyles() {
  if (document.querySelector(`link[href="${CSS_HREF}"]`)) return;
  const link = document.createElement('link');
  link.rel = 'stylesheet';
  link.href = CSS_HREF;
  document.head.append(link);
}

function div(cls, parent) {
  const node = document.createElement('div');
  node.className = cls;
  parent?.append(node);
  return node;
}

/** mountSlowCaption(store) -> { update(frame), dispose() } */
export function mountSlowCaption(store) {
  linkStyles();
  const box = div('slowmo');
  box.id = 'slowmo';
  box.hidden = true;
  box.setAttribute('role', 'status');
  box.setAttribute('aria-live', 'polite');
  const meta = div('slowmo-meta', box);
  const line = div('slowmo-line', box);
  const swatch = document.createElement('span');
  swatch.className = 'slowmo-swatch';
  swatch.setAttribute('aria-hidden', 'true');
  const name = document.createElement('strong');
  const text = document.createElement('span');
  line.append(swatch, name, text);
  const also = div('slowmo-also', box);
  also.hidden = true;
  const hint = div('slowmo-hint', box);
  hint.textContent = t('Esc or O: back to full speed');
  document.body.append(box);

  let shownKey = '';
  const state = { kind: null, caption: '', also: '', index: -1, count: 0, step: null, waiting: false };

  function render(frame) {
    const on = Boolean(store.state.slowMotion) || Boolean(frame?.slow);
    const slowNow = Boolean(frame?.slow && frame.phase);
    const waiting = on && !slowNow;
    const kind = slowNow ? frame.phase : null;
    const key = `${on}|${kind}|${frame?.blockIndex}|${frame?.step?.seq}|${waiting}`;
    if (key === shownKey) return;
    shownKey = key;
    box.hidden = !on;
    box.classList.toggle('projector', Boolean(store.state.projector));
    if (!on) {
      Object.assign(state, { kind: null, caption: '', also: '', index: -1, count: 0, step: null, waiting: false });
      return;
    }
    also.hidden = true;
    if (waiting) {
      meta.textContent = t('Slow motion');
      swatch.dataset.kind = '';
      name.textContent = '';
      text.textContent = t('waiting for the next step to arrive…');
      Object.assign(state, { kind: null, caption: text.textContent, also: '', index: -1, count: 0, step: null, waiting: true });
      return;
    }
    const w = stepText(kind);
    const stepNo = frame.step?.step;
    meta.textContent = t('Slow motion · step {step} · {i} of {n}', { step: stepNo ?? '–', i: frame.blockIndex + 1, n: frame.blockCount });
    swatch.dataset.kind = kind;
    const colour = frame.palette?.[KIND_COLOUR[kind]];
    swatch.style.background = colour || 'transparent';
    swatch.style.borderColor = colour || frame.palette?.text || '#fff';
    name.replaceChildren(w.name, ': ');
    text.textContent = w.caption;
    // A planned step's block: what else goes on at the same time.
    // So does a data-parallel backward with gradient buckets all-reduced beside it.
    const beside = frame.block?.kinds?.has('allreduce_hidden');
    const others = frame.planned || beside ? alsoText(frame.block?.kinds, kind) : '';
    also.hidden = !others;
    // Each name in an element of its own, so another language's words find each one.
    also.replaceChildren(
      ...(others
        ? [t('also:'), ' ', ...others.split(' · ').flatMap((n, i) => {
          const span = document.createElement('span');
          span.textContent = n;
          return i ? [' · ', span] : [span];
        })]
        : []),
    );
    Object.assign(state, {
      kind,
      caption: `${w.name}: ${w.caption}`,
      also: others,
      index: frame.blockIndex,
      count: frame.blockCount,
      step: stepNo ?? null,
      waiting: false,
    });
  }

  const unsub = [
    store.on('change:slowMotion', () => render(null)),
    store.on('change:projector', () => {
      shownKey = '';
      box.classList.toggle('projector', Boolean(store.state.projector));
    }),
  ];

  return {
    update: render,
    /** What the caption says now: {kind, caption, index, count, step, waiting}. */
    state: () => ({ ...state, shown: !box.hidden }),
    dispose() {
      for (const u of unsub) u();
      box.remove();
    },
  };
}
