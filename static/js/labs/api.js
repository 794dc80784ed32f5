// Talking to /api/labs: every number the panels show is computed by the server's Python.
// A value the server refuses comes back as an error naming its field (err.field), which
// checkMessage() says in the page's language.

import { t, tr } from '../i18n/lang.js';

const cache = new Map();

async function getJson(url, init) {
  const res = await fetch(url, init);
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const detail = Array.isArray(body?.detail) ? body.detail[0] : null;
    // ['body', 'params'] or, for a value of several kinds, ['body', 'params', 'float']
    const field = detail?.loc ? detail.loc[1] ?? detail.loc[0] : null;
    const err = new Error(detail ? `${field}: ${detail.msg.replace(/^Value error, /, '')}` : `HTTP ${res.status}`);
    err.field = field;
    throw err;
  }
  return body;
}

// The fields the labs send, as the sentence "Check ___" names them.
const FIELD_WORDS = {
  params: () => t('the model size'),
  tokens: () => t('the training tokens'),
  gpus: () => t('the number of GPUs'),
  utilisation: () => t('the utilisation'),
  peak_tflops: () => t('the peak TFLOP/s'),
  power_w: () => t('the power per GPU'),
  pue: () => t('the PUE'),
  price_per_gpu_hour: () => t('the rent per GPU-hour'),
  kwh_price: () => t('the electricity price'),
  active_params: () => t('the active parameters'),
  mfu: () => t('the MFU'),
  precision: () => t('the precision'),
};

/** What to say of a refused value: "Check the model size: … is not a count such as 70B". */
export function checkMessage(err) {
  const message = tr(String(err?.message ?? '').replace(/^\w+: /, ''));
  const field = FIELD_WORDS[err?.field];
  return field ? t('Check {field}: {message}', { field: field(), message }) : t('Check the input: {message}', { message });
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
