"""The one array namespace the engine's maths goes through.

NumPy by default. The model, the optimiser and the collectives call `xp.<op>` with NumPy's
names (matmul, exp, sum, max, ... with `out=` and `axis=`), so another array library can stand
in: `use("torch", "cuda")` puts PyTorch tensors behind the same names (torch_ns.py), and the
same model code trains on a GPU. Results match NumPy within float32 rounding.

`xp` is one object whose attributes are swapped when the backend changes, so modules that did
`from .backend import xp` follow the switch, and a lookup costs what a module lookup costs (the
NumPy path stays as fast as calling NumPy directly). Choose the backend before building a
Trainer; arrays made under one backend are not meant for the other.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

BACKENDS = ("numpy", "torch")
DEVICES = ("cpu", "cuda")


class _Namespace:
    """Attributes copied from the active array namespace (see `use`)."""

    def __repr__(self) -> str:
        return f"<array namespace {active.name} on {active.device}>"


xp: Any = _Namespace()


@dataclass(frozen=True)
class Active:
    name: str = "numpy"
    device: str = "cpu"
    note: str | None = None  # why the device asked for is not the one used, if it is not


active = Active()
_impl: Any = None  # the torch namespace object when torch is active


def _fill(source: dict[str, Any]) -> None:
    xp.__dict__.clear()
    xp.__dict__.update({k: v for k, v in source.items() if not k.startswith("__")})


def _numpy_add_at(a, indices, values) -> None:
    """a[indices] += values, every repeated index adding up (np.add.at's meaning).

    np.add.at itself goes element by element and is slow for rows (the embedding's gradient
    spent more time in it than in any matmul). So the rows bound for one place are summed
    first (a stable sort, then add.reduceat) and added to it once. The sums round as
    reduceat rounds, which may differ from np.add.at's running sum in the last bits; they
    depend only on the values, never on where their rows sit."""
    indices = indices if isinstance(indices, tuple) else (indices,)
    values = np.asarray(values)
    k = len(indices)
    n = values.shape[0] if values.ndim else 0
    if values.ndim != 1 + a.ndim - k or any(np.ndim(i) != 1 or len(i) != n for i in indices):
        np.add.at(a, indices, values)
        return
    if n == 0:
        return
    flat = np.ravel_multi_index(tuple(np.asarray(i) for i in indices), a.shape[:k])
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    sums = np.add.reduceat(values[order], starts, axis=0)
    a[np.unravel_index(ordered[starts], a.shape[:k])] += sums


def _numpy_to_numpy(a) -> np.ndarray:
    return np.asarray(a)


def _use_numpy() -> None:
    global _impl
    _impl = None
    _fill(vars(np))
    xp.add_at = _numpy_add_at
    xp.to_numpy = _numpy_to_numpy
    xp.synchronize = lambda: None


class BackendError(RuntimeError):
    """The backend asked for cannot be used here (said in one line)."""


def torch_available() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def cuda_available() -> bool:
    if not torch_available():
        return False
    import torch

    return bool(torch.cuda.is_available())


def use(name: str = "numpy", device: str = "cpu") -> Active:
    """Make `name` ("numpy" or "torch") on `device` ("cpu" or "cuda") the engine's namespace.

    NumPy runs on the CPU only. Asking for torch on "cuda" where CUDA is absent falls back to
    torch on the CPU, and the returned `note` says so. Raises BackendError when torch is asked
    for and is not installed."""
    global active, _impl
    if name not in BACKENDS:
        raise BackendError(f"backend must be one of {', '.join(BACKENDS)}, got {name!r}")
    if device not in DEVICES:
        raise BackendError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    if name == "numpy":
        if device != "cpu":
            raise BackendError("the numpy backend runs on the CPU; use --backend torch for cuda")
        _use_numpy()
        active = Active()
        return active
    if not torch_available():
        raise BackendError(
            "the torch backend needs PyTorch: pip install 'trainingrun[torch]' "
            "(or run with --backend numpy)"
        )
    note = None
    if device == "cuda" and not cuda_available():
        note = "CUDA is not available here (no GPU, or a CPU-only PyTorch): running on the CPU"
        device = "cpu"
    from .torch_ns import TorchNamespace

    _impl = TorchNamespace(device)
    _fill({k: getattr(_impl, k) for k in dir(_impl) if not k.startswith("_")})
    active = Active("torch", device, note)
    return active


def dtype_of(name: str):
    """Map a config dtype name to the namespace's dtype."""
    return {"float32": xp.float32, "float64": xp.float64}[name]


def to_numpy(a) -> np.ndarray:
    """A NumPy array of `a` (copied to the host from a GPU)."""
    return xp.to_numpy(a)


_use_numpy()


# ---- numpy's BLAS threads ------------------------------------------------------------------
# The product trains with one BLAS thread (app/cli/main.py sets it before numpy is imported);
# a process that imported numpy already (a test run, a benchmark) sets it through these.
def _openblas(op: str):
    """OpenBLAS's get/set_num_threads as loaded by numpy, or None (another BLAS, not Linux)."""
    names = (f"scipy_openblas_{op}_num_threads64_", f"openblas_{op}_num_threads64_")
    names += (f"openblas_{op}_num_threads",)
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "openblas" in line.lower()}
        for path in sorted(libs):
            lib = ctypes.CDLL(path)
            for sym in names:
                fn = getattr(lib, sym, None)
                if fn is not None:
                    return fn
    except OSError:
        pass
    return None


def set_blas_threads(n: int) -> bool:
    """Ask numpy's OpenBLAS to use n threads; False if that cannot be done from here."""
    fn = _openblas("set")
    if fn is None:
        return False
    fn(int(n))
    return True


def blas_threads() -> int:
    """Threads numpy's BLAS (OpenBLAS) will use: asked of the library itself when possible."""
    fn = _openblas("get")
    if fn is not None:
        return int(fn())
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return os.cpu_count() or 1
