// The run's plan as the scene reads it: hello.plan and hello.roles (per GPU: its data-parallel
// copy, pipeline stage, tensor rank, expert rank, layers and experts). Pure, no three.js.
//
// Everything is read defensively: a hello without a plan is a data-parallel run, and a GPU
// without a role is a full copy (stage 0, tensor rank 0, every layer).

/** {dp, tp, pp, ep, microbatches, schedule, experts, top_k} with data-parallel defaults. */
export function planOf(hello) {
  const p = hello?.plan ?? {};
  const c = hello?.config ?? {};
  const gpus = hello?.topology?.gpus?.length ?? c.gpus ?? 1;
  const tp = p.tp ?? c.tp ?? 1;
  const pp = p.pp ?? c.pp ?? 1;
  return {
    dp: p.dp ?? Math.max(1, Math.floor(gpus / (tp * pp))),
    tp,
    pp,
    ep: p.ep ?? c.ep ?? 1,
    microbatches: p.microbatches ?? c.microbatches ?? 1,
    schedule: p.schedule ?? c.schedule ?? '1f1b',
    experts: p.experts ?? c.experts ?? 0,
    top_k: p.top_k ?? c.top_k ?? 0,
    layers: c.n_layer ?? null,
  };
}

/** True when the plan is more than copies of the whole model (the scene shows roles). */
export function isPlanned(plan) {
  return plan.tp > 1 || plan.pp > 1 || plan.ep > 1;
}

/** GPU g's role: {gpu, dp, stage, tp, ep, layers: [a, b), experts: [a, b)}. From hello.roles
 * where it says, else worked out from the plan as app/engine/plan.py lays GPUs out:
 * g = (d * pp + s) * tp + t. */
export function roleOf(hello, g, plan = planOf(hello)) {
  const given = Array.isArray(hello?.roles) ? hello.roles.find?.((r) => r?.gpu === g) ?? hello.roles[g] : null;
  const t = g % plan.tp;
  const s = Math.floor(g / plan.tp) % plan.pp;
  const d = Math.floor(g / (plan.tp * plan.pp));
  const nl = plan.layers ?? plan.pp;
  const per = Math.max(1, Math.floor(nl / plan.pp));
  const ne = plan.experts ?? 0;
  const pe = plan.ep > 0 ? Math.floor(ne / plan.ep) : ne;
  const e = d % plan.ep;
  const pair = (x, fb) => (Array.isArray(x) && x.length === 2 ? [Number(x[0]), Number(x[1])] : fb);
  return {
    gpu: g,
    dp: given?.dp ?? d,
    stage: given?.stage ?? s,
    tp: given?.tp ?? t,
    ep: given?.ep ?? e,
    layers: pair(given?.layers, [s * per, (s + 1) * per]),
    experts: pair(given?.experts, ne ? [e * pe, (e + 1) * pe] : [0, 0]),
  };
}

/** Every GPU's role, in GPU order. */
export function rolesOf(hello) {
  const plan = planOf(hello);
  const n = hello?.topology?.gpus?.length ?? 0;
  return Array.from({ length: n }, (_, g) => roleOf(hello, g, plan));
}

/** The short tag a GPU wears: its stage, and the experts it holds ("S1", "E1–2", "S2 E3–4");
 * '' for a full copy. Numbers count from 1, as people do. */
export function roleTag(role, plan) {
  const parts = [];
  if (plan.pp > 1) parts.push(`S${role.stage + 1}`);
  if (plan.ep > 1 && role.experts[1] > role.experts[0]) {
    const [a, b] = role.experts;
    parts.push(b - a === 1 ? `E${a + 1}` : `E${a + 1}–${b}`);
  }
  return parts.join(' ');
}

/** A key that changes when the plan or the roles do (the scene rebuilds what depends on it). */
export function planKey(hello) {
  const p = planOf(hello);
  const roles = Array.isArray(hello?.roles)
    ? hello.roles.map((r) => `${r?.dp}/${r?.stage}/${r?.tp}/${r?.ep}/${r?.experts}/${r?.layers}`).join(';')
    : '';
  return `${p.dp}x${p.tp}x${p.pp}e${p.ep}m${p.microbatches}${p.schedule}x${p.experts}k${p.top_k}|${roles}`;
}
