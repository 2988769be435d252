"""NodeAffinityArgs.addedAffinity: node selector terms read and checked like the API's.

The terms are read into plain frozen values, checked, and handed to the plugin's args
model (``core/plugins/node_affinity.py``) in the API shape by ``node_affinity_to_api``.
The checks are those kube-scheduler runs when it builds the selector (component-helpers'
nodeaffinity): known operators, values present for In/NotIn, absent
for Exists/DoesNotExist, one integer for Gt/Lt, valid label keys and values, and for
``matchFields`` only In/NotIn with exactly one value. A preferred term's weight must be
1-100 as in a pod's spec (kube-scheduler silently skips a weight of 0 here; kubesalvo
refuses it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesalvo.core.args_reading import ArgsDecoder, index
from kubesalvo.core.label_names import label_value_problems, qualified_name_problems
from kubesalvo.core.plugins.framework import ErrorKind

__all__ = [
    "FIELD_OPERATORS",
    "LABEL_OPERATORS",
    "NodeAffinity",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "PreferredSchedulingTerm",
    "decode_node_affinity",
    "node_affinity_to_api",
]

LABEL_OPERATORS = ("DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn")
FIELD_OPERATORS = ("In", "NotIn")


@dataclass(frozen=True)
class NodeSelectorRequirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeSelectorTerm:
    """Expressions are ANDed; a term with neither list matches no node."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


@dataclass(frozen=True)
class PreferredSchedulingTerm:
    weight: int
    preference: NodeSelectorTerm


@dataclass(frozen=True)
class NodeAffinity:
    """Terms every pod of the profile gets in addition to its own affinity.

    ``required`` is None when no required selector was given (every node passes); an
    empty tuple of terms would match nothing, exactly as in a pod's own nodeAffinity.
    """

    required: tuple[NodeSelectorTerm, ...] | None = None
    preferred: tuple[PreferredSchedulingTerm, ...] = ()


def _requirements(
    d: ArgsDecoder, raw: Any, path: str, operators: tuple[str, ...], is_field: bool
) -> tuple[NodeSelectorRequirement, ...]:
    out: list[NodeSelectorRequirement] = []
    for item, p in d.items(raw, path):
        f = d.fields(item, p, ("key", "operator", "values"))
        key = f.text("key")
        op = f.text("operator")
        values = tuple(f.text_list("values"))
        vpath = f.at("values")
        if op not in operators:
            d.fail(f.at("operator"), ErrorKind.UNSUPPORTED, op, accepted=operators)
        elif is_field:
            if len(values) != 1:
                d.invalid(vpath, list(values), "must have one element")
        else:
            for problem in qualified_name_problems(key):
                d.invalid(f.at("key"), key, problem)
            if op in ("In", "NotIn") and not values:
                d.invalid(vpath, list(values), "must not be empty for operators In and NotIn")
            elif op in ("Exists", "DoesNotExist") and values:
                d.invalid(
                    vpath, list(values), "must be empty for operators Exists and DoesNotExist"
                )
            elif op in ("Gt", "Lt"):
                if len(values) != 1:
                    d.invalid(vpath, list(values), "must hold exactly one value for Gt and Lt")
                for i, v in enumerate(values):
                    try:
                        int(v, 10)
                    except ValueError:
                        d.invalid(index(vpath, i), v, "must be an integer for Gt and Lt")
            for i, v in enumerate(values):
                for problem in label_value_problems(v):
                    d.invalid(index(vpath, i), v, problem)
        out.append(NodeSelectorRequirement(key, op, values))
    return tuple(out)


def _term(d: ArgsDecoder, raw: Any, path: str) -> NodeSelectorTerm:
    f = d.fields(raw, path, ("matchExpressions", "matchFields"))
    exprs = _requirements(
        d, f.raw("matchExpressions"), f.at("matchExpressions"), LABEL_OPERATORS, is_field=False
    )
    fields = _requirements(
        d, f.raw("matchFields"), f.at("matchFields"), FIELD_OPERATORS, is_field=True
    )
    for i, req in enumerate(fields):
        # The only node field a selector may name is the node's name.
        if req.key != "metadata.name":
            d.fail(
                index(f.at("matchFields"), i) + ".key",
                ErrorKind.UNSUPPORTED,
                req.key,
                accepted=("metadata.name",),
            )
    return NodeSelectorTerm(exprs, fields)


def decode_node_affinity(d: ArgsDecoder, raw: Any, path: str) -> NodeAffinity:
    f = d.fields(
        raw,
        path,
        (
            "requiredDuringSchedulingIgnoredDuringExecution",
            "preferredDuringSchedulingIgnoredDuringExecution",
        ),
    )
    required: tuple[NodeSelectorTerm, ...] | None = None
    if f.has("requiredDuringSchedulingIgnoredDuringExecution"):
        rpath = f.at("requiredDuringSchedulingIgnoredDuringExecution")
        sel = d.fields(
            f.raw("requiredDuringSchedulingIgnoredDuringExecution"), rpath, ("nodeSelectorTerms",)
        )
        tpath = sel.at("nodeSelectorTerms")
        required = tuple(_term(d, t, p) for t, p in d.items(sel.raw("nodeSelectorTerms"), tpath))
    preferred: list[PreferredSchedulingTerm] = []
    ppath = f.at("preferredDuringSchedulingIgnoredDuringExecution")
    for item, p in d.items(f.raw("preferredDuringSchedulingIgnoredDuringExecution"), ppath):
        pf = d.fields(item, p, ("weight", "preference"))
        weight = pf.integer("weight", 0) or 0
        if not 1 <= weight <= 100:
            d.invalid(pf.at("weight"), weight, "must be in the range 1-100")
        preferred.append(
            PreferredSchedulingTerm(weight, _term(d, pf.raw("preference"), pf.at("preference")))
        )
    return NodeAffinity(required, tuple(preferred))


def _term_to_api(term: NodeSelectorTerm) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, reqs in (
        ("matchExpressions", term.match_expressions),
        ("matchFields", term.match_fields),
    ):
        if reqs:
            out[key] = [
                {
                    "key": r.key,
                    "operator": r.operator,
                    **({"values": list(r.values)} if r.values else {}),
                }
                for r in reqs
            ]
    return out


def node_affinity_to_api(affinity: NodeAffinity) -> dict[str, Any]:
    """The API (camelCase) shape of a node affinity, as a pod's spec would carry it."""
    out: dict[str, Any] = {}
    if affinity.required is not None:
        out["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [_term_to_api(t) for t in affinity.required]
        }
    if affinity.preferred:
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": p.weight, "preference": _term_to_api(p.preference)}
            for p in affinity.preferred
        ]
    return out
