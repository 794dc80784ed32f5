// A language's words (scenes/locales/<lang>/), and three uses of them that are not t():
// - `localize(root)` puts the page's own HTML (its headings, buttons, titles) into the
//   language once, before the page mounts: each text and title, label and placeholder is a
//   key, looked up exactly;
// - `makeTranslator(...).text(s)` finds words for a text the server made in English (a
//   refusal, a reason, a datasheet's source line): exactly, or by a pattern key ("GPU {n}
//   failed at step {step}") with the numbers in it written the language's way;
// - `watchLeftovers(root)`, only when asked (`?words=check`), lists every text that shows in
//   the page without having been made in its language: the language walk reads `misses`,
//   and so does whoever adds the missing words.
//
// Left as it is: anything inside translate="no" (the model's own English words, names), and
// text with no letters but numbers and units.

const ATTRS = ['title', 'aria-label', 'placeholder', 'alt', 'aria-description', 'data-tip'];
// Units and symbols that read the same in every language the page speaks.
const UNITS = new Set([
  'ms', 's', 'µs', 'us', 'ns', 'min', 'h', 'd', 'B', 'KB', 'MB', 'GB', 'TB', 'PB', 'KiB', 'MiB', 'GiB',
  'TiB', 'k', 'M', 'x', 'GB/s', 'TB/s', 'Gb/s', 'FLOP', 'FLOPs', 'TFLOP/s', 'PFLOP/s', 'EFLOP/s', 'W', 'kW', 'MW',
  'tp', 'pp', 'dp', 'ep', // a parallel plan's factors: "tp 8 x pp 4 x dp 32"
]);
const CACHE_MAX = 20_000;
// A placeholder named word, top_word, ..._word holds the model's own English (what it reads
// and guesses): it is kept exactly as captured, never looked up.
const VERBATIM = /(^|_)word$/;
const ADDRESS = /^(?:https?:\/\/|www\.)\S+$|^[\w.-]+:\d+(?:\/\S*)?$/;

/** Every area of the language's words merged, as GET /api/locale/<lang> serves them. */
export async function loadWords(lang) {
  const res = await fetch(`/api/locale/${encodeURIComponent(lang)}`);
  if (!res.ok) throw new Error(`HTTP ${res.status}`);
  return res.json();
}

export function makeTranslator(lang, words, { keep = () => false } = {}) {
  const exact = new Map();
  const patterns = [];
  for (const [key, value] of Object.entries(words)) {
    if (typeof value !== 'string') continue; // a word's forms by count: for t() only
    if (/\{\w+\}/.test(key)) patterns.push(compile(key, value));
    else exact.set(norm(key), value);
  }
  // The most specific first: more fixed text wins over a looser pattern.
  patterns.sort((a, b) => b.fixed - a.fixed);
  const number = numberWriter(lang);
  const cache = new Map();
  const misses = new Map();

  function lookup(core) {
    const hit = exact.get(core);
    if (hit !== undefined) return hit;
    for (const p of patterns) {
      if (!p.needles.every((n) => core.includes(n))) continue;
      const m = p.re.exec(core);
      if (!m) continue;
      // Every filled-in part must have words of its own, or be a number or a name; a part
      // that is an English phrase means this pattern only looked like a fit ("GPU {n}"
      // against "GPU 3 failed"): try the next one.
      const filled = p.names.map((name, i) => (VERBATIM.test(name) ? m[i + 1] : part(m[i + 1])));
      if (filled.includes(undefined)) continue;
      return p.value.replace(/\{(\w+)\}/g, (all, name) => {
        const i = p.names.indexOf(name);
        return i < 0 ? all : filled[i];
      });
    }
    return undefined;
  }

  // A filled-in value: words of its own, or a number or a name written the language's way;
  // undefined for English words the locale does not know.
  function part(v) {
    const core = norm(v);
    if (!core) return v;
    const hit = lookup(core);
    if (hit !== undefined) return hit;
    if (ADDRESS.test(core)) return v;
    return nameLike(core) ? number(v) : undefined;
  }

  /** The text in this language, or undefined when the locale has no words for it. */
  function translateText(text, where = '') {
    if (cache.has(text)) return cache.get(text);
    const core = norm(text);
    if (keep(core)) return text; // made in this language by t() already
    let out;
    if (!core || !hasWords(core)) out = number(text);
    else if (ADDRESS.test(core)) out = text; // a link or an address reads the same everywhere
    else {
      // English words the file says no other way are their own key.
      const hit = lookup(core) ?? (lang === 'en' ? core : undefined);
      if (hit !== undefined) {
        const lead = text.match(/^\s*/)[0];
        const tail = text.match(/\s*$/)[0];
        out = `${lead}${hit}${tail}`;
      } else {
        out = undefined;
        if (misses.size < 2000) misses.set(core, where);
      }
    }
    if (cache.size > CACHE_MAX) cache.clear();
    cache.set(text, out);
    return out;
  }

  return {
    lang,
    words,
    misses,
    size: exact.size + patterns.length,
    translate: translateText,
    text: (t) => translateText(String(t ?? '')) ?? String(t ?? ''),
    number,
  };
}

function norm(s) {
  return String(s).replace(/\s+/g, ' ').trim();
}

// Letters that are not just units: "12.5 ms" has none, "GPU 3 waits" has.
function hasWords(core) {
  const tokens = core.match(/[A-Za-zÀ-ÿ][A-Za-zÀ-ÿ/]*/g);
  if (!tokens) return false;
  return tokens.some((t) => !UNITS.has(t));
}

