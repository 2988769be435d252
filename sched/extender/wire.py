"""kube-scheduler's extender wire format (``k8s.io/kube-scheduler/extender/v1``) as Structs.

kube-scheduler encodes these Go structs with ``encoding/json`` and no JSON tags, so the
outer field names are the Go names, capitalised (``Pod``, ``NodeNames``, ``FailedNodes``,
``NodeNameToMetaVictims``); the Kubernetes objects inside (``Pod``, the ``Nodes`` NodeList,
victims' pods) carry their usual camelCase API names (``items``, ``metadata``).

Only what the extender reads is decoded: the pod through the informers' typed ``Pod``
view, and each node of a ``Nodes`` list twice over the same bytes - as a ``msgspec.Raw``
span, echoed back untouched in a filter result (kube-scheduler matches what comes back
against what it sent), and as the typed ``Node`` view, decoded only when its
resourceVersion is new to the extender (see ``feed.NodeFeed.request_rows``).

A names-only request (``nodeCacheCapable``) is first decoded with its ``NodeNames`` left as
raw JSON (``ExtenderArgsRaw``): kube-scheduler may send the same list again and again,
and ``names.NamesCache`` answers a list it has seen from its bytes alone. Whatever that
quick decoding refuses is decoded again by ``ExtenderArgs``, so a bad body gets the same
400 as before. The answers for a list seen again are joined from each name's cached JSON
(``encode_priorities``, ``encode_failures``), byte for byte what encoding the Structs and
dicts gives.

Decoding is strict about types (a string where a list belongs is a bad request) and
lenient about unknown fields, as Go's decoder is. ``BadRequest`` carries the message the
server answers with HTTP 400.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
import numpy as np
import numpy.typing as npt

from kubesalvo.sched.informers.models import Pod

__all__ = [
    "MAX_EXTENDER_PRIORITY",
    "BadRequest",
    "BindingArgs",
    "BindingResult",
    "ExtenderArgs",
    "ExtenderArgsRaw",
    "FilterResult",
    "HostPriority",
    "MetaPod",
    "MetaVictims",
    "NodeList",
    "PreemptionArgs",
    "PreemptionResult",
    "decode",
    "decode_extender_args",
    "encode",
    "encode_failures",
    "encode_filter_result",
    "encode_priorities",
    "host_prefix",
    "json_key",
    "node_names",
]

# The highest score an extender may give (kube-scheduler scales it to its own 0-100).
MAX_EXTENDER_PRIORITY = 10


class BadRequest(ValueError):
    """A request body the extender cannot use; its text is the 400 answer's ``error``."""


class NodeMeta(msgspec.Struct, rename="camel"):
    name: str = ""
    resource_version: str = ""


class NodeHead(msgspec.Struct):
    """The part of a node in the request that says whether it changed."""

    metadata: NodeMeta = msgspec.field(default_factory=NodeMeta)


class NodeList(msgspec.Struct):
    """A v1.NodeList: its items kept as raw JSON (echoed back as sent)."""

    items: list[msgspec.Raw] | None = None


class ExtenderArgs(msgspec.Struct):
    """What filter and prioritize receive: names (nodeCacheCapable) or full nodes."""

    Pod: Pod | None = None
    Nodes: NodeList | None = None
    NodeNames: list[str] | None = None


class ExtenderArgsRaw(msgspec.Struct):
    """``ExtenderArgs`` with ``NodeNames`` as its raw JSON: empty when absent."""

    Pod: Pod | None = None
    Nodes: NodeList | None = None
    NodeNames: msgspec.Raw = msgspec.Raw()

    @property
    def has_names(self) -> bool:
        """Whether names were sent: ``null`` is no list, as in ``ExtenderArgs``."""
        size = len(self.NodeNames)
        return size > 0 and not (size == 4 and bytes(self.NodeNames) == b"null")


class FilterResult(msgspec.Struct, omit_defaults=True):
    Nodes: NodeList | None = None
    NodeNames: list[str] | None = None
    FailedNodes: dict[str, str] = {}
    FailedAndUnresolvableNodes: dict[str, str] = {}
    Error: str = ""


class HostPriority(msgspec.Struct):
    Host: str
    Score: int


class BindingArgs(msgspec.Struct):
    PodName: str = ""
    PodNamespace: str = ""
    PodUID: str = ""
    Node: str = ""


class BindingResult(msgspec.Struct):
    Error: str = ""


class MetaPod(msgspec.Struct):
    UID: str = ""


class MetaVictims(msgspec.Struct):
    Pods: list[MetaPod] = []
    NumPDBViolations: int = 0


class VictimPodMeta(msgspec.Struct):
    uid: str = ""


class VictimPod(msgspec.Struct):
    """A victim sent as a full pod (nodeCacheCapable false): only its UID is read."""

    metadata: VictimPodMeta = msgspec.field(default_factory=VictimPodMeta)


class Victims(msgspec.Struct):
    Pods: list[VictimPod | None] = []
    NumPDBViolations: int = 0


class PreemptionArgs(msgspec.Struct):
    Pod: Pod | None = None
    NodeNameToVictims: dict[str, Victims | None] | None = None
    NodeNameToMetaVictims: dict[str, MetaVictims | None] | None = None


class PreemptionResult(msgspec.Struct):
    NodeNameToMetaVictims: dict[str, MetaVictims]


