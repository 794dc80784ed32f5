// What each step did, in words, for screen readers: a polite live region (visually hidden)
// that says what moved and what the numbers are, from the step the server sent (the live
// values of ui/live.js). A running class at several steps a second would drown a reader, so a
// new description is spoken at most every MIN_GAP_MS; a paused run's single steps (N) and
// every tour stop (the caption region) are spoken as they come.

import { t } from '../i18n/lang.js';
import { bytes, loss, percent, whole } from '../i18n/units.js';
import { lastProbe } from './live.js';

const MIN_GAP_MS = 12000;

/** The step in one paragraph for a screen reader, from the page's state. */
export function stepWords(s) {
  const step = s.step;
  const top = step?.probe?.top?.[0] ?? lastProbe(s)?.top?.[0];
  const gpus = s.hello?.topology?.gpus?.length ?? s.hello?.config?.gpus;
  const v = {
    step: whole(s.status?.step ?? step?.step),
    gpus: whole(gpus),
    passes: whole(step?.ring?.passes),
    bytes: bytes(step?.ring?.bytes_per_gpu),
    loss: loss(step?.loss ?? s.status?.loss),
    word: top ? top.token : '…',
    p: top ? percent(top.p) : '–',
  };
  return gpus === 1
    ? t('Step {step}: one GPU guessed the next words for the whole batch and worked back to its nudges; with one GPU there is nothing to average. Loss now {loss}. The model bets on "{word}" after "Once upon a" ({p}).', v)
    : t('Step {step}: {gpus} GPUs each guessed the next words for their slice of the batch and worked back to their nudges; the ring averaged them in {passes} passes, {bytes} sent by each GPU. Loss now {loss}. The model bets on "{word}" after "Once upon a" ({p}).', v);
}

export function mountStepWords(store) {
  const region = document.createElement('p');
  region.id = 'step-words';
  region.className = 'sr-only';
  region.setAttribute('aria-live', 'polite');
  region.setAttribute('aria-atomic', 'true');
  document.body.append(region);
  document.getElementById('stage')?.setAttribute('aria-describedby', 'step-words');
  let last = 0;

  function say() {
    const text = stepWords(store.state);
    if (text !== region.textContent) region.textContent = text;
  }

  store.on('step', () => {
    const paused = store.state.status?.state === 'paused';
    const now = performance.now();
    if (!paused && now - last < MIN_GAP_MS) return;
    last = now;
    say();
  });
  store.on('snapshot', say);
  return { say, get text() {
    return region.textContent;
  } };
}
