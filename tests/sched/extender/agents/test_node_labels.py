"""Label selectors over node rows: the membership test agrees with ``np.isin``."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kubesalvo.sched.extender.agents.node_labels import _any_of


@given(
    st.lists(st.integers(-1, 30), max_size=200),
    st.lists(st.integers(0, 30), max_size=20),
)
def test_membership_is_np_isins_for_few_and_many_values(column, wanted):
    ids = np.array(column, dtype=np.int32)
    assert np.array_equal(_any_of(ids, wanted), np.isin(ids, wanted))
