// Reads the engine's numbers that make_fixtures.py wrote (tests/js/fixtures/*.json).
import { readFileSync } from 'node:fs';

export function fixture(name) {
  return JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8'));
}

/** A file of the repository, read as text (scene data, locale words). */
export function repoText(path) {
  return readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
}

export const repoJson = (path) => JSON.parse(repoText(path));
