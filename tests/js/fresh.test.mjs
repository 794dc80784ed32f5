// Chapter 12's time bar (static/js/story/11-timebar.js) calls its run fresh once it is seen
// to start over. The page may never see the old run's steps (the restart is asked as soon as
// the watch is granted) and, at full speed, may first see the new run past step 1: the
// player's word that it started the run over for this chapter is then what says so.
import { test } from 'node:test';
import assert from 'node:assert/strict';

// Just enough of a document for the chapter's figure (labs/dom.js h()).
function element() {
  const el = {
    children: [],
    textContent: '',
    className: '',
    setAttribute(k, v) {
      if (k === 'class') el.className = v;
    },
    addEventListener() {},
    append(...kids) {
      el.children.push(...kids);
    },
    replaceChildren(...kids) {
      el.children = kids;
    },
    get childElementCount() {
      return el.children.length;
    },
  };
  return el;
}
const classes = (el) => [el.className, ...(el.children ?? []).flatMap((c) => (typeof c === 'object' ? classes(c) : []))];

async function chapter12({ startedOver }) {
  globalThis.document = { createElement: element };
  const { timeBar } = await import('../../static/js/story/11-timebar.js');
  const store = {
    state: {
      watching: 'one-gpu.one',
      hello: { run_id: 'new', watching: 'one-gpu.one', config: { gpus: 1 }, trace_kinds: [] },
      status: { step: 6 }, // the new run's first steps went by before the page drew one
      step: { step: 6, seq: 6, sim_step_s: 0.001 },
    },
  };
  const figure = element();
  const bars = timeBar({ figure, store, memo: {}, chapter: { run: 'one', fresh: true }, startedOver });
  bars.update();
  delete globalThis.document;
  return classes(figure).includes('sf-fresh');
}

test('a run started over for the chapter is fresh, even first seen past step 1', async () => {
  assert.equal(await chapter12({ startedOver: () => true }), true);
});

test('a run merely watched past step 1 is not called fresh', async () => {
  assert.equal(await chapter12({ startedOver: () => false }), false);
  assert.equal(await chapter12({ startedOver: undefined }), false);
});
