"""Array backends: where GD's Adam steps and AMP's iterations run (docs/theory.md §12).

``"numpy"`` (the default) is aimlib's CPU path: NumPy with its numba kernels.  Every other
backend runs one array-API code path (the Python array API standard through
``array-api-compat``), so that a GPU library and the CPU reference share their code:

- ``"cupy"``, ``"torch"``: CuPy or PyTorch on the first CUDA GPU (``pip install -e '.[gpu]'``
  installs CuPy; PyTorch is used where it is installed);
- ``"array_api"``: the same path on NumPy (the CPU reference of the GPU code, run in CI);
- ``"array_api_strict"``: the same path on ``array-api-strict``, which rejects every call
  outside the standard (run in CI, so that the GPU path uses nothing a GPU library may lack).

A backend is checked before any job runs (:func:`check`): a missing package or GPU is one line
naming the option and the install command.  TF32 stays off on PyTorch (float64 and float32
results are what they claim to be).

This module imports nothing heavy; a backend's package is imported when it is first used.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from functools import cache

import numpy as np

__all__ = ["BACKENDS", "GPU_BACKENDS", "DEFAULT", "Backend", "check", "get", "is_gpu",
           "out_of_memory"]

#: The default backend: NumPy and numba on the CPU.
DEFAULT = "numpy"
#: Backends and the package each needs.
BACKENDS: dict[str, str | None] = {
    "numpy": None,
    "array_api": "array_api_compat",
    "array_api_strict": "array_api_strict",
    "cupy": "cupy",
    "torch": "torch",
}
#: Backends that run on a CUDA GPU (their jobs request one on SLURM).
GPU_BACKENDS = ("cupy", "torch")
#: What to install for each (the message of a missing package).
INSTALL = {
    "array_api": "pip install -e '.[test]'",
    "array_api_strict": "pip install -e '.[test]'",
    "cupy": "pip install -e '.[gpu]'",
    "torch": "pip install torch (a CUDA build)",
}


def is_gpu(name: str) -> bool:
    """Whether backend ``name`` runs on a GPU."""
    return name in GPU_BACKENDS


@dataclass(frozen=True)
class Backend:
    """An array namespace and how data moves to and from it.

    Attributes
    ----------
    name : str
        One of :data:`BACKENDS` (not ``"numpy"``: that is the numba path, not this class).
    xp : module
        The array-API namespace.
    device : object
        Where arrays are created (``None``: the namespace's default).
    """

    name: str
    xp: object
    device: object = None

    def asarray(self, a, dtype: str = "float64"):
        """``a`` (a NumPy array or a scalar) on the backend, in ``dtype``."""
        xp = self.xp
        return xp.asarray(np.ascontiguousarray(a, dtype=dtype), device=self.device)

    def to_host(self, a) -> np.ndarray:
        """A backend array as a NumPy array (a copy off the GPU)."""
        if self.name == "cupy":
            return a.get()
        if self.name == "torch":
            return a.detach().cpu().numpy()
        if self.name == "array_api_strict":
            return np.from_dlpack(a)
        return np.asarray(a)

    def scalar(self, a) -> float:
        """A 0-d backend array as a Python float."""
        return float(self.to_host(a))

    def dtype(self, name: str):
        """The namespace's dtype called ``name`` (``"float32"``, ``"float64"``)."""
        return getattr(self.xp, name)

    def synchronize(self) -> None:
        """Wait for the device (timings)."""
        if self.name == "cupy":
            import cupy  # an optional GPU package

            cupy.cuda.Device().synchronize()
        elif self.name == "torch":
            import torch  # an optional GPU package

            torch.cuda.synchronize()

    def out_of_memory(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the device running out of memory."""
        return type(exc).__name__ in ("OutOfMemoryError", "OutOfMemoryError_")


def out_of_memory(name: str, exc: BaseException) -> bool:
    """Whether ``exc`` is backend ``name``'s device running out of memory (never on the CPU
    path, where a ``MemoryError`` is Python's own): what AMP and GD turn into a ``MemoryError``
    that says how much the run needs."""
    return name != DEFAULT and get(name).out_of_memory(exc)


def check(name: str, key: str = "backend", *, device: bool = True) -> None:
    """``ValueError`` (one line naming ``key`` and the install command) unless backend ``name``
    can run here: its package is installed and, with ``device``, imports and (for a GPU
    backend) sees a CUDA GPU.  ``device=False`` is the configuration's check on the machine that
    submits the jobs (a cluster's login node has the packages but not the GPUs)."""
    if name not in BACKENDS:
        raise ValueError(f"{key}: unknown backend {name!r} (choose from {', '.join(BACKENDS)})")
    if name == DEFAULT:
        return
    packages = [BACKENDS[name]] + (["array_api_compat"] if name in GPU_BACKENDS else [])
    missing = [p for p in packages if importlib.util.find_spec(p) is None]
    if missing:
        raise ValueError(f"{key}: {name} needs the package {missing[0]!r}, which is not "
                         f"installed ({INSTALL[name]})")
    if not device:
        return
    try:
        get(name)
    except ImportError as exc:
        raise ValueError(f"{key}: {name} needs the package {BACKENDS[name]!r}, which is not "
                         f"installed ({INSTALL[name]}): {exc}") from None
    except RuntimeError as exc:
        raise ValueError(f"{key}: {name} needs a CUDA GPU, and none is usable here: "
                         f"{exc}") from None


@cache
def get(name: str) -> Backend:
    """The :class:`Backend` called ``name`` (``ImportError`` without its package,
    ``RuntimeError`` without a GPU)."""
    if name not in BACKENDS or name == DEFAULT:
        raise ValueError(f"no array-API backend called {name!r}")
    if name == "array_api":
        from array_api_compat import numpy as xp  # an optional package (the array-API path)

        return Backend(name, xp)
    if name == "array_api_strict":
        xp = importlib.import_module("array_api_strict")
        return Backend(name, xp)
    if name == "cupy":
        cupy = importlib.import_module("cupy")
        from array_api_compat import cupy as xp  # an optional package (the array-API path)

        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # noqa: BLE001 - CUDA's own errors vary by driver
            raise RuntimeError(str(exc)) from None
        if count < 1:
            raise RuntimeError("cupy sees no CUDA device")
        return Backend(name, xp, cupy.cuda.Device(0))
    torch = importlib.import_module("torch")
    from array_api_compat import torch as xp  # an optional package (the array-API path)

    if not torch.cuda.is_available():
        raise RuntimeError("torch.cuda.is_available() is False")
    # float32 products are float32 products: no TF32 (off by default for matmul, said here)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return Backend(name, xp, torch.device("cuda:0"))
