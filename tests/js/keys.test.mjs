// The key map (static/js/ui/keys.js): KEYMAP is the one list of the page's keys, and the
// handler does what each entry says. A stand-in `document` collects the keydown listener; a
// stand-in `Element` lets a key land on a field or a button.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { KEYMAP, mountKeys } from '../../static/js/ui/keys.js';

class Element {
  constructor(tag, { type = null, dialog = false, editable = false } = {}) {
    this.tagName = tag;
    this.type = type;
    this.dialog = dialog;
    this.isContentEditable = editable;
  }
  getAttribute(name) {
    return name === 'type' ? this.type : null;
  }
  closest(selector) {
    if (selector.includes('[role="dialog"]')) return this.dialog ? this : null;
    return ['BUTTON', 'A', 'INPUT', 'SELECT', 'TEXTAREA', 'SUMMARY'].includes(this.tagName) ? this : null;
  }
}
globalThis.Element = Element;

const listeners = new Set();
globalThis.document = {
  addEventListener: (type, fn) => type === 'keydown' && listeners.add(fn),
  removeEventListener: (type, fn) => type === 'keydown' && listeners.delete(fn),
};

/** Mount the keys with actions that record their calls; press(key, opts) -> [calls, prevented]. */
function mount({ touring = true, labKeys = [] } = {}) {
  const calls = [];
  const actions = new Proxy({}, {
    get: (_, name) => (...args) => {
      calls.push([name, ...args]);
      return name === 'tourAdvance' ? touring : undefined;
    },
  });
  const unmount = mountKeys(actions, () => labKeys);
  const press = (key, { target = null, ...mods } = {}) => {
    calls.length = 0;
    let prevented = false;
    const ev = { key, target, shiftKey: false, ctrlKey: false, metaKey: false, altKey: false, defaultPrevented: false, ...mods, preventDefault: () => { prevented = true; } };
    for (const fn of listeners) fn(ev);
    return [calls.map((c) => [...c]), prevented];
  };
  return { press, unmount };
}

test('no key is in the map twice', () => {
  const all = KEYMAP.flatMap((k) => k.keys);
  assert.equal(new Set(all).size, all.length, all.filter((k, i) => all.indexOf(k) !== i).join(' '));
  // Each entry says what it is for, and how the help shows it.
  for (const k of KEYMAP) assert.ok(k.show.length > 0 && k.label.length > 3, JSON.stringify(k));
});

test("the source page's keys do what they always did", () => {
  // The design's map: arrows rotate, + / - zoom, 0 reset, 1-4 views, S signal, T tour,
  // L labels, Space spin.
  const { press, unmount } = mount();
  try {
    assert.deepEqual(press('ArrowLeft')[0], [['rotate', -1, 0]]);
    assert.deepEqual(press('ArrowRight')[0], [['rotate', 1, 0]]);
    assert.deepEqual(press('ArrowUp')[0], [['rotate', 0, -1]]);
    assert.deepEqual(press('ArrowDown')[0], [['rotate', 0, 1]]);
    assert.deepEqual(press('+')[0], [['zoom', 1]]);
    assert.deepEqual(press('=')[0], [['zoom', 1]]);
    assert.deepEqual(press('-')[0], [['zoom', -1]]);
    assert.deepEqual(press('0')[0], [['reset']]);
    for (const n of [1, 2, 3, 4]) assert.deepEqual(press(String(n))[0], [['view', n]]);
    assert.deepEqual(press('s')[0], [['toggleSignal']]);
    assert.deepEqual(press('S')[0], [['toggleSignal']]); // with Caps Lock as without
    assert.deepEqual(press('t')[0], [['toggleTour']]);
    assert.deepEqual(press('l')[0], [['toggleLabels']]);
    assert.deepEqual(press(' ')[0], [['toggleSpin']]);
  } finally {
    unmount();
  }
});

test('every key in the map does something, and says so by keeping the key for itself', () => {
  const { press, unmount } = mount();
  try {
    for (const entry of KEYMAP) {
      for (const key of entry.keys) {
        // Two keys the map lists are another module's: Shift+G opens the story
        // (static/js/story/lazy.js) and J follows the presenter again
        // (static/js/presenter/index.js); this handler passes them on.
        const shift = key === 'G';
        const [calls, prevented] = press(key, { shiftKey: shift });
        if (shift || key === 'j') {
          assert.deepEqual([calls, prevented], [[], false]);
          continue;
        }
        assert.equal(calls.length, 1, `${key} (${entry.label}) called ${JSON.stringify(calls)}`);
        assert.equal(prevented, true, `${key} was not kept`);
      }
    }
  } finally {
    unmount();
  }
});

test('keys outside the map are left to the browser, unless a lab has claimed them', () => {
  const opened = [];
  const { press, unmount } = mount({ labKeys: [{ key: 'M', open: () => opened.push('memory') }] });
  try {
    const mapped = new Set(KEYMAP.flatMap((k) => k.keys.map((x) => (x.length === 1 ? x.toLowerCase() : x))));
    for (const key of ['q', 'x', 'Tab', 'F5', '9']) {
      assert.ok(!mapped.has(key));
      assert.deepEqual(press(key), [[], false], key);
    }
    assert.deepEqual(press('m'), [[], true]);
    assert.deepEqual(opened, ['memory']);
  } finally {
    unmount();
  }
});

test('typing in a field, or a key with Ctrl, Alt or Cmd, is not a command', () => {
  const { press, unmount } = mount();
  try {
    for (const target of [new Element('INPUT', { type: 'text' }), new Element('TEXTAREA'), new Element('SELECT'), new Element('DIV', { editable: true })]) {
      assert.deepEqual(press('t', { target }), [[], false], target.tagName);
    }
    // A checkbox or a slider has no text to type: keys still work there.
    assert.deepEqual(press('t', { target: new Element('INPUT', { type: 'checkbox' }) })[0], [['toggleTour']]);
    assert.deepEqual(press('t', { ctrlKey: true }), [[], false]);
    assert.deepEqual(press('t', { altKey: true }), [[], false]);
    assert.deepEqual(press('t', { metaKey: true }), [[], false]);
    assert.deepEqual(press('t', { defaultPrevented: true }), [[], false]);
  } finally {
    unmount();
  }
});

test('Space spins even on a clicked button; Enter moves the tour only off buttons', () => {
  const { press, unmount } = mount();
  try {
    const button = new Element('BUTTON');
    assert.deepEqual(press(' ', { target: button }), [[['toggleSpin']], true]);
    // Inside an open panel Space keeps its usual meaning.
    assert.deepEqual(press(' ', { target: new Element('BUTTON', { dialog: true }) }), [[], false]);
    assert.deepEqual(press('Enter', { target: button }), [[], false]);
    assert.deepEqual(press('Enter', { target: new Element('DIV') }), [[['tourAdvance']], true]);
  } finally {
    unmount();
  }
  // Enter with no tour to move on is left to the page.
  const idle = mount({ touring: false });
  try {
    assert.deepEqual(idle.press('Enter'), [[['tourAdvance']], false]);
  } finally {
    idle.unmount();
  }
});

test('unmounting takes the handler away', () => {
  const { press, unmount } = mount();
  unmount();
  assert.equal(listeners.size, 0);
  assert.deepEqual(press('t'), [[], false]);
});
