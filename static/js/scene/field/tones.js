// The shades the scale field moves through as the live run trains, one per tenfold of steps
// (1-9, 10-99, 100-999, ...): from a cold, untrained grey-blue to the warm green of a model
// that has learned. The field (field.js) and the story's "again" chapter share them.
export const TONES = ['#7f8fb0', '#6f9bb8', '#5fa8b0', '#58b39a', '#6dbb7e', '#93c26a', '#bcc35e'];

/** Which shade step `step` is in: 0 for steps 1-9, 1 for 10-99, ...; -1 before step 1. */
export function toneOf(step) {
  if (!(step > 0)) return -1;
  return Math.min(TONES.length - 1, Math.floor(Math.log10(step)));
}
