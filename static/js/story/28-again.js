// Chapter 28, "Again, and again": a counter climbs from step 1 to 1,000,000, a tenfold every
// couple of seconds. At each tenfold the field re-tones and a line of writing appears: what
// this tiny model really wrote after "Once upon a" at that step of a long real run (the
// story's climb, `trainingrun climb`, checkpoints at every tenfold). Past the last step that
// run trained, the counter goes on alone, and says so: no new shade, no new writing.
import { t } from '../i18n/lang.js';
import { h } from './figure.js';
import { TONES, toneOf } from '../scene/field/tones.js';
import { fmtInt as fmt } from '../ui/format.js';

export const TOP = 1_000_000;
export const DECADE_MS = 2200; // one tenfold of steps, on the page's clock
const TICK_MS = 100;

const MODEL_WORDS = { translate: 'no', lang: 'en' };

function shades(decade, trained) {
  const label = t("The field's shade now: steps {first} to {last}", { first: 10 ** decade, last: 10 ** (decade + 1) - 1 });
  return h('div', { class: 'sf-tones', role: 'img', 'aria-label': label },
    TONES.map((c, i) => h('span', { class: `sf-tone${i === decade ? ' sf-tone-now' : ''}${10 ** i > trained ? ' sf-tone-untrained' : ''}`, style: `--tone:${c}` },
      h('b', {}), h('small', { text: fmt(10 ** i) }))));
}

export function enter({ figure, store, story, reduced }) {
  const climb = story?.climb;
  if (!climb) return { update() {}, leave() {} };
  const decades = climb.decades;
  const trained = climb.steps;
  let t0 = performance.now();
  let timer = null;
  let shown = null; // what the figure shows: {step, decade, lines, past}

  const stepAt = (now) => (reduced() ? TOP : Math.min(TOP, Math.round(10 ** ((now - t0) / DECADE_MS))));

  const count = h('b', { class: 'sf-climb-n' });
  const tones = h('div', {});
  const lines = h('ol', { class: 'sf-writing' });
  const past = h('p', { class: 'sf-climb-past', hidden: true });
  figure.replaceChildren(
    h('p', { class: 'sf-climb-count' }, h('span', { text: t('step') }), ' ', count),
    tones,
    h('p', { class: 'sf-legend', text: t(`This model's own words after "{prompt}", at each tenfold of a real run of {steps} steps:`, { prompt: climb.prompt, steps: trained }) }),
    lines,
    past,
  );
  figure.hidden = false;

  function draw(step) {
    const reached = decades.filter((d) => d.step <= step);
    // The field's shade: the tenfold of the counter, up to the last one really trained.
    const decade = toneOf(Math.min(step, trained));
    const isPast = step > trained;
    count.textContent = fmt(step);
    count.classList.toggle('sf-untrained', isPast);
    if (!shown || shown.decade !== decade) {
      tones.replaceChildren(shades(decade, trained));
      store.set('fieldTone', Math.max(1, Math.min(step, trained)));
    }
    if (!shown || shown.lines !== reached.length) {
      lines.replaceChildren(...reached.map((d) => h('li', {},
        h('span', { class: 'sf-wstep', text: fmt(d.step) }),
        h('q', { ...MODEL_WORDS, title: `${climb.prompt} ${d.writing}`, text: d.writing }),
      )));
    }
    if (!shown || shown.past !== isPast) {
      past.hidden = !isPast;
      past.textContent = isPast ? t('Trained for real to step {n}: past it the counter goes on alone, with no new weights and no new writing.', { n: trained }) : '';
    }
    shown = { step, decade, lines: reached.length, past: isPast };
  }

  function tick() {
    const step = stepAt(performance.now());
    draw(step);
    if (step >= TOP && timer !== null) {
      clearInterval(timer);
      timer = null;
    }
  }

  function start() {
    t0 = performance.now();
    shown = null;
    if (timer !== null) clearInterval(timer);
    timer = setInterval(tick, TICK_MS);
    tick();
  }

  start();
  return {
    update() {},
    act() {
      start(); // "Run it for many more steps": the climb again from step 1
    },
    info: () => ({
      step: shown?.step ?? 0,
      decade: shown?.decade ?? -1,
      lines: decades.filter((d) => d.step <= (shown?.step ?? 0)).map((d) => ({ step: d.step, writing: d.writing })),
      past: shown?.past ?? false,
      trained,
      done: timer === null,
    }),
    leave() {
      if (timer !== null) clearInterval(timer);
      timer = null;
      store.set('fieldTone', false);
    },
  };
}
