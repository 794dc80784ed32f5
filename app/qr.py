"""QR codes, made here (no network, no extra package): byte mode, error correction level M,
versions 1-10 (up to 213 bytes, plenty for a join link), Reed-Solomon over GF(256) and the
usual choice of the mask with the lowest penalty (ISO/IEC 18004).

    matrix = encode("http://192.168.1.20:8000/")   # rows of booleans, True = dark
    svg = to_svg(matrix)                           # a scalable picture, 4-module quiet zone
"""

from __future__ import annotations

# Level M, versions 1-10: (error-correction codewords per block, [(blocks, data codewords)]).
_BLOCKS_M: dict[int, tuple[int, list[tuple[int, int]]]] = {
    1: (10, [(1, 16)]),
    2: (16, [(1, 28)]),
    3: (26, [(1, 44)]),
    4: (18, [(2, 32)]),
    5: (24, [(2, 43)]),
    6: (16, [(4, 27)]),
    7: (18, [(4, 31)]),
    8: (22, [(2, 38), (2, 39)]),
    9: (22, [(3, 36), (2, 37)]),
    10: (26, [(4, 43), (1, 44)]),
}
# Centres of the alignment patterns, per version (the same list for rows and columns).
_ALIGN = {
    1: [],
    2: [6, 18],
    3: [6, 22],
    4: [6, 26],
    5: [6, 30],
    6: [6, 34],
    7: [6, 22, 38],
    8: [6, 24, 42],
    9: [6, 26, 46],
    10: [6, 28, 50],
}
_FORMAT_LEVEL_M = 0b00  # the two level bits of the format information
MAX_VERSION = max(_BLOCKS_M)

Matrix = list[list[bool]]


class TooLong(ValueError):
    """The text does not fit the largest version this encoder makes."""


# --- Reed-Solomon over GF(256), polynomial x^8 + x^4 + x^3 + x^2 + 1 -------------------------


def _gf_mul(x: int, y: int) -> int:
    z = 0
    for i in range(7, -1, -1):
        z = (z << 1) ^ ((z >> 7) * 0x11D)
        z ^= ((y >> i) & 1) * x
    return z


def _rs_divisor(degree: int) -> list[int]:
    """Coefficients of prod (x - a^i), i < degree, highest power first, leading 1 dropped."""
    result = [0] * (degree - 1) + [1]
    root = 1
    for _ in range(degree):
        for j in range(degree):
            result[j] = _gf_mul(result[j], root)
            if j + 1 < degree:
                result[j] ^= result[j + 1]
        root = _gf_mul(root, 2)
    return result


def rs_remainder(data: list[int], degree: int) -> list[int]:
    """The error-correction codewords of `data`."""
    divisor = _rs_divisor(degree)
    result = [0] * degree
    for b in data:
        factor = b ^ result.pop(0)
        result.append(0)
        for i, coef in enumerate(divisor):
            result[i] ^= _gf_mul(coef, factor)
    return result


# --- the codewords ---------------------------------------------------------------------------


def data_capacity(version: int) -> int:
    _, groups = _BLOCKS_M[version]
    return sum(n * k for n, k in groups)


def _count_bits(version: int) -> int:
    return 8 if version < 10 else 16


def byte_capacity(version: int) -> int:
    return (data_capacity(version) * 8 - 4 - _count_bits(version)) // 8


def choose_version(n_bytes: int) -> int:
    for v in _BLOCKS_M:
        if n_bytes <= byte_capacity(v):
            return v
    raise TooLong(f"{n_bytes} bytes do not fit a QR code here (at most {byte_capacity(10)})")


