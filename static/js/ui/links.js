// Lesson links: every state a teacher may want to start from is a URL, read here into the
// same named parts presenting uses (presenter/parts.js), and written back by "copy link to
// this view".
//
//   ?view=3                       camera view 3
//   ?tour=4                       the tour at stop 4 (1-based, as the page counts them)
//   ?lab=memory&params=70B&precision=bf16&gpu=h100-80gb   a lab open with its inputs
//   ?lab=swap&placement=tensor_pipeline                    swap-it showing a card
//   ?labels=0  ?signal=0  ?spin=1  ?explode=1  ?projector   what the scene shows
//   ?hide=controls                a clean screen for recording or kiosk use
//   ?present                      start presenting (a page with the presenter's rights)
//   ?story=one-gpu&chapter=12     handed on as the `story` part, for the story player
//   ?lang=de                      the page's language (static/js/i18n/lang.js), kept on copied links

import { lang } from '../i18n/lang.js';

const FLAGS = { labels: 'labels', signal: 'signal', spin: 'spin', explode: 'exploded', projector: 'projector' };
const TEXT = /^[\w.\-+ ]{1,40}$/; // what a lab input may be in a link (70B, bf16, h100-80gb)

function flag(value) {
  return !['0', 'false', 'off', 'no'].includes(String(value).toLowerCase());
}

/** The parts a link names, and what else it asks for (hidden controls, presenting). */
export function readLink(search = window.location.search) {
  const q = new URLSearchParams(search);
  const parts = {};
  const view = Number.parseInt(q.get('view') ?? '', 10);
  if (Number.isInteger(view) && view >= 0 && view <= 9) parts.view = { view };
  const stop = Number.parseInt(q.get('tour') ?? '', 10);
  if (Number.isInteger(stop) && stop >= 1) parts.tour = { active: true, stop: stop - 1, revealed: q.has('reveal') };
  const show = {};
  for (const [name, key] of Object.entries(FLAGS)) if (q.has(name)) show[key] = flag(q.get(name));
  if (Object.keys(show).length) parts.show = show;
  const lab = q.get('lab');
  if (lab && /^[a-z]{1,20}$/.test(lab)) {
    const inputs = { open: lab };
    for (const k of ['params', 'precision', 'gpu', 'placement']) {
      const v = q.get(k);
      if (v && TEXT.test(v)) inputs[k] = v;
    }
    if (q.has('spread')) inputs.spread = flag(q.get('spread'));
    parts.lab = inputs;
  }
  const story = q.get('story');
  if (story && /^[a-z0-9-]{1,40}$/.test(story)) {
    const chapter = Number.parseInt(q.get('chapter') ?? '1', 10);
    parts.story = { id: story, chapter: Number.isInteger(chapter) && chapter > 0 ? chapter : 1 };
  }
  const hide = (q.get('hide') ?? '').split(',').filter((x) => /^[a-z]{1,20}$/.test(x));
  return { parts, hide, present: q.has('present') && flag(q.get('present') || '1') };
}

/** The link that opens this view: only what differs from a freshly opened page. */
export function linkFor(parts, loc = window.location) {
  const q = new URLSearchParams();
  const tour = parts.tour;
  if (tour?.active) {
    q.set('tour', String((tour.stop ?? 0) + 1));
    if (tour.revealed === true) q.set('reveal', '1');
  } else if (parts.view?.view) q.set('view', String(parts.view.view));
  const show = parts.show ?? {};
  if (show.labels === false) q.set('labels', '0');
  if (show.signal === false) q.set('signal', '0');
  if (show.spin) q.set('spin', '1');
  if (show.exploded) q.set('explode', '1');
  if (show.projector) q.set('projector', '');
  const lab = parts.lab;
  if (lab?.open) {
    q.set('lab', lab.open);
    for (const k of ['params', 'precision', 'gpu', 'placement']) if (lab[k]) q.set(k, lab[k]);
    if (lab.spread) q.set('spread', '1');
  }
  if (parts.story?.id) {
    q.set('story', parts.story.id);
    q.set('chapter', String(parts.story.chapter ?? 1));
  }
  if (lang !== 'en') q.set('lang', lang);
  const text = q.toString().replace(/=(?=&|$)/g, '');
  return `${loc.origin}${loc.pathname}${text ? `?${text}` : ''}`;
}

/** `?hide=controls`: the page without its controls, legend and keys, for recording. */
export function applyHide(hide) {
  for (const what of hide) document.body.classList.add(`hide-${what}`);
}
