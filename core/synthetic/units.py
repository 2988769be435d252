"""Quantity strings in the forms the kubelet and users write them.

The generators compute every amount as an integer (millicores, bytes) and format it once, so
the strings they emit are exact and parse back to the same integers.
"""

from __future__ import annotations

KI = 1024
MI = 1024 * KI
GI = 1024 * MI


def cpu(millicores: int) -> str:
    """``4`` for whole cores, ``3920m`` otherwise (the kubelet's forms)."""
    if millicores % 1000 == 0:
        return str(millicores // 1000)
    return f"{millicores}m"


def binary(amount: int) -> str:
    """The shortest exact binary-suffixed form: ``16Gi``, ``512Mi``, ``1536Ki`` or bytes."""
    for suffix, unit in (("Gi", GI), ("Mi", MI), ("Ki", KI)):
        if amount % unit == 0 and amount >= unit:
            return f"{amount // unit}{suffix}"
    return str(amount)


def kibibytes(amount: int) -> str:
    """Kibibytes, as the kubelet reports memory capacity: ``15896676Ki``."""
    return f"{amount // KI}Ki"
