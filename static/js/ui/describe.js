// What each step did, in words, for screen readers: a polite live region (visually hidden)
// that says what moved and what the numbers are, from the step the server sent (the live
// values of ui/live.js). A running class at several steps a second would drown a reader, so a
// new description is spoken at most every MIN_GAP_MS; a paused run's single steps (N) and
// every tour stop (the caption region) are spoken as they come.

import { fillTemplate, liveValues } from './live.js';
import { word } from './words.js';

const MIN_GAP_MS = 12000;

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
    const text = fillTemplate(word('stepWords'), liveValues(store));
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
