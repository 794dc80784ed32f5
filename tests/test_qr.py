"""The join link's QR code, read back from the very SVG the server sends: the picture's dark
modules are drawn into a bitmap by an interpreter of its path (written here, not segno's) and
an independent decoder (zxing-cpp) must read the link out of it."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from app.routes.join import qr_svg

zxingcpp = pytest.importorskip("zxingcpp")

SVG = "{http://www.w3.org/2000/svg}"
TEXTS = [
    "http://192.168.1.20:8000/",
    "http://[fe80::1]:8000/",
    "http://teacher-pc.local:8000/?present=0",
    "Grüße aus dem Klassenzimmer: 70B 🙂",
    "https://example.org/" + "0123456789" * 19,
]


def dark_modules(svg: str) -> np.ndarray:
    """The SVG as a bitmap of modules: its viewBox in units, each stroked path segment a run
    of dark modules (a 1-unit stroke along y + 0.5), the filled background left light."""
    root = ET.fromstring(svg)
    _, _, w, h = (int(v) for v in root.get("viewBox", "").split())
    img = np.zeros((h, w), dtype=bool)
    for path in root.iter(f"{SVG}path"):
        if path.get("stroke") is None:
            assert path.get("fill") == "#fff", "only the background is filled"
            continue
        x = y = 0.0
        for cmd, args in re.findall(r"([MmHhVvLl])([^MmHhVvLl]*)", path.get("d", "")):
            nums = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", args)]
            if cmd in "Mm":
                dx, dy = nums
                x, y = (dx, dy) if cmd == "M" else (x + dx, y + dy)
            elif cmd in "Hh":
                (n,) = nums
                end = n if cmd == "H" else x + n
                row = int(y - 0.5)
                img[row, int(min(x, end)) : int(max(x, end))] = True
                x = end
            else:
                raise AssertionError(f"unexpected path command {cmd!r}")
    return img


def read(svg: str, scale: int = 4) -> list[tuple[str, str]]:
    img = np.where(dark_modules(svg), 0, 255).astype(np.uint8)
    img = np.kron(img, np.ones((scale, scale), dtype=np.uint8))
    return [(r.text, str(r.ec_level)) for r in zxingcpp.read_barcodes(img)]


@pytest.mark.parametrize("text", TEXTS)
def test_the_served_picture_decodes_to_its_link_at_level_m(text: str) -> None:
    assert read(qr_svg(text)) == [(text, "M")]


def test_the_picture_is_square_with_a_quiet_zone_and_a_safe_title() -> None:
    svg = qr_svg("http://x/?a=<b>&c")
    img = dark_modules(svg)
    assert img.shape[0] == img.shape[1] and (img.shape[0] - 8 - 17) % 4 == 0  # 17 + 4v + 2x4
    assert not img[:4].any() and not img[-4:].any() and not img[:, :4].any()
    assert img[4, 4:11].all()  # the top-left finder pattern's top edge, 7 modules
    assert "<title>QR code for http://x/?a=&lt;b&gt;&amp;c</title>" in svg
    assert 'width="' not in svg.split(">", 1)[0]  # no fixed size: the page scales it


def test_a_corrupted_picture_does_not_read() -> None:
    """The decoder really checks what it reads: wipe the finder patterns and it finds none."""
    svg = qr_svg(TEXTS[0])
    img = dark_modules(svg)
    img[4:12, 4:12] = False
    img[4:12, -12:-4] = False
    pic = np.kron(np.where(img, 0, 255).astype(np.uint8), np.ones((4, 4), dtype=np.uint8))
    assert zxingcpp.read_barcodes(pic) == []