// Numbers, units and names (H100, NVLink, bf16, 70B, GPU): no plain lower-case word in it.
function nameLike(core) {
  const tokens = core.match(/[A-Za-zÀ-ÿ][\wÀ-ÿ/+.-]*/g) ?? [];
  return tokens.every((t) => UNITS.has(t) || /\d/.test(t) || /[A-Z]/.test(t.slice(1)) || /^[A-Z]$/.test(t));
}

function compile(key, value) {
  const names = [];
  const chunks = [];
  let src = '^';
  let last = 0;
  const k = norm(key);
  for (const m of k.matchAll(/\{(\w+)\}/g)) {
    const lit = k.slice(last, m.index);
    if (lit) chunks.push(lit);
    src += escape(lit) + '(.+?)';
    names.push(m[1]);
    last = m.index + m[0].length;
  }
  const tail = k.slice(last);
  if (tail) chunks.push(tail);
  src += `${escape(tail)}$`;
  const needles = chunks.map((c) => c.trim()).filter(Boolean);
  return { re: new RegExp(src, 's'), names, value, fixed: chunks.join('').length, needles };
}

function escape(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Re-write the page's English numbers (1,024 and 2.5) the way `lang` writes them. IP
 * addresses, versions, times of day and anything in a link are left alone. */
function numberWriter(lang) {
  if (lang === 'en') return (t) => t;
  const formats = new Map();
  const fmt = (decimals) => {
    if (!formats.has(decimals)) {
      formats.set(
        decimals,
        new Intl.NumberFormat(lang, { minimumFractionDigits: decimals, maximumFractionDigits: decimals }),
      );
    }
    return formats.get(decimals);
  };
  const NUM = /(?<![\d.,:/\w])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d{4,})(?![\d:/]|[.,]\d)/g;
  // "99 %" in German and Spanish
  const parts = new Intl.NumberFormat(lang, { style: 'percent' }).formatToParts(0.5);
  const pctGap = parts.find((p, i) => p.type === 'literal' && parts[i + 1]?.type === 'percentSign')?.value ?? '';
  return (text) => {
    const s = String(text);
    if (!/\d/.test(s) || /:\/\/|www\.|\?\w+=/.test(s)) return s;
    const out = s.replace(NUM, (m) => {
      const decimals = m.includes('.') ? m.split('.')[1].length : 0;
      const v = Number(m.replace(/,/g, ''));
      return Number.isFinite(v) ? fmt(decimals).format(v) : m;
    });
    return pctGap ? out.replace(/(\d)%/g, `$1${pctGap}%`) : out;
  };
}

// ---- the page ----------------------------------------------------------------------------

function skip(node) {
  const el = node.nodeType === 1 ? node : node.parentElement;
  if (!el) return true;
  // A noscript's words show only where scripts never run.
  if (el.closest('[translate="no"], script, style, noscript, code, pre, kbd, textarea')) return true;
  return false;
}

function where(el) {
  if (!el) return '';
  const withId = el.closest('[id]');
  const tag = el.tagName.toLowerCase();
  const cls = typeof el.className === 'string' && el.className ? `.${el.className.split(' ')[0]}` : '';
  return `${withId ? `#${withId.id} ` : ''}${tag}${cls}`;
}

/** Every text node and titled element under `node` (itself included), outside translate="no". */
function each(node, onText, onElement) {
  if (node.nodeType === 3) {
    if (!skip(node)) onText(node);
    return;
  }
  if (node.nodeType !== 1 && node.nodeType !== 9 && node.nodeType !== 11) return;
  if (node.nodeType === 1) {
    if (skip(node)) return;
    onElement(node);
  }
  const walker = document.createTreeWalker(node, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.nodeType === 1 && n.closest('[translate="no"], script, style, noscript')
      ? NodeFilter.FILTER_REJECT
      : NodeFilter.FILTER_ACCEPT),
  });
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.nodeType === 3) {
      if (!skip(n)) onText(n);
    } else onElement(n);
  }
}

function titles(el, fn) {
  for (const a of ATTRS) {
    const v = el.getAttribute(a);
    if (v) fn(v, (out) => el.setAttribute(a, out), `${where(el)}[${a}]`);
  }
  if (el.tagName === 'INPUT' && (el.type === 'button' || el.type === 'submit') && el.value) {
    fn(el.value, (out) => { el.value = out; }, where(el));
  }
}

/** The page's own HTML in the language, once: each text is a key of `tr`'s words. `made`
 * receives what was put there. */
export function localize(root, tr, made = () => {}) {
  const put = (text, set) => {
    const out = tr.translate(text);
    if (out === undefined) return; // no words: the leftover check names it
    made(out);
    if (out !== text) set(out);
  };
  each(
    root === document ? document.documentElement : root,
    (n) => put(n.nodeValue, (out) => { n.nodeValue = out; }),
    (el) => titles(el, put),
  );
}

/** List what shows in the page without having been made in its language (`made(core)`
 * false), as it appears; changes nothing. */
export function watchLeftovers(root, tr, made) {
  const top = root === document ? document.documentElement : root;
  const look = (text, _set, at) => {
    const core = norm(text);
    if (!core || made(core) || !hasWords(core) || ADDRESS.test(core) || nameLike(core)) return;
    if (tr.misses.size < 2000) tr.misses.set(core, at);
  };
  const text = (n) => look(n.nodeValue, null, where(n.parentElement));
  each(top, text, (el) => titles(el, look));
  const obs = new MutationObserver((records) => {
    for (const r of records) {
      if (r.type === 'characterData') {
        if (!skip(r.target)) text(r.target);
      } else if (r.type === 'attributes') {
        if (r.target.nodeType === 1 && !r.target.closest('[translate="no"]')) titles(r.target, look);
      } else {
        for (const n of r.addedNodes) each(n, text, (el) => titles(el, look));
      }
    }
  });
  obs.observe(top, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ATTRS });
  return obs;
}
