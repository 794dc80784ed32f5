// Words the page shows for presenting, following, lesson links and the tour's end,
// kept in one table. `word(key, values)` makes one in the page's language, {name}s filled.

import { t } from '../i18n/lang.js';

const TABLE = {
  present: () => t('Present'),
  presentTitle: () => t('Lead the room: every other open page follows what this page shows'),
  stopPresenting: () => t('Stop presenting'),
  presenting: () => t('Presenting'),
  followers: (v) => t(['1 following', '{n} following'], v, v.n),
  joinAt: () => t('Join at'),
  joinHide: () => t('hide the code'),
  joinShow: () => t('join code'),
  joinAlt: (v) => t('QR code for the join link {url}', v),
  copyLink: () => t('Copy link to this view'),
  copied: (v) => t('Link copied: {url}', v),
  copyFailed: (v) => t('Copy this link: {url}', v),
  following: () => t('Following the presenter'),
  followingHint: () => t('any key or drag: explore on your own'),
  away: () => t('Exploring on your own'),
  rejoin: () => t('Follow again (J)'),
  presenterLeft: () => t('The presenter stopped presenting'),
  tookOver: () => t('Another page is presenting now; this page follows it'),
  tourEnd: () => t('End of the tour'),
  tourEndCount: (v) => t('all {total} stops seen', v),
  tourEndCaption: () => t('That was the whole tour: ◀ previous goes back to the last stop, start again ▶ begins at stop 1, Esc leaves.'),
  tourNext: () => t('next ▶'),
  tourAgain: () => t('start again ▶'),
};

export function word(key, values = {}) {
  return TABLE[key]?.(values) ?? key;
}
