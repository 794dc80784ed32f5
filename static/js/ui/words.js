// Words the page shows for presenting, following, lesson links and predict-then-reveal,
// kept in one table. `word(key, values)` fills {name} placeholders. Other languages come
// from scenes/locales/ through the translator (static/js/i18n/), which knows these English
// lines as patterns, so they are written here once, in English.

const TABLES = {
  en: {
    present: 'Present',
    presentTitle: 'Lead the room: every other open page follows what this page shows',
    stopPresenting: 'Stop presenting',
    presenting: 'Presenting',
    followers: '{n} following',
    followersOne: '1 following',
    joinAt: 'Join at',
    joinHide: 'hide the code',
    joinShow: 'join code',
    joinAlt: 'QR code for the join link {url}',
    copyLink: 'Copy link to this view',
    copied: 'Link copied: {url}',
    copyFailed: 'Copy this link: {url}',
    following: 'Following the presenter',
    followingHint: 'any key or drag: explore on your own',
    away: 'Exploring on your own',
    rejoin: 'Follow again (J)',
    presenterLeft: 'The presenter stopped presenting',
    tookOver: 'Another page is presenting now; this page follows it',
    predict: 'Predict first',
    predictHint: 'next press shows the answer',
    answer: 'Answer',
    tourEnd: 'End of the tour',
    tourEndCount: 'all {total} stops seen',
    tourEndCaption: 'That was the whole tour: ◀ previous goes back to the last stop, start again ▶ begins at stop 1, Esc leaves.',
    tourNext: 'next ▶',
    tourAgain: 'start again ▶',
    stepWords:
      'Step {step}: {gpus} GPUs each guessed the next words for their slice of the batch and worked back to their nudges; the ring averaged them in {ring_passes} passes, {ring_bytes} sent by each GPU. Loss now {loss}. The model bets on "{top_word}" after "Once upon a" ({top_p}).',
  },
};

export function word(key, values = {}) {
  const text = TABLES.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (m, name) => (name in values ? String(values[name]) : m));
}