def codewords(data: bytes, version: int) -> list[int]:
    """Data in byte mode, padded, split into blocks, each with its error correction, then
    interleaved in the order the symbol holds them."""
    bits: list[int] = []

    def put(value: int, n: int) -> None:
        bits.extend((value >> i) & 1 for i in range(n - 1, -1, -1))

    put(0b0100, 4)
    put(len(data), _count_bits(version))
    for b in data:
        put(b, 8)
    capacity = data_capacity(version) * 8
    put(0, min(4, capacity - len(bits)))  # terminator
    put(0, -len(bits) % 8)
    words = [int("".join(map(str, bits[i : i + 8])), 2) for i in range(0, len(bits), 8)]
    pad = 0xEC
    while len(words) < data_capacity(version):
        words.append(pad)
        pad ^= 0xEC ^ 0x11
    ec_len, groups = _BLOCKS_M[version]
    blocks: list[list[int]] = []
    at = 0
    for n, k in groups:
        for _ in range(n):
            blocks.append(words[at : at + k])
            at += k
    ecs = [rs_remainder(b, ec_len) for b in blocks]
    out: list[int] = []
    for i in range(max(len(b) for b in blocks)):
        out += [b[i] for b in blocks if i < len(b)]
    for i in range(ec_len):
        out += [e[i] for e in ecs]
    return out


# --- the symbol ------------------------------------------------------------------------------


