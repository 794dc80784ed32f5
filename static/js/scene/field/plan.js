// The scale field's plan: how many servers, racks, pods and switches a cluster of N GPUs has,
// and how its fabric is tiered. A pure function (no three.js), so tests and the page's note
// read the same figures the scene draws.
//
// Assumptions (said on screen with the field, see panel.js):
// - A server holds the live run's GPUs per server (8 by default, as in an HGX / DGX board).
// - A rack holds 4 such servers (32 GPUs): the power budget of a common air-cooled rack for
//   8-GPU servers at about 10 kW each.
// - One network port per GPU (one NIC per GPU, as in rail-optimised clusters), and every
//   switch has RADIX = 128 ports (one 51.2 Tb/s switch chip split into 128 x 400 Gb/s ports).
// - The fabric is a non-blocking fat tree (a folded Clos network): a leaf gives half its ports
//   to GPUs and half to the tier above. With k-port switches, two tiers (leaf, spine) join at
//   most k^2/2 GPUs; three tiers (leaf, spine, core) join at most k^3/4 (Al-Fares et al., "A
//   Scalable, Commodity Data Center Network Architecture", SIGCOMM 2008). For k = 128 that is
//   8,192 and 524,288 GPUs, so a third tier appears above 8,192 GPUs.
// - In three tiers a pod is k/2 leaves and k/2 spines: k^2/4 = 4,096 GPUs (128 racks). In two
//   tiers the whole cluster is one pod.

export const RADIX = 128;
export const SERVERS_PER_RACK = 4;
export const MIN_GPUS = 8;
export const MAX_GPUS = 131072;
/** The scale presets the scene control offers (100,000+ is 131,072 = 2^17). */
export const PRESETS = Object.freeze([512, 4096, 16384, 131072]);

/** Parse a requested GPU count ('16384', '16,384', '131k'): an integer in MIN..MAX, or null. */
export function parseGpus(text) {
  if (text === null || text === undefined) return null;
  const s = String(text).trim().toLowerCase().replace(/[,_\s]/g, '');
  const m = /^(\d+(?:\.\d+)?)(k?)$/.exec(s);
  if (!m) return null;
  const n = Math.round(Number(m[1]) * (m[2] ? 1000 : 1));
  if (!Number.isFinite(n) || n < MIN_GPUS || n > MAX_GPUS) return null;
  return n;
}

/** The tiers a fat tree of k-port switches needs for n GPUs (one port each). */
export function tiersFor(n, k = RADIX) {
  if (n <= k / 2) return 1; // one leaf switch is enough
  if (n <= (k * k) / 2) return 2;
  return 3;
}

/**
 * fieldPlan(n, {perServer, live}) -> the field's counts and the rule behind them.
 *   n          GPUs in the field (clamped to MIN..MAX, and to at least the live group)
 *   perServer  GPUs per server (the live run's)
 *   live       GPUs in the live run (they are the field's first GPUs)
 */
export function fieldPlan(n, { perServer = 8, live = 0 } = {}) {
  const k = RADIX;
  const per = Math.max(1, Math.round(perServer));
  const gpus = Math.min(MAX_GPUS, Math.max(MIN_GPUS, Math.round(n), live));
  const servers = Math.ceil(gpus / per);
  const racks = Math.ceil(servers / SERVERS_PER_RACK);
  const tiers = tiersFor(gpus, k);
  const down = k / 2; // a leaf's ports towards the GPUs
  const leaves = Math.ceil(gpus / down);
  let spines = 0;
  let cores = 0;
  let pods = 1;
  let gpusPerPod = gpus;
  if (tiers === 2) {
    // Every leaf has k/2 uplinks, one to each spine's port: k/2 * leaves ports over k-port spines.
    spines = Math.max(1, Math.ceil((leaves * down) / k));
  } else if (tiers === 3) {
    gpusPerPod = (k * k) / 4;
    pods = Math.ceil(gpus / gpusPerPod);
    spines = leaves; // k/2 spines per pod of k/2 leaves
    cores = Math.max(1, Math.ceil((spines * down) / k));
  }
  const racksPerPod = Math.ceil(Math.ceil(gpusPerPod / per) / SERVERS_PER_RACK);
  return {
    gpus,
    perServer: per,
    servers,
    serversPerRack: SERVERS_PER_RACK,
    gpusPerRack: per * SERVERS_PER_RACK,
    racks,
    pods,
    racksPerPod: Math.min(racks, racksPerPod),
    tiers,
    radix: k,
    leaves,
    spines,
    cores,
    twoTierMax: (k * k) / 2,
    threeTierMax: (k * k * k) / 4,
    live: Math.min(live, gpus),
    mirrored: Math.max(0, gpus - live),
  };
}
