"""Syntax checks for label keys and values, as the API server applies them.

Used by the plugin args (core/plugins) that carry label keys (topology keys, ignored
resources, node affinity terms). Each check returns the problems found as short sentences; an
empty list means the name is valid.
"""

from __future__ import annotations

import re

__all__ = ["label_value_problems", "qualified_name_problems"]

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME_RULE = (
    "must be 63 characters or less, begin and end with an alphanumeric character "
    "([A-Za-z0-9]) and contain only alphanumerics, '-', '_' and '.'"
)


def qualified_name_problems(name: str) -> list[str]:
    """Problems with a label key such as ``topology.kubernetes.io/zone``."""
    parts = name.split("/")
    if len(parts) > 2:
        return [
            "a qualified name is an optional DNS subdomain prefix, '/', and a name: "
            "it holds at most one '/'"
        ]
    problems: list[str] = []
    if len(parts) == 2:
        prefix, short = parts
        if not prefix:
            problems.append("prefix part must be non-empty")
        elif len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix):
            problems.append(
                "prefix part must be a lowercase RFC 1123 subdomain of at most 253 characters "
                "(e.g. 'example.com')"
            )
    else:
        short = parts[0]
    if not short:
        problems.append("name part must be non-empty")
    elif len(short) > 63 or not _NAME.match(short):
        problems.append(f"name part {_NAME_RULE}")
    return problems


def label_value_problems(value: str) -> list[str]:
    """Problems with a label value (empty is allowed)."""
    if value == "" or (len(value) <= 63 and _NAME.match(value)):
        return []
    return [f"a label value must be empty or {_NAME_RULE}"]
