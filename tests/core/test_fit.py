"""The compiled resource-fit kernel against a plain numpy expression of the same rule."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kubesalvo.core import _fit
from kubesalvo.core.fit import fit_mask


def test_extension_is_compiled():
    assert _fit.__file__.endswith((".so", ".pyd"))


def test_fits_only_where_every_requested_resource_has_room():
    alloc = np.array([[4000, 8 << 30, 110], [2000, 8 << 30, 110], [4000, 1 << 30, 110]])
    used = np.array([[1000, 1 << 30, 3], [1500, 0, 1], [0, 0, 0]])
    mask = fit_mask(alloc, used, [1000, 2 << 30, 1])
    assert mask.tolist() == [1, 0, 0]


def test_zero_request_fits_a_node_without_that_resource():
    alloc = np.array([[1000, 0], [1000, 2]])  # column 1: an extended resource, e.g. a GPU
    used = np.zeros_like(alloc)
    assert fit_mask(alloc, used, [500, 0]).tolist() == [1, 1]
    assert fit_mask(alloc, used, [500, 1]).tolist() == [0, 1]


def test_shape_mismatch_is_refused():
    with pytest.raises(ValueError, match="request has shape"):
        fit_mask(np.zeros((2, 3)), np.zeros((2, 3)), [1, 2])


matrices = hnp.arrays(
    np.int64, st.tuples(st.integers(1, 30), st.integers(1, 5)), elements=st.integers(0, 10_000)
)


@given(alloc=matrices, data=st.data())
def test_kernel_matches_numpy_reference(alloc, data):
    used = data.draw(hnp.arrays(np.int64, alloc.shape, elements=st.integers(0, 10_000)))
    req = data.draw(hnp.arrays(np.int64, alloc.shape[1], elements=st.integers(0, 10_000)))
    expected = np.all((req == 0) | (used + req <= alloc), axis=1).astype(np.uint8)
    assert fit_mask(alloc, used, req).tolist() == expected.tolist()
