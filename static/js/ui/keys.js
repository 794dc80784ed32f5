// The keyboard map: the one list of the page's keys. The help overlay lists every entry; the
// legend along the bottom of the page shows the entries that have a `legend` word. The first
// group is the source page's own map (kept as it was); the rest add help, full screen,
// explode, run controls and the clicker's PageDown / PageUp. Lab keys come from the labs at
// runtime. Keys are ignored while someone types in a field.

import { t } from '../i18n/lang.js';

// Labels and legends are read as they are drawn, in the page's language.
const key = (keys, show, label, legend) => ({ keys, show, get label() { return label(); }, get legend() { return legend?.(); } });

export const KEYMAP = [
  key(['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown'], 'arrows', () => t('rotate the view'), () => t('rotate')),
  key(['+', '=', '-', '_'], '+ / −', () => t('zoom in / out'), () => t('zoom')),
  key(['0'], '0', () => t('reset the view'), () => t('reset the view')),
  key(['1', '2', '3', '4'], '1–4', () => t('camera views'), () => t('jump to a view')),
  key(['s'], 'S', () => t('signal: show the data flowing on or off'), () => t('signal on or off')),
  key(['t'], 'T', () => t('guided tour on / off'), () => t('guided tour')),
  key(['l'], 'L', () => t('numbered labels on / off'), () => t('labels on or off')),
  key([' '], 'Space', () => t('spin the model slowly'), () => t('spin')),
  key(['?'], '?', () => t('this help'), () => t('more')),
  key(['f'], 'F', () => t('full screen')),
  key(['e'], 'E', () => t('explode: lift the network above the servers'), () => t('explode the fabric')),
  key(['p'], 'P', () => t('pause / resume the run')),
  key(['n'], 'N', () => t('next step (while paused)')),
  key(['k'], 'K', () => t('make a GPU fail (watch the rollback)')),
  key(['o'], 'O', () => t('one step in slow motion, block by block (O or Esc ends it)')),
  key(['PageDown', 'PageUp'], 'PgDn / PgUp', () => t('next / previous tour stop (clicker)')),
  key(['Enter'], 'Enter', () => t('next tour stop (while touring, with no button focused)')),
  key(['i'], 'I', () => t('more about this tour stop (the longer story)')),
  key(['g'], 'G', () => t('scale field: the cluster at 512, 4,096, 16,384, 131,072 GPUs, then live again')),
  key(['G'], 'Shift+G', () => t('the “One GPU” story (in it: PgDn / PgUp / arrows move, Space does the chapter’s action, Esc leaves)')),
  key(['z'], 'Z', () => t('scale field: fly from one live GPU out to the whole field and back')),
  key(['Escape'], 'Esc', () => t('close the tour and any panel')),
  key(['j'], 'J', () => t('follow the presenter again (any other key or a drag explores on your own)')),
];

function isTyping(target) {
  if (!target || !(target instanceof Element)) return false;
  if (target.isContentEditable) return true;
  const tag = target.tagName;
  if (tag === 'TEXTAREA' || tag === 'SELECT') return true;
  if (tag === 'INPUT') {
    const type = (target.getAttribute('type') || 'text').toLowerCase();
    return !['button', 'checkbox', 'radio', 'range', 'submit', 'reset', 'color'].includes(type);
  }
  return false;
}

export function mountKeys(actions, getLabKeys) {
  function handle(ev) {
    if (ev.defaultPrevented || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (isTyping(ev.target)) return;
    const key = ev.key;
    const lower = key.length === 1 ? key.toLowerCase() : key;
    let done = true;
    switch (lower) {
      case 'ArrowLeft':
        actions.rotate(-1, 0);
        break;
      case 'ArrowRight':
        actions.rotate(1, 0);
        break;
      case 'ArrowUp':
        actions.rotate(0, -1);
        break;
      case 'ArrowDown':
        actions.rotate(0, 1);
        break;
      case '+':
      case '=':
        actions.zoom(1);
        break;
      case '-':
      case '_':
        actions.zoom(-1);
        break;
      case '0':
        actions.reset();
        break;
      case '1':
      case '2':
      case '3':
      case '4':
        actions.view(Number(lower));
        break;
      case 's':
        actions.toggleSignal();
        break;
      case 't':
        actions.toggleTour();
        break;
      case 'l':
        actions.toggleLabels();
        break;
      case ' ':
        // Space spins, even on a toolbar button that kept the focus after a click: a clicker
        // or a stray key must never press "fail a GPU" again (Enter still presses buttons).
        // Inside an open panel's own controls Space keeps its usual meaning.
        if (ev.target instanceof Element && ev.target.closest('[role="dialog"]')) return;
        actions.toggleSpin();
        break;
      case '?':
        actions.toggleHelp();
        break;
      case 'f':
        actions.toggleFullscreen();
        break;
      case 'e':
        actions.toggleExplode();
        break;
      case 'p':
        actions.togglePause();
        break;
      case 'n':
        actions.stepOnce();
        break;
      case 'k':
        actions.failGpu();
        break;
      case 'o':
        actions.slowStep();
        break;
      case 'PageDown':
        actions.tourNext();
        break;
      case 'PageUp':
        actions.tourPrev();
        break;
      case 'Escape':
        actions.escape();
        break;
      case 'Enter':
        // A focused button, link or field keeps Enter for itself; otherwise it moves the
        // tour on, for keyboards and clickers that send Enter.
        if (ev.target instanceof Element && ev.target.closest('button, a[href], input, select, textarea, summary, [contenteditable]')) {
          done = false;
        } else {
          done = Boolean(actions.tourAdvance());
        }
        break;
      case 'i':
        actions.toggleTourMore();
        break;
      case 'g':
        // Shift+G is the story's; G alone steps the scale field.
        if (ev.shiftKey) done = false;
        else actions.fieldNext?.();
        break;
      case 'z':
        actions.fieldPath?.();
        break;
      default: {
        const lab = (getLabKeys() ?? []).find((k) => k.key.toLowerCase() === lower);
        if (lab) lab.open();
        else done = false;
      }
    }
    if (done) ev.preventDefault();
  }
  document.addEventListener('keydown', handle);
  return () => document.removeEventListener('keydown', handle);
}
