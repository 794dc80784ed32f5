// The scene's and the story's own texts (captions, cards, chapters) in the page's language:
// the English template is the key of its words; {name}s are filled from live values as it is
// drawn, and what it made is marked as made in the language (docs/languages.md).
import { join, words } from './lang.js';

/** The key, on live values, of the Set of names whose values do not exist yet. */
export const NOT_YET = Symbol('notYet');

/** The {names} a template quotes. */
export function quoted(template) {
  return [...String(template ?? '').matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
}

// A count of one, written any language's way: "1", not "1,000" or "1.000".
const isOne = (v) => Number(String(v).replace(/[\s,.\u00a0\u202f](?=\d{3}(?!\d))/g, '')) === 1;

/** Fill "{loss}"-style placeholders; unknown names stay visible as a dash, not as braces.
 * A template that quotes a value which does not exist yet (values[NOT_YET]) gives `notYet`
 * filled in instead, when there is one. */
export function fillTemplate(template, values, notYet = '') {
  const missing = values?.[NOT_YET];
  if (notYet && missing?.size && quoted(template).some((n) => missing.has(n))) {
    return fillTemplate(notYet, values);
  }
  // {name} is the value; {name:one|other} the words for a count of it: "1 GPU is", "8 GPUs are".
  return String(template ?? '').replace(/\{(\w+)(?::([^{}|]*)\|([^{}]*))?\}/g, (_, name, one, other) => {
    if (one !== undefined) return isOne(values?.[name]) ? one : other;
    return name in values ? String(values[name]) : '–';
  });
}

/** say() over one language's words: `{ words, join }` from wordsFor(), or lang.js's page. */
export function sayFor(w) {
  const own = (text) => {
    const x = text ? w.words(text) : undefined;
    return typeof x === 'string' ? x : undefined;
  };
  return (template, values = {}, notYet = '') => {
    const here = own(template);
    // No words for it: the English, which the leftover check names.
    if (here === undefined) return fillTemplate(template, values, notYet);
    return w.join([fillTemplate(here, values, notYet && (own(notYet) ?? notYet))]);
  };
}

/** A scene template in the page's language, {name}s filled from `values`. */
export const say = sayFor({ words, join });
