"""PodForms, the runtime's pod dicts: a pod version is converted once, whoever asks; a new
version or a delete drops the old entry, which its late readers still find among the
last versions retired (bounded), as they find a version converted when no longer current;
the nomination a reader needs is a copy, never written into the shared dict."""

from __future__ import annotations

import threading
import time
from typing import Any

from kubesalvo.sched.informers import ADDED, DELETED, MODIFIED, SYNCED, Change, Store, to_api_dict
from kubesalvo.sched.informers.forms import RETIRED, PodForms, with_nomination
from kubesalvo.sched.informers.models import ObjectMeta, Pod, PodStatus


def pod(name: str, version: str, nominated: str = "") -> Pod:
    return Pod(
        metadata=ObjectMeta(name=name, namespace="ns", uid=f"uid-{name}", resource_version=version),
        status=PodStatus(nominated_node_name=nominated),
    )


def informed() -> tuple[Store[Pod], PodForms]:
    """A store fed as the pod informer feeds it, and a memo that follows it."""
    store: Store[Pod] = Store()
    return store, PodForms(current=store.get)


def event(store: Store[Pod], forms: PodForms, kind: str, obj: Pod) -> None:
    for change in store.apply_event(kind, obj):
        forms.on_pod(change)


def test_the_same_version_is_converted_once_whoever_asks() -> None:
    store, forms = informed()
    first = pod("a", "1")
    event(store, forms, ADDED, first)
    made = forms.api(first)
    assert made == to_api_dict(first)
    assert forms.api(first) is made
    assert forms.of([first, first]) == [made, made]
    assert forms.conversions == 1
    assert len(forms) == 1


def test_a_new_version_replaces_the_old_entry() -> None:
    store, forms = informed()
    first, second = pod("a", "1"), pod("a", "2")
    event(store, forms, ADDED, first)
    forms.api(first)
    event(store, forms, MODIFIED, second)
    assert len(forms) == 0  # the old version's dict went with it
    again = forms.api(second)
    assert again["metadata"]["resourceVersion"] == "2"
    assert forms.api(second) is again
    assert forms.conversions == 2
    assert len(forms) == 1


def test_a_new_version_converted_before_its_event_is_kept_and_retires_the_old() -> None:
    # The cache may ask for the new version in a handler that runs before the memo's.
    # The old version's readers (the queue judging the update) still find its dict.
    store, forms = informed()
    first, second = pod("a", "1"), pod("a", "2")
    event(store, forms, ADDED, first)
    was = forms.api(first)
    store.apply_event(MODIFIED, second)
    made = forms.api(second)
    assert forms.api(first) is was
    forms.on_pod(Change(MODIFIED, second, first))
    assert forms.api(second) is made
    assert forms.api(first) is was
    assert (forms.conversions, len(forms)) == (2, 1)


def test_a_delete_drops_the_entry() -> None:
    store, forms = informed()
    first = pod("a", "1")
    event(store, forms, ADDED, first)
    forms.api(first)
    forms.on_pod(Change(SYNCED))
    event(store, forms, DELETED, first)
    assert len(forms) == 0


def test_a_version_no_longer_current_is_converted_once_but_not_an_entry() -> None:
    # A preemption decision's picture taken before the event, or the queue judging the
    # update against every parked pod: its readers share one dict, kept among the
    # retired versions, never as an entry (it would outlive the pod).
    store, forms = informed()
    first, second = pod("a", "1"), pod("a", "2")
    event(store, forms, ADDED, first)
    event(store, forms, MODIFIED, second)
    old = forms.api(first)
    assert old["metadata"]["resourceVersion"] == "1"
    assert forms.api(first) is old
    assert (forms.conversions, forms.uncached, len(forms)) == (1, 1, 0)
    event(store, forms, DELETED, second)
    forms.api(second)
    forms.api(second)
    assert (forms.conversions, forms.uncached, len(forms)) == (2, 2, 0)
    assert forms.stats()["retired"] == 2


def test_a_replaced_or_deleted_version_is_still_served_to_its_late_readers() -> None:
    # The queue judges an in-flight pod's logged events after the informer moved on.
    store, forms = informed()
    first, second = pod("a", "1"), pod("a", "2")
    event(store, forms, ADDED, first)
    made = forms.api(first)
    event(store, forms, MODIFIED, second)
    assert len(forms) == 0
    assert forms.api(first) is made
    newer = forms.api(second)
    event(store, forms, DELETED, second)
    assert forms.api(second) is newer
    assert (forms.conversions, forms.uncached, len(forms)) == (2, 0, 0)


def test_the_retired_versions_are_bounded() -> None:
    store, forms = informed()
    gone = [pod(f"p{i}", "1") for i in range(RETIRED + 1)]
    for obj in gone:
        event(store, forms, ADDED, obj)
        forms.api(obj)
        event(store, forms, DELETED, obj)
    assert forms.stats()["retired"] == RETIRED
    assert forms.api(gone[-1]) is forms.api(gone[-1])
    assert forms.conversions == RETIRED + 1
    forms.api(gone[0])  # the oldest went first: converted again, for its reader
    assert forms.conversions == RETIRED + 2
    assert forms.stats()["retired"] == RETIRED


def test_an_equal_but_newly_decoded_object_is_a_new_version() -> None:
    # The informer decodes a new object per watch event: identity, not equality, decides.
    forms = PodForms()
    forms.api(pod("a", "1"))
    forms.api(pod("a", "1"))
    assert forms.conversions == 2


def test_threads_asking_for_one_version_make_one_dict() -> None:
    def slow(obj: Any) -> dict[str, Any]:
        time.sleep(0.01)  # long enough for the other threads to ask meanwhile
        return to_api_dict(obj)

    forms = PodForms(convert=slow)
    shared = pod("a", "1")
    got: list[dict[str, Any]] = []
    threads = [threading.Thread(target=lambda: got.append(forms.api(shared))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert forms.conversions == 1
    assert all(d is got[0] for d in got)


def test_keep_only_drops_the_pods_not_kept() -> None:
    forms = PodForms()
    a, b = pod("a", "1"), pod("b", "1")
    forms.api(a)
    forms.api(b)
    forms.keep_only({"uid-b"})
    assert len(forms) == 1
    forms.api(b)
    assert forms.conversions == 2


def test_a_nomination_is_a_copy_and_never_leaks_into_the_shared_dict() -> None:
    forms = PodForms()
    plain = pod("a", "1")
    shared = forms.api(plain)
    seen = with_nomination(shared, "node-1")
    assert seen["status"]["nominatedNodeName"] == "node-1"
    assert "nominatedNodeName" not in (shared.get("status") or {})
    assert forms.api(plain) is shared
    assert with_nomination(shared, "") is shared  # nothing to say: the shared dict itself


def test_a_cleared_nomination_is_a_copy_without_it() -> None:
    forms = PodForms()
    nominated = pod("a", "1", nominated="node-1")
    shared = forms.api(nominated)
    assert with_nomination(shared, "node-1") is shared
    cleared = with_nomination(shared, "")
    assert "nominatedNodeName" not in cleared["status"]
    assert shared["status"]["nominatedNodeName"] == "node-1"
    moved = with_nomination(shared, "node-2")
    assert moved["status"]["nominatedNodeName"] == "node-2"
    assert shared["status"]["nominatedNodeName"] == "node-1"
