// Talking to /api/labs: every number the panels show is computed by the server's Python.

const cache = new Map();

async function getJson(url, init) {
  const res = await fetch(url, init);
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const detail = Array.isArray(body?.detail) ? body.detail[0] : null;
    const field = detail?.loc ? detail.loc[detail.loc.length - 1] : null;
    const err = new Error(detail ? `${field}: ${detail.msg.replace(/^Value error, /, '')}` : `HTTP ${res.status}`);
    err.field = field;
    throw err;
  }
  return body;
}

/** GET once per page: the classroom text and the calculator options do not change. */
export function once(url) {
  if (!cache.has(url)) {
    cache.set(url, getJson(url).catch((e) => {
      cache.delete(url);
      throw e;
    }));
  }
  return cache.get(url);
}

export const content = () => once('/api/labs/content');
export const options = () => once('/api/labs/options');
export const ring = (gpus, seed) => getJson(`/api/labs/ring?gpus=${gpus}&seed=${seed}`);
export const post = (path, body) =>
  getJson(`/api/labs/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
