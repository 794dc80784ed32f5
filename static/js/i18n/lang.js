// Which language the page speaks: `?lang=de` in the address, else the choice remembered
// from the picker, else English. English is the page's own words; another language loads
// its words (scenes/locales/<lang>/) and the translator (./translate.js) before the page
// mounts, so nothing shows in English first. `t(key, values)` makes a text in the page's
// language as it is drawn; `tr(text)` puts English already made into it (docs/languages.md).

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

let translate = (text) => text;

/** The page's words in `code`: `t(key, values, count)` makes a text, `key` its English
 * ([one, other] where `count` picks the form), `{name}`s filled from `values` and numbers
 * written the language's way; `num(x, digits)` writes a number (1,024.5 / 1.024,5); `made`
 * holds what t() wrote in another language (and join() put together), which the translator leaves (docs/languages.md). */
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
    // Written the language's way already: the translator must not read it as English again
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
  // What t() made, in another language: the translator must leave it.
  function keep(out) {
    if (code !== 'en') {
      if (made.size > 5000) made.clear();
      made.add(out.replace(/\s+/g, ' ').trim());
    }
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

/** The text in the page's language (English until, or unless, another one is loaded). */
export function tr(text) {
  return translate(text);
}

/** Load the language's words and start translating the page; resolves when the page can
 * mount. A language whose words cannot be loaded leaves the page in English. */
export async function startLanguage() {
  document.documentElement.lang = lang;
  if (lang === 'en') return;
  try {
    const { startTranslating } = await import('./translate.js');
    const translator = await startTranslating(lang, { keep: (core) => page.made.has(core) });
    page = wordsFor(lang, translator.words);
    translate = translator.text;
  } catch (err) {
    console.warn(`the page's words in ${LANGS[lang]} could not be loaded; it stays in English`, err);
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
