// The run a story chapter has asked the server for and not got yet: a watch of the story's
// side run "<story>.<run>", or a restart of the one this page watches. The player keeps one
// of these; the server answers with a hello (granted) or an error (refused, or too fast).
//
// A refusal for pace (`rate_limited`: a class paging quickly sends a watch and two warm-ups
// a chapter) is not a refusal of what was asked: the request is sent again after a second,
// while it is still the one the chapter waits for. Any other error ends the request, and the
// chapter says why.

/** A watch the server refused: the chapter says so on the run the page watches. */
export const NO_RUN_HERE = Symbol('no run here');
/** How long a request refused for pace waits before it is sent again (the server's budget
 * refills at 10 messages a second). */
export const ASK_AGAIN_MS = 1100;

/**
 * @param {{watchRun: (ref: string) => unknown, newRun: () => boolean, later?: typeof setTimeout}} io
 *   watchRun asks to watch a run; newRun restarts the watched run as the chapter wants it
 *   (false when it could not be sent); later schedules the second ask.
 */
export function runRequests({ watchRun, newRun, later = setTimeout }) {
  let pending = null; // {key, ref, runId}: runId null for a watch, the old run's id for a restart

  return {
    /** The request in flight, or null. */
    get pending() {
      return pending;
    },
    /** Ask to watch `ref` (the run `key`); false when that watch is already asked. */
    watch(key, ref) {
      if (pending?.ref === ref) return false;
      pending = { key, ref, runId: null };
      watchRun(ref);
      return true;
    },
    /** Restart the run `ref` this page watches (now at `runId`). */
    restart(key, ref, runId) {
      pending = { key, ref, runId };
      if (!newRun()) pending = null;
    },
    /** The page already watches `ref`: a watch of it asked earlier is done. */
    watching(ref) {
      if (pending?.ref === ref && pending.runId === null) pending = null;
    },
    /** A hello: the asked run, or a new run of it after a restart, is here. */
    hello(msg) {
      if (pending && msg.watching === pending.ref && msg.run_id !== pending.runId) pending = null;
    },
    /**
     * An error from the server. Returns null when it does not end a request (none in flight,
     * or refused for pace and asked again), else what the chapter says: NO_RUN_HERE for a
     * refused watch, the server's reason (or true) for a refused restart.
     */
    error(msg) {
      if (!pending) return null;
      if (msg?.code === 'rate_limited') {
        const asked = pending;
        later(() => {
          if (pending !== asked) return; // the chapter moved on, or the answer came
          if (asked.runId === null) watchRun(asked.ref);
          else if (!newRun()) pending = null;
        }, ASK_AGAIN_MS);
        return null;
      }
      const watchRefused = pending.runId === null;
      pending = null;
      return watchRefused ? NO_RUN_HERE : msg?.message || msg?.code || true;
    },
    /** Forget the request (the story closed). */
    clear() {
      pending = null;
    },
  };
}
