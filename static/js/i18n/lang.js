// Which language the page speaks: `?lang=de` in the address, else the choice remembered
// from the picker, else English. English is the page's own words; another language loads
// its words (scenes/locales/<lang>/) and the translator (./translate.js) before the page
// mounts, so nothing shows in English first. `tr(text)` gives the words drawn on canvases
// (chart axes, 3D signs), which the translator cannot see in the page.

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
    const translator = await startTranslating(lang);
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
