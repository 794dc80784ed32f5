// Talk about it: discussion questions for a class, the note for grown-ups, and a link to the
// printable one-page sheet (/sheet). The words live in scenes/classroom.json.

import { lang, t } from '../i18n/lang.js';
import { say } from '../i18n/content.js';
import { h } from './dom.js';
import * as api from './api.js';

export function create() {
  let count = 0;

  function mount(body) {
    const list = h('ol', { class: 'talk-list' });
    const note = h('p', { class: 'talk-note' });
    const error = h('p', { class: 'lab-error', role: 'alert' });
    body.append(
      list,
      note,
      h('p', { class: 'lab-row' }, h('a', { class: 'lab-btn wide primary', href: lang === 'en' ? '/sheet' : `/sheet?lang=${lang}`, target: '_blank', rel: 'noopener', text: t('Printable question sheet') }), h('span', { class: 'lab-note', text: t('one page, A4 or Letter') })),
      error,
    );
    api.content().then((c) => {
      count = c.questions.length;
      list.replaceChildren(...c.questions.map((q, i) =>
        h('li', { class: 'talk-q' }, h('span', { class: 'talk-n', text: t('Q{n}', { n: i + 1 }) }), h('div', {}, h('p', { class: 'talk-text', text: say(q.text) }), h('p', { class: 'talk-follow', text: say(q.follow_up) }))),
      ));
      note.textContent = say(c.grown_ups);
    }).catch((err) => (error.textContent = t('Could not load the questions ({error}).', { error: err.message })));
  }

  return {
    mount,
    info: () => ({ questions: count }),
  };
}
