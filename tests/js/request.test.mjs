// The run a story chapter asks for (static/js/story/request.js): granted by a hello, refused
// by an error, and asked again when the server only refused it for pace.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { ASK_AGAIN_MS, NO_RUN_HERE, runRequests } from '../../static/js/story/request.js';

/** A request keeper whose sends are logged and whose timers run when the test says. */
function harness({ newRunSends = true } = {}) {
  const sent = [];
  const timers = [];
  const asked = runRequests({
    watchRun: (ref) => sent.push(['watch', ref]),
    newRun: () => {
      sent.push(['new']);
      return newRunSends;
    },
    later: (fn, ms) => timers.push({ fn, ms }),
  });
  const tick = () => timers.splice(0).forEach(({ fn }) => fn());
  return { asked, sent, timers, tick };
}

test('a watch refused for pace is asked again after a second, and the chapter keeps waiting for it', () => {
  const { asked, sent, timers, tick } = harness();
  assert.equal(asked.watch('dp2', 'one-gpu.dp2'), true);
  assert.deepEqual(sent, [['watch', 'one-gpu.dp2']]);
  assert.equal(asked.error({ type: 'error', code: 'rate_limited', message: 'too many messages' }), null);
  assert.equal(asked.pending?.ref, 'one-gpu.dp2', 'still waiting for the run, not told it is refused');
  assert.equal(timers.length, 1);
  assert.ok(timers[0].ms >= 1000, 'waits for the message budget to refill');
  tick();
  assert.deepEqual(sent, [['watch', 'one-gpu.dp2'], ['watch', 'one-gpu.dp2']]);
  asked.hello({ watching: 'one-gpu.dp2', run_id: 'r7' });
  assert.equal(asked.pending, null, 'the hello ends the request');
});

test('a restart refused for pace is sent again; one that cannot be sent ends the request', () => {
  const { asked, sent, tick } = harness();
  asked.restart('dp2', 'one-gpu.dp2', 'r7');
  assert.equal(asked.error({ code: 'rate_limited' }), null);
  tick();
  assert.deepEqual(sent, [['new'], ['new']]);
  assert.equal(asked.pending?.runId, 'r7');
  asked.hello({ watching: 'one-gpu.dp2', run_id: 'r7' });
  assert.ok(asked.pending, 'the old run\'s hello is not the restart');
  asked.hello({ watching: 'one-gpu.dp2', run_id: 'r8' });
  assert.equal(asked.pending, null);

  const closed = harness({ newRunSends: false });
  closed.asked.restart('dp2', 'one-gpu.dp2', 'r7');
  assert.equal(closed.asked.pending, null, 'nothing was sent, nothing is waited for');
});

test('the second ask is dropped when the chapter moved on or the answer came first', () => {
  const { asked, sent, tick } = harness();
  asked.watch('dp2', 'one-gpu.dp2');
  asked.error({ code: 'rate_limited' });
  asked.watch('tp2', 'one-gpu.tp2'); // the next chapter, another run
  tick();
  assert.deepEqual(sent, [['watch', 'one-gpu.dp2'], ['watch', 'one-gpu.tp2']]);

  const late = harness();
  late.asked.watch('dp2', 'one-gpu.dp2');
  late.asked.error({ code: 'rate_limited' });
  late.asked.hello({ watching: 'one-gpu.dp2', run_id: 'r1' });
  late.tick();
  assert.equal(late.sent.length, 1);
});

test('any other error ends the request and says what the chapter is told', () => {
  const watch = harness();
  watch.asked.watch('dp2', 'one-gpu.dp2');
  assert.equal(watch.asked.error({ code: 'too_many_runs', message: 'too many runs' }), NO_RUN_HERE);
  assert.equal(watch.asked.pending, null);
  assert.equal(watch.timers.length, 0);

  const restart = harness();
  restart.asked.restart('dp2', 'one-gpu.dp2', 'r7');
  assert.equal(restart.asked.error({ code: 'not_allowed', message: 'only the presenter may' }), 'only the presenter may');
  restart.asked.restart('dp2', 'one-gpu.dp2', 'r7');
  assert.equal(restart.asked.error({}), true);

  const idle = harness();
  assert.equal(idle.asked.error({ code: 'bad_message' }), null, 'no request, nothing to end');
});

test('a watch already asked is not sent twice; watching it already ends it', () => {
  const { asked, sent } = harness();
  assert.equal(asked.watch('dp2', 'one-gpu.dp2'), true);
  assert.equal(asked.watch('dp2', 'one-gpu.dp2'), false);
  assert.equal(sent.length, 1);
  asked.watching('one-gpu.dp2');
  assert.equal(asked.pending, null);
  asked.restart('dp2', 'one-gpu.dp2', 'r7');
  asked.watching('one-gpu.dp2');
  assert.ok(asked.pending, 'a restart waits for its new run');
  asked.clear();
  assert.equal(asked.pending, null);
  assert.ok(ASK_AGAIN_MS >= 1000);
});
