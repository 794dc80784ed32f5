// The websocket to the server: connects to /ws on the page's own origin, feeds every message
// to store.apply, and reconnects on its own with exponential backoff and jitter (capped at
// about 5 s) so a restarted server or a flaky classroom network never needs a page reload.
// On reconnect the server sends hello + snapshot, which restore the whole state.
// A presenter's token rides on the websocket's own URL, so the server knows this connection
// may control from the start (hello.can_control) and on every reconnect.
// The page watches one of the server's runs: the class run, a story chapter's run or a run
// of its own (`watch(id)`: a `watch` message on the open socket, and `?run=` on every
// reconnect). The page's own key (`?key=`) lets it control a run of its own again after one.

const BASE_DELAY_MS = 300;
const MAX_DELAY_MS = 5000;

export const CLASS_RUN = 'class';

export function wsUrl(loc = window.location, token = null, run = CLASS_RUN, key = null) {
  const scheme = loc.protocol === 'https:' ? 'wss:' : 'ws:';
  const params = new URLSearchParams();
  if (token) params.set('token', token);
  if (run && run !== CLASS_RUN) params.set('run', run);
  if (key) params.set('key', key);
  const query = params.toString();
  return `${scheme}//${loc.host}/ws${query ? `?${query}` : ''}`;
}

/** Delay before reconnect attempt `attempt` (0-based): doubling, capped, with jitter so a
 * room full of laptops does not hammer a restarted server in lockstep. */
export function backoffDelay(attempt, random = Math.random) {
  const ceiling = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** attempt);
  return Math.round(ceiling * (0.5 + 0.5 * random()));
}

export function connect(store, { token = null, url = null, key = null } = {}) {
  let run = CLASS_RUN;
  const urlNow = () => url ?? wsUrl(window.location, token, run, key);
  let ws = null;
  let openedFor = run;
  let attempt = 0;
  let timer = null;
  let closed = false;
  let everOpened = false;

  function open() {
    timer = null;
    if (closed) return;
    if (!everOpened) store.set('connection', 'connecting');
    try {
      ws = new WebSocket(urlNow());
      openedFor = run;
    } catch (err) {
      console.warn('websocket could not be created', err);
      schedule();
      return;
    }
    ws.onopen = () => {
      attempt = 0;
      everOpened = true;
      store.set('connection', 'open');
      // Asked for another run while this connection was being made: ask on it now.
      if (openedFor !== run) send({ type: 'watch', run });
    };
    ws.onmessage = (ev) => {
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        console.warn('ignored a message that is not JSON');
        return;
      }
      // The hello says which run this connection watches now (a run of the page's own is
      // named by the server): a reconnect asks for that one.
      if (msg?.type === 'hello' && typeof msg.watching === 'string') run = msg.watching;
      store.apply(msg);
    };
    ws.onclose = () => {
      ws = null;
      if (closed) return;
      store.set('connection', 'lost');
      schedule();
    };
    // An error is always followed by close, which does the reconnecting.
    ws.onerror = () => {};
  }

  function schedule() {
    if (closed || timer !== null) return;
    timer = setTimeout(open, backoffDelay(attempt));
    attempt += 1;
  }

  /** Send a control message; returns false when there is no open connection to send it on. */
  function send(msg) {
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    const carries = msg.type === 'control' || msg.type === 'present';
    const body = token && carries && !msg.token ? { ...msg, token } : msg;
    ws.send(JSON.stringify(body));
    return true;
  }

  /** Watch another run of the server's (CLASS_RUN for the class run): its hello follows. */
  function watch(id) {
    run = id;
    return send({ type: 'watch', run: id });
  }

  function close() {
    closed = true;
    if (timer !== null) clearTimeout(timer);
    if (ws) ws.close();
  }

  open();
  return {
    send,
    watch,
    close,
    get run() { return run; },
    get readyState() { return ws ? ws.readyState : WebSocket.CLOSED; },
  };
}
