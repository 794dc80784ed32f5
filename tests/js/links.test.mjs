// Lesson links (static/js/ui/links.js): every state a teacher may start from is a URL, read
// into the named parts presenting uses, and "copy link to this view" writes it back. A link
// read back gives the parts it was made from; what a fresh page shows anyway is left out.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { linkFor, readLink } from '../../static/js/ui/links.js';

const LOC = { origin: 'http://127.0.0.1:8000', pathname: '/' };
const roundTrip = (parts) => readLink(new URL(linkFor(parts, LOC)).search);

test('a fresh page needs no query at all', () => {
  assert.equal(linkFor({}, LOC), 'http://127.0.0.1:8000/');
  // Parts at their defaults say nothing either.
  const defaults = { view: { view: 0 }, tour: { active: false, stop: 4 }, show: { labels: true, signal: true, spin: false, exploded: false, projector: false } };
  assert.equal(linkFor(defaults, LOC), 'http://127.0.0.1:8000/');
  assert.deepEqual(readLink(''), { parts: {}, hide: [], present: false });
});

test('views, tour stops, what the scene shows, labs and stories come back as they went', () => {
  const cases = [
    { view: { view: 3 } },
    { tour: { active: true, stop: 3, revealed: false } },
    { tour: { active: true, stop: 0, revealed: true } },
    { show: { labels: false } },
    { show: { signal: false, spin: true, exploded: true, projector: true } },
    { lab: { open: 'memory', params: '70B', precision: 'bf16', gpu: 'h100-80gb', spread: true } },
    { lab: { open: 'swap', placement: 'tensor_pipeline' } },
    { story: { id: 'one-gpu', chapter: 12 } },
    { view: { view: 2 }, show: { labels: false, projector: true }, lab: { open: 'ring' } },
  ];
  for (const parts of cases) assert.deepEqual(roundTrip(parts).parts, parts, JSON.stringify(parts));
});

test('the tour counts stops from 1 in the link, as the page does, and its view wins', () => {
  const link = linkFor({ tour: { active: true, stop: 3 }, view: { view: 2 } }, LOC);
  assert.equal(link, 'http://127.0.0.1:8000/?tour=4');
  assert.deepEqual(readLink('?tour=4').parts.tour, { active: true, stop: 3, revealed: false });
  // A bare flag is written without "=": ?projector, not ?projector=.
  assert.equal(linkFor({ show: { projector: true } }, { origin: 'https://x.org', pathname: '/class' }), 'https://x.org/class?projector');
});

test('flags read the way people type them', () => {
  for (const off of ['0', 'false', 'off', 'no', 'OFF']) assert.equal(readLink(`?labels=${off}`).parts.show.labels, false, off);
  for (const on of ['1', 'true', 'yes', '']) assert.equal(readLink(`?spin=${on}`).parts.show.spin, true, on);
  assert.equal(readLink('?explode').parts.show.exploded, true);
  assert.equal(readLink('?present').present, true);
  assert.equal(readLink('?present=0').present, false);
  assert.deepEqual(readLink('?hide=controls,legend').hide, ['controls', 'legend']);
});

test('what a link may not say is dropped, not passed on', () => {
  assert.deepEqual(readLink('?view=12').parts, {}); // views are 0-9
  assert.deepEqual(readLink('?view=-1').parts, {});
  assert.deepEqual(readLink('?tour=0').parts, {}); // stops count from 1
  assert.deepEqual(readLink('?lab=Memory!').parts, {});
  assert.deepEqual(readLink('?lab=memory&params=<script>').parts, { lab: { open: 'memory' } });
  assert.deepEqual(readLink(`?lab=memory&gpu=${'x'.repeat(41)}`).parts, { lab: { open: 'memory' } });
  assert.deepEqual(readLink('?story=../../etc&chapter=2').parts, {});
  assert.deepEqual(readLink('?story=one-gpu&chapter=-3').parts, { story: { id: 'one-gpu', chapter: 1 } });
  assert.deepEqual(readLink('?hide=controls,<b>,a%20b').hide, ['controls']);
});
