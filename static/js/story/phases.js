// The phases of a training step, the trace kinds in each and the page's colour variable for
// each: one table for the close-up's pieces (parts3d.js) and the chapters' cards, free of
// three.js so a chapter module can read it too.

const PHASES = [
  { phase: 'forward', kinds: /^forward/, colour: '--forward' },
  { phase: 'backward', kinds: /^backward/, colour: '--backward' },
  { phase: 'allreduce', kinds: /allreduce|reduce_scatter|all_gather/, colour: '--allreduce' },
  { phase: 'update', kinds: /^(optimizer|update)/, colour: '--update' },
];

/** The phase a trace kind belongs to, with its colour variable: {phase, colour}, or null. */
export const phaseOf = (kind) => (kind ? PHASES.find((p) => p.kinds.test(kind)) ?? null : null);
