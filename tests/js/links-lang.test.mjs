// A copied lesson link keeps the page's language (static/js/ui/links.js with
// static/js/i18n/lang.js): a page opened with ?lang=de copies links that open in German.
// Its own file: the language is picked once, when lang.js is first imported.
import { test } from 'node:test';
import assert from 'node:assert/strict';

globalThis.window = { location: { search: '?view=2&lang=DE', href: 'http://127.0.0.1:8000/?view=2&lang=DE', origin: 'http://127.0.0.1:8000', pathname: '/' } };
const { lang } = await import('../../static/js/i18n/lang.js');
const { linkFor, readLink } = await import('../../static/js/ui/links.js');

test('the language asked for in the address is the page\'s, and copied links carry it', () => {
  assert.equal(lang, 'de'); // read case-insensitively
  const loc = { origin: 'http://127.0.0.1:8000', pathname: '/' };
  assert.equal(linkFor({ view: { view: 3 } }, loc), 'http://127.0.0.1:8000/?view=3&lang=de');
  assert.equal(linkFor({}, loc), 'http://127.0.0.1:8000/?lang=de');
  // Without a location given, the page's own is used, and its link is read back.
  assert.deepEqual(readLink().parts, { view: { view: 2 } });
  assert.equal(linkFor(readLink().parts), 'http://127.0.0.1:8000/?view=2&lang=de');
});