def _mask_bit(mask: int, x: int, y: int) -> bool:
    return [
        (x + y) % 2 == 0,
        y % 2 == 0,
        x % 3 == 0,
        (x + y) % 3 == 0,
        (x // 3 + y // 2) % 2 == 0,
        x * y % 2 + x * y % 3 == 0,
        (x * y % 2 + x * y % 3) % 2 == 0,
        ((x + y) % 2 + x * y % 3) % 2 == 0,
    ][mask]


class _Symbol:
    def __init__(self, version: int) -> None:
        self.version = version
        self.size = size = version * 4 + 17
        self.dark: Matrix = [[False] * size for _ in range(size)]
        self.fixed: Matrix = [[False] * size for _ in range(size)]
        self._function_patterns()

    def set(self, x: int, y: int, dark: bool) -> None:
        self.dark[y][x] = dark
        self.fixed[y][x] = True

    def _function_patterns(self) -> None:
        size = self.size
        for i in range(size):  # timing patterns
            self.set(6, i, i % 2 == 0)
            self.set(i, 6, i % 2 == 0)
        for cx, cy in ((3, 3), (size - 4, 3), (3, size - 4)):  # finders and their separators
            for dy in range(-4, 5):
                for dx in range(-4, 5):
                    x, y = cx + dx, cy + dy
                    if 0 <= x < size and 0 <= y < size:
                        self.set(x, y, max(abs(dx), abs(dy)) not in (2, 4))
        centres = _ALIGN[self.version]
        last = len(centres) - 1
        for i, cx in enumerate(centres):
            for j, cy in enumerate(centres):
                if (i, j) in ((0, 0), (0, last), (last, 0)):
                    continue  # where the finders are
                for dy in range(-2, 3):
                    for dx in range(-2, 3):
                        self.set(cx + dx, cy + dy, max(abs(dx), abs(dy)) != 1)
        self.format_bits(0)  # reserve the format areas (drawn for real per mask)
        if self.version >= 7:
            rem = self.version
            for _ in range(12):
                rem = (rem << 1) ^ ((rem >> 11) * 0x1F25)
            bits = self.version << 12 | rem
            for i in range(18):
                bit = bool((bits >> i) & 1)
                a, b = size - 11 + i % 3, i // 3
                self.set(a, b, bit)
                self.set(b, a, bit)

    def format_bits(self, mask: int) -> None:
        size = self.size
        data = _FORMAT_LEVEL_M << 3 | mask
        rem = data
        for _ in range(10):
            rem = (rem << 1) ^ ((rem >> 9) * 0x537)
        bits = (data << 10 | rem) ^ 0x5412

        def bit(i: int) -> bool:
            return bool((bits >> i) & 1)

        for i in range(6):
            self.set(8, i, bit(i))
        self.set(8, 7, bit(6))
        self.set(8, 8, bit(7))
        self.set(7, 8, bit(8))
        for i in range(9, 15):
            self.set(14 - i, 8, bit(i))
        for i in range(8):
            self.set(size - 1 - i, 8, bit(i))
        for i in range(8, 15):
            self.set(8, size - 15 + i, bit(i))
        self.set(8, size - 8, True)  # the dark module

    def place(self, words: list[int]) -> None:
        """The codewords in the two-column zigzag, right to left, skipping function modules."""
        size, i, n = self.size, 0, len(words) * 8
        right = size - 1
        while right >= 1:
            if right == 6:
                right = 5  # the vertical timing pattern
            upward = ((right + 1) & 2) == 0
            for vert in range(size):
                y = size - 1 - vert if upward else vert
                for j in range(2):
                    x = right - j
                    if not self.fixed[y][x] and i < n:
                        self.dark[y][x] = bool((words[i >> 3] >> (7 - (i & 7))) & 1)
                        i += 1
            right -= 2

    def masked(self, mask: int) -> Matrix:
        out = [row[:] for row in self.dark]
        for y in range(self.size):
            for x in range(self.size):
                if not self.fixed[y][x] and _mask_bit(mask, x, y):
                    out[y][x] = not out[y][x]
        return out


def penalty(m: Matrix) -> int:
    """The standard's score for a masked symbol: long runs, 2x2 blocks, finder-like patterns
    and an uneven share of dark modules all cost; the lowest score wins."""
    size = len(m)
    score = 0
    lines = [row for row in m] + [[m[y][x] for y in range(size)] for x in range(size)]
    finder_a = [True, False, True, True, True, False, True, False, False, False, False]
    finder_b = finder_a[::-1]
    for line in lines:
        run, prev = 0, None
        for v in line:
            if v == prev:
                run += 1
            else:
                if run >= 5:
                    score += 3 + run - 5
                run, prev = 1, v
        if run >= 5:
            score += 3 + run - 5
        for i in range(size - 10):
            window = line[i : i + 11]
            if window == finder_a or window == finder_b:
                score += 40
    for y in range(size - 1):
        for x in range(size - 1):
            v = m[y][x]
            if v == m[y][x + 1] == m[y + 1][x] == m[y + 1][x + 1]:
                score += 3
    dark = sum(sum(row) for row in m)
    total = size * size
    score += 10 * (abs(dark * 20 - total * 10) // total)
    return score


def encode(text: str | bytes, *, mask: int | None = None, version: int | None = None) -> Matrix:
    """The symbol for `text` (UTF-8), as rows of booleans, True = dark, without quiet zone."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    v = version or choose_version(len(data))
    if len(data) > byte_capacity(v):
        raise TooLong(f"{len(data)} bytes do not fit version {v}")
    sym = _Symbol(v)
    sym.place(codewords(data, v))
    best: tuple[int, Matrix] | None = None
    for k in range(8) if mask is None else [mask]:
        sym.format_bits(k)
        m = sym.masked(k)
        score = penalty(m) if mask is None else 0
        if best is None or score < best[0]:
            best = (score, m)
    assert best is not None
    return best[1]


def to_svg(matrix: Matrix, *, border: int = 4, title: str = "") -> str:
    """An SVG of the symbol, one unit per module, dark on white with a quiet zone, drawn as
    one path (crisp at any size: the page scales it to fit)."""
    n = len(matrix) + 2 * border
    runs = []
    for y, row in enumerate(matrix):
        x = 0
        while x < len(row):
            if row[x]:
                start = x
                while x < len(row) and row[x]:
                    x += 1
                runs.append(f"M{start + border} {y + border}h{x - start}v1h-{x - start}z")
            else:
                x += 1
    label = f"<title>{_escape(title)}</title>" if title else ""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {n} {n}" '
        f'shape-rendering="crispEdges" role="img">{label}'
        f'<rect width="{n}" height="{n}" fill="#fff"/>'
        f'<path fill="#000" d="{"".join(runs)}"/></svg>'
    )


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
