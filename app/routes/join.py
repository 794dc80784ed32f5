"""The join link: the short address students type (or scan) to follow the presenter.

GET /api/join      {"url": ..., "svg": ...}: the link and its QR code (drawn by segno)
GET /join.svg      the QR code alone, as a picture

The link is the address other machines reach this server by: the first --allowed-host, else
this machine's own network address when it listens on every interface, else the address the
page itself was opened with. It never carries the presenter token.
"""

from __future__ import annotations

import io
import socket
from functools import lru_cache

import segno
from fastapi import APIRouter, Request
from fastapi.responses import Response

from app.settings import Settings
from app.web.hosts import split_host

router = APIRouter()
WILDCARD = ("0.0.0.0", "::", "")


def lan_address() -> str | None:
    """This machine's address on its network, found without sending anything (a UDP socket
    'connected' to a private address only picks the outgoing interface); None when offline."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.254.254.254", 1))
            addr = s.getsockname()[0]
    except OSError:
        return None
    return None if addr.startswith("127.") or addr == "0.0.0.0" else addr


def _hostport(host: str, port: int) -> str:
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{host}:{port}"


def join_url(settings: Settings, request_host: str | None = None) -> str:
    """The short link for the room (see the module's note for which address it names)."""
    host = settings.host.strip("[]")
    if settings.allowed_hosts:
        return f"http://{_hostport(settings.allowed_hosts[0], settings.port)}/"
    if host in WILDCARD:
        lan = lan_address()
        if lan:
            return f"http://{_hostport(lan, settings.port)}/"
    elif host not in ("127.0.0.1", "::1", "localhost"):
        return f"http://{_hostport(host, settings.port)}/"
    name = split_host(request_host) if request_host else None
    if request_host and name:
        return f"http://{request_host}/"
    return f"http://{_hostport('127.0.0.1', settings.port)}/"


@lru_cache(maxsize=16)
def qr_svg(url: str) -> str:
    """The link as a QR code (level M, as a phone reads it across a room): dark on white with
    its quiet zone, one unit a module and no fixed size, so the page scales it crisply."""
    out = io.BytesIO()
    segno.make(url, error="m", micro=False).save(
        out, kind="svg", border=4, dark="#000", light="#fff", title=f"QR code for {url}",
        xmldecl=False, omitsize=True, svgclass=None, lineclass=None,
    )  # fmt: skip
    return out.getvalue().decode()


@router.get("/api/join")
async def join(request: Request) -> dict[str, str]:
    """The join link and its QR code as SVG markup."""
    url = join_url(request.app.state.settings, request.headers.get("host"))
    return {"url": url, "svg": qr_svg(url)}


@router.get("/join.svg", include_in_schema=False)
async def join_svg(request: Request) -> Response:
    url = join_url(request.app.state.settings, request.headers.get("host"))
    return Response(qr_svg(url), media_type="image/svg+xml", headers={"cache-control": "no-cache"})
