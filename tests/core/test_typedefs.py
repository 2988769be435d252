"""The C types of core/_typedefs.pxd match the numpy dtypes the Python side allocates."""

import re
from pathlib import Path

import numpy as np

from kubesalvo.core import _typedefs

PXD = Path(__file__).resolve().parents[2] / "core" / "_typedefs.pxd"
C_TO_NUMPY = {
    "int32_t": np.int32,
    "int64_t": np.int64,
    "uint8_t": np.uint8,
    "uint64_t": np.uint64,
}
PY_NAME = {
    "quantity_t": "QUANTITY",
    "node_t": "NODE",
    "mask_t": "MASK",
    "bits_t": "BITS",
    "score_t": "SCORE",
}


def test_every_ctypedef_matches_its_numpy_dtype():
    found = {
        name: c_type for c_type, name in re.findall(r"^ctypedef (\w+) (\w+)", PXD.read_text(), re.M)
    }
    assert set(found) == set(PY_NAME), "each ctypedef needs a numpy twin in core/_typedefs.py"
    for c_name, c_type in found.items():
        assert getattr(_typedefs, PY_NAME[c_name]) == np.dtype(C_TO_NUMPY[c_type]), c_name
