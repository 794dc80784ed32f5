// One sentence a step for a screen reader, in a live region nobody sees: "Step 41: loss
// 2.860, all 32 GPUs agreed on the update." At most one every `EVERY_MS`, always the latest
// step, so a reader is told how the run goes without being talked over.

import { num, t } from '../i18n/lang.js';

export const EVERY_MS = 5000;

/** The sentence for a step on a run of `gpus` GPUs, `down` of them failed now. */
export function stepSentence(step, gpus, down = 0) {
  const v = { step: step.step, loss: num(step.loss, 3), gpus, down };
  if (down > 0) return t('Step {step}: loss {loss}, {down} of {gpus} GPUs down; the run goes on from its last checkpoint.', v);
  if (gpus === 1) return t('Step {step}: loss {loss}, 1 GPU updated its weights.', v);
  return t('Step {step}: loss {loss}, all {gpus} GPUs agreed on the update.', v);
}

export function mountAnnouncer(store, { now = () => performance.now(), every = EVERY_MS } = {}) {
  const region = document.createElement('p');
  region.className = 'sr-only';
  region.id = 'sr-step';
  region.setAttribute('aria-live', 'polite');
  document.body.append(region);
  let last = -Infinity;
  let timer = null;
  const say = () => {
    timer = null;
    const s = store.state;
    if (!s.step) return;
    last = now();
    region.textContent = stepSentence(s.step, s.hello?.config?.gpus ?? 0, s.failedGpus?.size ?? 0);
  };
  const soon = () => {
    if (timer) return; // the latest step is said when the wait is over
    const wait = last + every - now();
    if (wait <= 0) say();
    else timer = setTimeout(say, wait);
  };
  store.on('step', soon);
  store.on('snapshot', soon); // where the run stands when the page opens (a paused run too)
  return { region, say };
}
