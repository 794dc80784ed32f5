// The websocket to the server: connects to /ws on the page's own origin, feeds every message
// to store.apply, and reconnects on its own with exponential backoff and jitter (capped at
// about 5 s) so a restarted server or a flaky classroom network never needs a page reload.
// On reconnect the server sends hello + snapshot, which restore the whole state.
// A presenter's token rides on the websocket's own URL, so the server knows this connection
// may control from the start (hello.can_control) and on every reconnect.

const BASE_DELAY_MS = 300;
const MAX_DELAY_MS = 5000;

export function wsUrl(loc = window.location, token = null) {
  const scheme = loc.protocol === 'https:' ? 'wss:' : 'ws:';
  const query = token ? `?token=${encodeURIComponent(token)}` : '';
  return `${scheme}//${loc.host}/ws${query}`;
}

/** Delay before reconnect attempt `attempt` (0-based): doubling, capped, with jitter so a
 * room full of laptops does not hammer a restarted server in lockstep. */
export function backoffDelay(attempt, random = Math.random) {
  const ceiling = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** attempt);
  return Math.round(ceiling * (0.5 + 0.5 * random()));
}

export function connect(store, { token = null, url = wsUrl(window.location, token) } = {}) {
  let ws = null;
  let attempt = 0;
  let timer = null;
  let closed = false;
  let everOpened = false;

  function open() {
    timer = null;
    if (closed) return;
    if (!everOpened) store.set('connection', 'connecting');
    try {
      ws = new WebSocket(url);
    } catch (err) {
      console.warn('websocket could not be created', err);
      schedule();
      return;
    }
    ws.onopen = () => {
      attempt = 0;
      everOpened = true;
      store.set('connection', 'open');
    };
    ws.onmessage = (ev) => {
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        console.warn('ignored a message that is not JSON');
        return;
      }
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

  function close() {
    closed = true;
    if (timer !== null) clearTimeout(timer);
    if (ws) ws.close();
  }

  open();
  return { send, close, get readyState() { return ws ? ws.readyState : WebSocket.CLOSED; } };
}
