"""app/qr.py makes QR codes itself (the app works offline); an independent decoder
(zxing-cpp) must read every one back, and the pieces agree with another encoder (segno)."""

from __future__ import annotations

import numpy as np
import pytest

from app import qr

zxingcpp = pytest.importorskip("zxingcpp")
segno = pytest.importorskip("segno")


def _read(matrix: list[list[bool]], scale: int = 3) -> list[str]:
    m = np.array(matrix, dtype=np.uint8)
    img = np.pad((1 - m) * 255, 4, constant_values=255).astype(np.uint8)
    img = np.kron(img, np.ones((scale, scale), dtype=np.uint8))
    return [(r.text, str(r.ec_level)) for r in zxingcpp.read_barcodes(img)]


TEXTS = [
    "http://192.168.1.20:8000/",
    "a",
    "http://teacher-pc.local:8000/?present=0",
    "x" * 60,
    "Grüße aus dem Klassenzimmer: 70B 🙂",
    "https://example.org/" + "0123456789" * 19,  # near the top of version 10
]


@pytest.mark.parametrize("text", TEXTS)
def test_every_symbol_decodes_to_its_text_with_every_mask(text: str) -> None:
    for mask in range(8):
        assert _read(qr.encode(text, mask=mask)) == [(text, "M")], mask


def test_versions_grow_with_the_text_and_too_long_is_refused() -> None:
    sizes = [len(qr.encode("y" * n)) for n in (1, 20, 40, 100, 200)]
    assert sizes == sorted(sizes) and sizes[0] == 21 and sizes[-1] == 57
    for v in range(1, qr.MAX_VERSION + 1):
        assert len(qr.encode("z" * qr.byte_capacity(v))) == 17 + 4 * v
    with pytest.raises(qr.TooLong):
        qr.encode("z" * (qr.byte_capacity(qr.MAX_VERSION) + 1))


def test_reed_solomon_matches_segnos_codewords() -> None:
    # Read segno's symbol back to its codewords: its error correction is our rs_remainder of
    # its data, for a one-block and a multi-block version.
    for text, version in (("a", 1), ("reed solomon " * 5, 5)):
        ref = segno.make(text, error="m", mode="byte", mask=0, version=version, boost_error=False)
        words = _codewords_of(ref.matrix, version, 0)
        ec_len, groups = qr._BLOCKS_M[version]
        assert len(groups) == 1 and groups[0][0] <= 2
        n, k = groups[0]
        data = words[: n * k]
        blocks = [data[i::n] for i in range(n)]
        ecs = words[n * k : n * k + n * ec_len]
        for i, block in enumerate(blocks):
            assert qr.rs_remainder(block, ec_len) == ecs[i::n]


def _codewords_of(matrix: object, version: int, mask: int) -> list[int]:
    sym = qr._Symbol(version)
    bits: list[int] = []
    right = sym.size - 1
    while right >= 1:
        if right == 6:
            right = 5
        up = ((right + 1) & 2) == 0
        for vert in range(sym.size):
            y = sym.size - 1 - vert if up else vert
            for j in range(2):
                x = right - j
                if not sym.fixed[y][x]:
                    bits.append(int(matrix[y][x]) ^ int(qr._mask_bit(mask, x, y)))
        right -= 2
    return [int("".join(map(str, bits[i : i + 8])), 2) for i in range(0, len(bits) // 8 * 8, 8)]


def test_function_patterns_format_and_version_bits_match_segno() -> None:
    for version in (1, 2, 7, 10):
        for mask in (0, 3, 6):
            ref = segno.make(
                "v", error="m", mode="byte", mask=mask, version=version, boost_error=False
            )
            mine = qr.encode("v", mask=mask, version=version)
            sym = qr._Symbol(version)
            for y in range(sym.size):
                for x in range(sym.size):
                    if sym.fixed[y][x]:
                        assert mine[y][x] == bool(ref.matrix[y][x]), (version, mask, x, y)


def test_the_chosen_mask_has_the_lowest_penalty_and_svg_is_a_clean_picture() -> None:
    text = "http://192.168.1.20:8000/"
    best = qr.encode(text)
    assert qr.penalty(best) == min(qr.penalty(qr.encode(text, mask=k)) for k in range(8))
    svg = qr.to_svg(best, title="join <link>")
    assert svg.startswith("<svg") and 'viewBox="0 0 33 33"' in svg and "&lt;link&gt;" in svg
