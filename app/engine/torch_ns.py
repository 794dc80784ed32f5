"""PyTorch tensors behind the engine's array namespace (see backend.py).

The engine writes its maths as `xp.<op>(..., out=...)` in NumPy's spelling (the array API's
names plus NumPy's `out=` and `axis=`). `TorchNamespace` gives the same names over torch
tensors on one device, so the model, the optimiser and the ring all-reduce run unchanged on a
CPU or a CUDA GPU. Only the operations the engine uses are here; each keeps NumPy's meaning
(shapes, broadcasting, in-place writes through views), which the engine's tests check by
running the same steps on both.

Imported only when the torch backend is chosen: torch is an optional extra.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

_DTYPES = {
    np.dtype("float32"): torch.float32,
    np.dtype("float64"): torch.float64,
    np.dtype("int64"): torch.int64,
    np.dtype("int32"): torch.int32,
    np.dtype("bool"): torch.bool,
}


class TorchNamespace:
    """NumPy-spelled array operations on torch tensors living on `device`."""

    float32 = torch.float32
    float64 = torch.float64
    int64 = torch.int64
    bool_ = torch.bool
    inf = float("inf")

    def __init__(self, device: str = "cpu") -> None:
        self.device = torch.device(device)
        self.name = "torch"

    # ---- dtypes and conversion ------------------------------------------------------------
    def _dt(self, dtype: Any) -> torch.dtype | None:
        if dtype is None or isinstance(dtype, torch.dtype):
            return dtype
        if dtype is float:
            return torch.float64
        if dtype is int:
            return torch.int64
        return _DTYPES[np.dtype(dtype)]

    def asarray(self, a: Any, dtype: Any = None, copy: bool | None = None) -> torch.Tensor:
        dt = self._dt(dtype)
        if isinstance(a, torch.Tensor):
            out = a.to(device=self.device, dtype=dt or a.dtype)
            return out.clone() if copy and out is a else out
        if isinstance(a, np.ndarray) or np.isscalar(a):
            arr = np.asarray(a)
            t = torch.from_numpy(np.ascontiguousarray(arr)) if arr.ndim else torch.tensor(a)
            out = t.to(device=self.device, dtype=dt or t.dtype)
            # Like np.asarray, a CPU tensor of the same dtype shares the NumPy array's memory.
            return out.clone() if copy and out.data_ptr() == t.data_ptr() else out
        return torch.as_tensor(np.asarray(a), dtype=dt, device=self.device)

    def array(self, a: Any, dtype: Any = None, copy: bool = True) -> torch.Tensor:
        return self.asarray(a, dtype=dtype, copy=copy)

    def ascontiguousarray(self, a: Any) -> torch.Tensor:
        return self.asarray(a).contiguous()

    # ---- creation -------------------------------------------------------------------------
    def empty(self, shape, dtype: Any = None) -> torch.Tensor:
        return torch.empty(shape, dtype=self._dt(dtype) or torch.float64, device=self.device)

    def zeros(self, shape, dtype: Any = None) -> torch.Tensor:
        return torch.zeros(shape, dtype=self._dt(dtype) or torch.float64, device=self.device)

    def ones(self, shape, dtype: Any = None) -> torch.Tensor:
        return torch.ones(shape, dtype=self._dt(dtype) or torch.float64, device=self.device)

    def full(self, shape, fill_value, dtype: Any = None) -> torch.Tensor:
        dt = self._dt(dtype) or torch.float64
        return torch.full(shape, fill_value, dtype=dt, device=self.device)

    def arange(self, *args, dtype: Any = None) -> torch.Tensor:
        return torch.arange(*args, dtype=self._dt(dtype) or torch.int64, device=self.device)

    def empty_like(self, a: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(a, memory_format=torch.contiguous_format)

    def zeros_like(self, a: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(a, memory_format=torch.contiguous_format)

    # ---- shapes ---------------------------------------------------------------------------
    def reshape(self, a: torch.Tensor, shape) -> torch.Tensor:
        if not isinstance(a, torch.Tensor):
            a = self.asarray(a)
        return torch.reshape(a, tuple(shape) if not isinstance(shape, int) else (shape,))

    def swapaxes(self, a: torch.Tensor, i: int, j: int) -> torch.Tensor:
        return torch.swapaxes(a, i, j)

    def permute_dims(self, a: torch.Tensor, axes) -> torch.Tensor:
        return torch.permute(a, tuple(axes))

    def concatenate(self, arrays, axis: int = 0) -> torch.Tensor:
        return torch.cat(list(arrays), dim=axis)

    def repeat(self, a: torch.Tensor, repeats, axis: int | None = None) -> torch.Tensor:
        a = self.asarray(a)
        if axis is None:
            a = a.reshape(-1)
            axis = 0
        if not isinstance(repeats, int):
            repeats = self.asarray(repeats)
        return torch.repeat_interleave(a, repeats, dim=axis)

    def tile(self, a: torch.Tensor, reps) -> torch.Tensor:
        return torch.tile(self.asarray(a), reps if isinstance(reps, tuple) else (reps,))

    # ---- arithmetic, written into `out` when given ----------------------------------------
    def _scalar(self, x: Any, like: torch.Tensor) -> Any:
        if isinstance(x, torch.Tensor):
            return x
        return torch.as_tensor(x, dtype=like.dtype, device=like.device)

    def _binary(self, fn, a, b, out):
        like = a if isinstance(a, torch.Tensor) else b
        a, b = self._scalar(a, like), self._scalar(b, like)
        if out is None:
            return fn(a, b)
        return fn(a, b, out=out)

    def add(self, a, b, out=None):
        return self._binary(torch.add, a, b, out)

    def subtract(self, a, b, out=None):
        return self._binary(torch.sub, a, b, out)

    def multiply(self, a, b, out=None):
        return self._binary(torch.mul, a, b, out)

    def divide(self, a, b, out=None):
        return self._binary(torch.div, a, b, out)

    def minimum(self, a, b, out=None):
        return self._binary(torch.minimum, a, b, out)

    def maximum(self, a, b, out=None):
        return self._binary(torch.maximum, a, b, out)

    def matmul(self, a, b, out=None):
        return torch.matmul(a, b) if out is None else torch.matmul(a, b, out=out)

    def sqrt(self, a, out=None):
        return torch.sqrt(a) if out is None else torch.sqrt(a, out=out)

    def exp(self, a, out=None):
        return torch.exp(a) if out is None else torch.exp(a, out=out)

    def log(self, a, out=None):
        return torch.log(a) if out is None else torch.log(a, out=out)

    def tanh(self, a, out=None):
        return torch.tanh(a) if out is None else torch.tanh(a, out=out)

    # ---- reductions -----------------------------------------------------------------------
    def _reduce(self, fn, a, axis, keepdims, out, **kw):
        a = self.asarray(a)
        if axis is None:
            r = fn(a, **kw)
            if keepdims:
                r = r.reshape((1,) * a.ndim)
        else:
            r = fn(a, dim=axis, keepdim=keepdims, **kw)
        if out is None:
            return r
        out.copy_(r)
        return out

    def sum(self, a, axis=None, keepdims=False, out=None, dtype=None):
        kw = {"dtype": self._dt(dtype)} if dtype is not None else {}
        return self._reduce(torch.sum, a, axis, keepdims, out, **kw)

    def mean(self, a, axis=None, keepdims=False, out=None):
        return self._reduce(torch.mean, a, axis, keepdims, out)

    def max(self, a, axis=None, keepdims=False, out=None):
        return self._reduce(torch.amax, a, () if axis is None else axis, keepdims, out)

    def min(self, a, axis=None, keepdims=False, out=None):
        return self._reduce(torch.amin, a, () if axis is None else axis, keepdims, out)

    def cumsum(self, a, axis=None):
        a = self.asarray(a)
        return torch.cumsum(a.reshape(-1) if axis is None else a, dim=0 if axis is None else axis)

    def vecdot(self, a, b, axis: int = -1):
        return torch.sum(a * b, dim=axis)

    # ---- indexing -------------------------------------------------------------------------
    def take(self, a, indices, axis: int | None = None, out=None):
        indices = self.asarray(indices)
        if axis is None:
            r = torch.take(a, indices)
        else:
            r = torch.index_select(a, axis, indices.reshape(-1))
            shape = a.shape[:axis] + indices.shape + a.shape[axis + 1 :]
            r = r.reshape(shape)
        if out is None:
            return r
        out.copy_(r)
        return out

    def take_along_axis(self, a, indices, axis: int):
        return torch.take_along_dim(a, self.asarray(indices), dim=axis)

    def put_along_axis(self, a, indices, values, axis: int) -> None:
        indices = self.asarray(indices)
        values = self._scalar(values, a).expand(indices.shape)
        a.scatter_(axis, indices, values)

    def argsort(self, a, axis: int = -1, kind: str | None = None, stable: bool = True):
        return torch.argsort(self.asarray(a), dim=axis, stable=True)

    def bincount(self, x, weights=None, minlength: int = 0):
        x = self.asarray(x)
        w = None if weights is None else self.asarray(weights)
        return torch.bincount(x, weights=w, minlength=minlength)

    def add_at(self, a, indices, values) -> None:
        """a[indices] += values, adding every repeated index (NumPy's np.add.at)."""
        idx = tuple(self.asarray(i) for i in indices)
        a.index_put_(idx, values, accumulate=True)

    # ---- leaving the namespace ------------------------------------------------------------
    def to_numpy(self, a: Any) -> np.ndarray:
        if isinstance(a, torch.Tensor):
            return a.detach().cpu().numpy()
        return np.asarray(a)

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
