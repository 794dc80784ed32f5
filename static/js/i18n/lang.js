// Which language the page speaks: `?lang=de` in the address, else the choice remembered
// from the picker, else English. Every language, English too, loads its words
// (scenes/locales/<lang>/) before the page mounts, and the page's own HTML is put into them
// once (./translate.js `localize`). `t(key, values)` makes a text in the page's language as it
// is drawn; `tr(text)` finds words for a text the server made in English (docs/languages.md).

export const LANGS = { en: 'English', de: 'Deutsch', es: 'Español' };
const KEY = 'trainingRun.lang';

function pick() {
  const asked = new URLSearchParams(window.location.search).get('lang');
  if (asked !== null) return (asked || '').toLowerCase().slice(0, 8);
  try {
    return localStorage.getItem(KEY) || 'en';
  } catch {
    return 'en';
  }
}

const picked = typeof window !== 'undefined' ? pick() : 'en';
export const lang = Object.hasOwn(LANGS, picked) ? picked : 'en';

let translator = null;

/** The page's words in `code`: `t(key, values, count)` makes a text, `key` its English
 * ([one, other] where `count` picks the form), `{name}`s filled from `values` and numbers
 * written the language's way; `num(x, digits)` writes a number (1,024.5 / 1.024,5); `made`
 * holds what t() wrote (and join() put together), which the leftover check passes (docs/languages.md). */
export function wordsFor(code, words = {}) {
  const locale = code === 'en' ? 'en-US' : code;
  const EN = new Intl.PluralRules('en-US');
  const plurals = new Intl.PluralRules(locale);
  const formats = new Map();
  const made = new Set();
  // digits: that many decimals; 'up to N': as many as the number has, at most N;
  // {percent: N}: a share (0.5) as a percentage with N decimals, the language's way (50 %)
  function num(x, digits = 0) {
    const key = JSON.stringify(digits);
    if (!formats.has(key)) {
      const pct = typeof digits === 'object' && digits !== null;
      const n = pct ? digits.percent : typeof digits === 'number' ? digits : Number(String(digits).replace('up to ', ''));
      const min = pct || typeof digits === 'number' ? n : 0;
      formats.set(key, new Intl.NumberFormat(locale, { style: pct ? 'percent' : 'decimal', minimumFractionDigits: min, maximumFractionDigits: n }));
    }
    // Written the language's way already: tr() must not read it as English again
    // (4.096 in German is four thousand and ninety-six, not 4.096).
    return Number.isFinite(Number(x)) ? keep(formats.get(key).format(Number(x))) : '–';
  }
  function t(key, values = {}, count) {
    const many = Array.isArray(key);
    const k = many ? key[EN.select(Number(count)) === 'one' ? 0 : 1] : key;
    const forms = words[many ? key[1] : key];
    // A language's own forms by count live under the English "other" form.
    const w = typeof forms === 'object' ? forms[plurals.select(Number(count))] ?? forms.other : words[k] ?? k;
    const out = w.replace(/\{(\w+)\}/g, (all, name) => {
      const v = values[name];
      return v === undefined ? all : typeof v === 'number' ? num(v, 'up to 3') : String(v);
    });
    return keep(out);
  }
  // What was made in the language, for the leftover check (translate.js watchLeftovers).
  function keep(out) {
    if (made.size > 20_000) made.clear();
    made.add(out.replace(/\s+/g, ' ').trim());
    return out;
  }
  const own = (key) => (Object.hasOwn(words, key) ? words[key] : undefined);
  return { t, num, made, join: (parts, sep = ' ') => keep(parts.join(sep)), words: own };
}

let page = wordsFor('en');
export const t = (key, values, count) => page.t(key, values, count);
export const num = (x, digits) => page.num(x, digits);
/** Sentences t() made, as one text (a space between them, or `sep`). */
export const join = (parts, sep) => page.join(parts, sep);
/** The language's own words for `key`, or undefined (English, or none). */
export const words = (key) => page.words(key);

/** Words for a text the server made in English: exact, or by a pattern key with the
 * numbers in it written the language's way; the English where there are none. */
export function tr(text) {
  const s = String(text ?? '');
  return translator ? page.join([translator.text(s)]) : s;
}

/** Ask for the leftover check: `?words=check`, or a test's `window.trainingRunCheckWords`. */
function checking() {
  return window.trainingRunCheckWords === true || new URLSearchParams(window.location.search).get('words') === 'check';
}

/** Load the language's words and put the page's own HTML into them; resolves when the page
 * can mount. Words that cannot be loaded leave the page in its English keys. */
export async function startLanguage() {
  document.documentElement.lang = lang;
  try {
    const { loadWords, localize, makeTranslator, watchLeftovers } = await import('./translate.js');
    const words = await loadWords(lang);
    page = wordsFor(lang, words);
    translator = makeTranslator(lang, words, { keep: (core) => page.made.has(core) });
    localize(document, translator, (out) => page.join([out]));
    window.trainingRunI18n = translator; // its words, and what it found no words for
    // English is what the keys are written in: nothing shown in it can be left over.
    if (checking() && lang !== 'en') watchLeftovers(document, translator, (core) => page.made.has(core));
  } catch (err) {
    console.warn(`the page's words in ${LANGS[lang]} could not be loaded`, err);
  }
}

/** Switch language: remember it and load the page again in it. */
export function chooseLanguage(next) {
  if (!Object.hasOwn(LANGS, next)) return;
  try {
    localStorage.setItem(KEY, next);
  } catch {
    // storage disabled: the address still carries the choice
  }
  const url = new URL(window.location.href);
  url.searchParams.set('lang', next);
  window.location.assign(`${url.pathname}${url.search}${url.hash}`);
}

/** The language picker in the help panel, and the sheet links carrying the language. */
export function mountLanguagePicker(root = document) {
  const select = root.getElementById('lang-pick');
  if (select) {
    select.value = lang;
    select.addEventListener('change', () => chooseLanguage(select.value));
  }
  if (lang === 'en') return;
  for (const a of root.querySelectorAll('a[href^="/sheet"]')) {
    const url = new URL(a.getAttribute('href'), window.location.origin);
    url.searchParams.set('lang', lang);
    a.setAttribute('href', `${url.pathname}${url.search}`);
  }
}
