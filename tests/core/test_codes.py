"""The reason codes and fixed columns, declared once (core/_codes.pxd), seen from Python."""

from kubesalvo.core import _codes, _place
from kubesalvo.core.reasons import FIXED_REASONS, ReasonTable
from kubesalvo.core.state import POD_COLUMN


def test_extensions_are_compiled():
    for module in (_codes, _place):
        assert module.__file__.endswith((".so", ".pyd")), module.__file__


def test_codes_are_distinct_and_below_the_resource_codes():
    codes = [
        _codes.UNSCHEDULABLE,
        _codes.NODE_NAME,
        _codes.TAINT,
        _codes.NODE_AFFINITY,
        _codes.ENFORCED_AFFINITY,
        _codes.PORTS,
        _codes.NARROWED,
        _codes.SPREAD,
        _codes.SPREAD_LABEL,
        _codes.IPA_AFFINITY,
        _codes.IPA_ANTI,
        _codes.IPA_EXISTING,
        _codes.DRA_ALLOCATE,
        _codes.DRA_UNAVAILABLE,
        _codes.DRA_TIMEOUT,
        *range(_codes.EXTENSION_FIRST, _codes.EXTENSION_LAST + 1),
    ]
    assert len(set(codes)) == len(codes)
    assert _codes.NONE not in codes and max(codes) < _codes.FIRST_RESOURCE < _codes.ABSENT
    assert set(FIXED_REASONS) == set(codes) - set(
        range(_codes.EXTENSION_FIRST, _codes.EXTENSION_LAST + 1)
    )
    assert POD_COLUMN == _codes.POD_COLUMN


def test_resource_codes_follow_the_state_columns():
    table = ReasonTable.for_columns(["cpu", "memory", "ephemeral-storage", "pods", "example/x"])
    assert table.texts[_codes.FIRST_RESOURCE] == "Insufficient cpu"
    assert table.texts[_codes.FIRST_RESOURCE + _codes.POD_COLUMN] == "Too many pods"
    assert table.texts[_codes.FIRST_RESOURCE + 4] == "Insufficient example/x"
    assert {table.plugins[_codes.FIRST_RESOURCE + c] for c in range(5)} == {"NodeResourcesFit"}
