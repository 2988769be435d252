"""The node's images, from the container runtime through ``crictl images -o json``.

crictl prints the CRI ``ListImagesResponse`` as protobuf JSON: ``{"images": [{"id",
"repoTags", "repoDigests", "size", "uid", "username", "spec", "pinned"}, ...]}`` with the
uint64 ``size`` as a decimal *string* (protobuf's JSON mapping) and, since protojson, a
whitespace layout that varies between runs; it is read as JSON, never as text columns.
Which runtime crictl asks is crictl's business: ``--runtime-endpoint`` when given, else
its ``CONTAINER_RUNTIME_ENDPOINT`` environment variable or ``/etc/crictl.yaml``.

Anything that keeps a list from being read (crictl missing, not executable, failing,
hanging, or printing something else) raises :class:`ListError` with one line saying
what, for the agent to log before it retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from kubesalvo.core.plugins.image_locality import ReportedImage

__all__ = ["ListError", "list_images", "parse_images"]

# The most of crictl's stderr quoted in an error.
_STDERR_CHARS = 400


class ListError(Exception):
    """The runtime's image list could not be read; the message says why."""


def _names(image: dict[str, Any], key: str, i: int) -> tuple[str, ...]:
    value = image.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ListError(f"crictl's images[{i}].{key} is not a list of names: {value!r:.80}")
    return tuple(value)


def _size(image: dict[str, Any], i: int) -> int:
    value = image.get("size", 0)
    # protobuf JSON writes uint64 as a string; accept a bare number too.
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ListError(f"crictl's images[{i}].size is not a byte count: {value!r:.80}")


def parse_images(text: str) -> list[ReportedImage]:
    """The images in crictl's JSON; images with neither a tag nor a digest are left out
    (no pod can name them)."""
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ListError(f"crictl printed no JSON ({exc}): {text.strip()[:80]!r}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("images", []), list):
        raise ListError(f'crictl\'s JSON has no "images" list: {text.strip()[:80]!r}')
    found: set[ReportedImage] = set()
    for i, image in enumerate(raw.get("images") or ()):
        if not isinstance(image, dict):
            raise ListError(f"crictl's images[{i}] is not an object")
        tags, digests = _names(image, "repoTags", i), _names(image, "repoDigests", i)
        size = _size(image, i)
        if tags or digests:
            found.add(ReportedImage(tags, digests, size))
    return sorted(found)


async def list_images(
    crictl: str, runtime_endpoint: str | None = None, timeout: float = 30.0
) -> list[ReportedImage]:
    """Run ``crictl [--runtime-endpoint E] images -o json`` and read its answer."""
    argv = [crictl]
    if runtime_endpoint:
        argv += ["--runtime-endpoint", runtime_endpoint]
    argv += ["images", "-o", "json"]
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except FileNotFoundError:
        raise ListError(f"{crictl}: not found (install crictl or pass --crictl PATH)") from None
    except PermissionError:
        raise ListError(f"{crictl}: not executable") from None
    except OSError as exc:
        raise ListError(f"{crictl}: cannot run: {exc.strerror or exc}") from None
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        raise ListError(f"{' '.join(argv)}: no answer within {timeout:g}s") from None
    finally:
        # Timed out or cancelled (the agent stopping): crictl does not outlive the call.
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    if process.returncode != 0:
        said = err.decode("utf-8", "replace").strip()[-_STDERR_CHARS:] or "(no message)"
        raise ListError(f"{' '.join(argv)} exited {process.returncode}: {said}")
    return parse_images(out.decode("utf-8", "replace"))
