"""HTTP and websocket routes: `http` (REST and pages), `ws` (/ws), `labs` (/api/labs/*)."""
