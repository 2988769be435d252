"""A fake ``crictl`` for the image reporter's tests: a real executable that prints what
``crictl images -o json`` prints.

``REAL_OUTPUT`` is the shape crictl (v1.29+, protojson with ``EmitDefaultValues`` and a
two-space indent) gives for containerd's ListImages: the uint64 ``size`` as a decimal
string, the ``uid`` wrapper as a string, unset messages left out, ``spec`` with the
image id and annotations, and protojson's deliberately unstable whitespace (a doubled
space after some colons). The script serves the file ``images.json`` beside it, records
its argv in ``calls``, and fails as crictl does (message on stderr, exit 1) while a file
``fail`` exists beside it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kubesalvo.core.plugins.image_locality import ReportedImage

PAUSE_ID = "sha256:873ed75102791e5b0b8a7fcd41606c92fcec98d56d05ead4ac5131650004c136"
APP_DIGEST = "registry.example.com/team/app@sha256:" + "5d" * 32

REAL_OUTPUT = """\
{
  "images":  [
    {
      "id":  "sha256:873ed75102791e5b0b8a7fcd41606c92fcec98d56d05ead4ac5131650004c136",
      "repoTags":  [
        "registry.k8s.io/pause:3.10"
      ],
      "repoDigests":  [
        "registry.k8s.io/pause@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a"
      ],
      "size":  "320368",
      "uid":  "65535",
      "username":  "",
      "spec":  {
        "image":  "sha256:873ed75102791e5b0b8a7fcd41606c92fcec98d56d05ead4ac5131650004c136",
        "annotations":  {},
        "userSpecifiedImage":  "",
        "runtimeHandler":  ""
      },
      "pinned":  true
    },
    {
      "id":  "sha256:9bea9f2796e236cb18c2b3ad561ff29f655d1001f9ec7247a0bc5e08d25652a1",
      "repoTags":  [
        "registry.example.com/team/app:2.1",
        "registry.example.com/team/app:latest"
      ],
      "repoDigests":  [
        "registry.example.com/team/app@sha256:5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d"
      ],
      "size":  "629145600",
      "username":  "app",
      "spec":  {
        "image":  "sha256:9bea9f2796e236cb18c2b3ad561ff29f655d1001f9ec7247a0bc5e08d25652a1",
        "annotations":  {
          "io.cri-containerd.image":  "managed"
        },
        "userSpecifiedImage":  "",
        "runtimeHandler":  ""
      },
      "pinned":  false
    },
    {
      "id":  "sha256:1f1b0d4f1a5d56e1bb46e4c2a9d4e6b7c9f0a1b2c3d4e5f60718293a4b5c6d7e",
      "repoTags":  [],
      "repoDigests":  [
        "quay.io/example/by-digest@sha256:0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a"
      ],
      "size":  "52428800",
      "username":  "",
      "pinned":  false
    },
    {
      "id":  "sha256:2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e",
      "repoTags":  [],
      "repoDigests":  [],
      "size":  "1024",
      "username":  "",
      "pinned":  false
    }
  ]
}
"""

# What REAL_OUTPUT holds, as the reporter reads it (the nameless image left out).
REAL_IMAGES = [
    ReportedImage(
        (),
        (
            "quay.io/example/by-digest@sha256:"
            "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a",
        ),
        52428800,
    ),
    ReportedImage(
        ("registry.example.com/team/app:2.1", "registry.example.com/team/app:latest"),
        (APP_DIGEST,),
        629145600,
    ),
    ReportedImage(
        ("registry.k8s.io/pause:3.10",),
        (
            "registry.k8s.io/pause@sha256:"
            "ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a",
        ),
        320368,
    ),
]

_SCRIPT = """\
#!{python}
import pathlib, sys
here = pathlib.Path(__file__).parent
with open(here / "calls", "a") as calls:
    calls.write(" ".join(sys.argv[1:]) + "\\n")
if (here / "fail").exists():
    sys.stderr.write((here / "fail").read_text())
    sys.exit(1)
sys.stderr.write("WARN[0000] Config \\"/etc/crictl.yaml\\" does not exist\\n")
sys.stdout.write((here / "images.json").read_text())
"""


class FakeCrictl:
    """An executable crictl in ``folder``, serving whatever the test sets."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.path = folder / "crictl"
        self.path.write_text(_SCRIPT.format(python=sys.executable))
        self.path.chmod(0o755)
        self.serve_text(REAL_OUTPUT)

    def serve_text(self, text: str) -> None:
        (self.folder / "images.json").write_text(text)

    def serve(self, images: list[ReportedImage]) -> None:
        """crictl's JSON for ``images`` (the layout of REAL_OUTPUT, compact)."""
        entries = [
            {
                "id": f"sha256:{i:064x}",
                "repoTags": list(image.tags),
                "repoDigests": list(image.digests),
                "size": str(image.size),
                "username": "",
                "pinned": False,
            }
            for i, image in enumerate(images)
        ]
        self.serve_text(json.dumps({"images": entries}, indent=2))

    def fail(self, message: str | None) -> None:
        """Fail every call with ``message`` on stderr (None: work again)."""
        flag = self.folder / "fail"
        if message is None:
            flag.unlink(missing_ok=True)
        else:
            flag.write_text(message)

    def calls(self) -> list[str]:
        path = self.folder / "calls"
        return path.read_text().splitlines() if path.exists() else []