T = TypeVar("T")

_decoders: dict[type, msgspec.json.Decoder[Any]] = {}
_head_decoder = msgspec.json.Decoder(NodeHead)
_raw_args_decoder = msgspec.json.Decoder(ExtenderArgsRaw)
_names_decoder = msgspec.json.Decoder(list[str])
_encoder = msgspec.json.Encoder()
# What follows a host's prefix in a HostPriority list, by score (scores are 0..10).
_SCORE_ENDS = np.array([b"%d}," % score for score in range(MAX_EXTENDER_PRIORITY + 1)], object)


def decode(body: bytes, kind: type[T]) -> T:
    """Decode a request body, or raise ``BadRequest`` saying where and why it is wrong."""
    decoder = _decoders.get(kind)
    if decoder is None:
        decoder = _decoders[kind] = msgspec.json.Decoder(kind)
    try:
        result: T = decoder.decode(body)
    except msgspec.ValidationError as error:
        raise BadRequest(f"invalid {kind.__name__}: {error}") from None
    except msgspec.DecodeError as error:
        raise BadRequest(f"malformed JSON: {error}") from None
    return result


def decode_extender_args(body: bytes) -> ExtenderArgsRaw:
    """A filter or prioritize body, ``NodeNames`` left undecoded; ``BadRequest`` as
    ``decode(body, ExtenderArgs)`` raises it."""
    try:
        return _raw_args_decoder.decode(body)
    except (msgspec.ValidationError, msgspec.DecodeError):
        pass
    # the strict decoding says what is wrong, in the words it always used
    args = decode(body, ExtenderArgs)
    names = (
        msgspec.Raw(_encoder.encode(args.NodeNames))
        if args.NodeNames is not None
        else msgspec.Raw()
    )
    return ExtenderArgsRaw(args.Pod, args.Nodes, names)


def node_names(raw: bytes, body: bytes) -> list[str]:
    """The names of a request's raw ``NodeNames`` (``body``: the whole request, decoded
    again for the 400's message when they are not a list of strings)."""
    try:
        return _names_decoder.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        pass
    names = decode(body, ExtenderArgs).NodeNames
    return names if names is not None else []


def node_head(raw: msgspec.Raw) -> NodeMeta:
    """The name and resourceVersion of one node of a request's ``Nodes.items``."""
    try:
        return _head_decoder.decode(raw).metadata
    except (msgspec.ValidationError, msgspec.DecodeError) as error:
        raise BadRequest(f"invalid node in Nodes.items: {error}") from None


def encode(obj: Any) -> bytes:
    return _encoder.encode(obj)


def host_prefix(name: str) -> bytes:
    """The start of a name's HostPriority, up to its score."""
    return b'{"Host":' + _encoder.encode(name) + b',"Score":'


def json_key(name: str) -> bytes:
    """A name as the key of a JSON object, colon included."""
    return _encoder.encode(name) + b":"


def _join(opening: bytes, heads: list[bytes], tails: list[bytes], closing: bytes) -> bytes:
    """``opening``, then each head followed by its tail, then ``closing``; each tail
    ends with a comma, which the last one gives up for ``closing``."""
    if not heads:
        return opening + closing
    parts: list[bytes] = [b""] * (2 * len(heads))
    parts[0::2] = heads
    parts[1::2] = tails
    parts[0] = opening + parts[0]
    parts[-1] = parts[-1][:-1] + closing
    return b"".join(parts)


def encode_priorities(prefixes: list[bytes], scores: npt.NDArray[np.intp]) -> bytes:
    """A HostPriorityList (``prefixes`` from ``host_prefix``), as ``encode`` gives it for a
    list of ``HostPriority``; one join instead of a Struct per node."""
    if len(scores) and (scores.min() < 0 or scores.max() > MAX_EXTENDER_PRIORITY):
        raise ValueError(f"scores outside 0..{MAX_EXTENDER_PRIORITY}")
    return _join(b"[", prefixes, _SCORE_ENDS[scores].tolist(), b"]")


def encode_failures(keys: list[bytes], text_of: npt.NDArray[np.intp], texts: list[str]) -> bytes:
    """The JSON object of ``keys`` (from ``json_key``) to ``texts[text_of[i]]``, as
    ``encode`` gives it for a dict of unique names; one join instead of a dict."""
    values = np.array([_encoder.encode(text) + b"," for text in texts], dtype=object)
    return _join(b"{", keys, values[text_of].tolist(), b"}")


def encode_filter_result(result: FilterResult, failed: bytes, unresolvable: bytes) -> bytes:
    """``encode(result)`` with ``FailedNodes`` and ``FailedAndUnresolvableNodes`` given
    already encoded (an empty ``{}`` is left out, as ``encode`` leaves out an empty map)."""
    if result.FailedNodes or result.FailedAndUnresolvableNodes or result.Error:
        raise ValueError("FailedNodes, FailedAndUnresolvableNodes and Error must be empty")
    head = _encoder.encode(result)  # its fields come before the maps, as declared
    fields = [head[1:-1]] if head != b"{}" else []
    if failed != b"{}":
        fields.append(b'"FailedNodes":' + failed)
    if unresolvable != b"{}":
        fields.append(b'"FailedAndUnresolvableNodes":' + unresolvable)
    return b"{" + b",".join(fields) + b"}"
