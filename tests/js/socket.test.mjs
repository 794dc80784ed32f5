// The page's websocket (static/js/net/socket.js): the address names the run the page
// watches (never the class run, which is the default) next to the presenter's token, and a
// page asking to watch another run asks on the open socket and on every reconnect after.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { CLASS_RUN, connect, wsUrl } from '../../static/js/net/socket.js';

const loc = { protocol: 'http:', host: '127.0.0.1:8000' };

test('the address carries the token and the watched run, and nothing for the class run', () => {
  assert.equal(wsUrl(loc), 'ws://127.0.0.1:8000/ws');
  assert.equal(wsUrl(loc, null, CLASS_RUN), 'ws://127.0.0.1:8000/ws');
  assert.equal(wsUrl(loc, 'a b', 'one-gpu.dp2'), 'ws://127.0.0.1:8000/ws?token=a+b&run=one-gpu.dp2');
  assert.equal(wsUrl({ protocol: 'https:', host: 'x' }, null, 'one-gpu.one'), 'wss://x/ws?run=one-gpu.one');
});

class FakeSocket {
  static OPEN = 1;
  static CLOSED = 3;
  static made = [];
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    FakeSocket.made.push(this);
  }
  send(text) {
    this.sent.push(JSON.parse(text));
  }
  open() {
    this.readyState = FakeSocket.OPEN;
    this.onopen();
  }
  drop() {
    this.readyState = FakeSocket.CLOSED;
    this.onclose();
  }
  close() {}
}

test('watching another run asks on the open socket, and a reconnect asks for it in its address', async () => {
  globalThis.window = { location: loc };
  globalThis.WebSocket = FakeSocket;
  const store = { set() {}, apply() {} };
  const socket = connect(store);
  const first = FakeSocket.made.at(-1);
  assert.equal(first.url, 'ws://127.0.0.1:8000/ws');
  // Asked while the socket is still connecting: asked again as soon as it opens.
  assert.equal(socket.watch('one-gpu.dp2'), false);
  first.open();
  assert.deepEqual(first.sent, [{ type: 'watch', run: 'one-gpu.dp2' }]);
  assert.equal(socket.watch('one-gpu.ep2'), true);
  assert.deepEqual(first.sent.at(-1), { type: 'watch', run: 'one-gpu.ep2' });
  const made = FakeSocket.made.length;
  first.drop();
  // The reconnect comes after its back-off (at most 300 ms the first time): wait for it.
  for (let i = 0; i < 100 && FakeSocket.made.length === made; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const second = FakeSocket.made.at(-1);
  assert.notEqual(second, first);
  assert.equal(second.url, 'ws://127.0.0.1:8000/ws?run=one-gpu.ep2');
  second.open();
  assert.deepEqual(second.sent, [], 'the address already said which run');
  socket.close();
});
