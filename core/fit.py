"""Public wrapper of the resource-fit kernel: validates shapes and dtypes once, then calls it."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from kubesalvo.core import _typedefs
from kubesalvo.core._fit import fit_mask as _fit_mask


def fit_mask(
    allocatable: npt.ArrayLike, requested: npt.ArrayLike, request: npt.ArrayLike
) -> npt.NDArray[np.uint8]:
    """Return a 0/1 mask of the nodes (rows) on which ``request`` fits beside ``requested``."""
    alloc = np.ascontiguousarray(allocatable, dtype=_typedefs.QUANTITY)
    used = np.ascontiguousarray(requested, dtype=_typedefs.QUANTITY)
    req = np.ascontiguousarray(request, dtype=_typedefs.QUANTITY)
    if alloc.ndim != 2 or alloc.shape != used.shape:
        raise ValueError(
            f"allocatable {alloc.shape} and requested {used.shape} must be equal 2-d shapes"
        )
    if req.shape != (alloc.shape[1],):
        raise ValueError(f"request has shape {req.shape}, expected ({alloc.shape[1]},)")
    out = np.empty(alloc.shape[0], dtype=_typedefs.MASK)
    _fit_mask(alloc, used, req, out)
    return out
