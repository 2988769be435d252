"""Builds the upstream control-plane binaries into a cache keyed by their versions.

The Go module shipped in ``kubesalvo.deploy/local`` pins the default Kubernetes
(kube-apiserver, kube-controller-manager, kube-scheduler, kubectl), the one the tests use;
each ``local/k8s-v1.N/`` is a module of its own pinning another release (the newest
upstream, the baseline of benchmarks), chosen with ``kubernetes=``. ``local/etcd`` pins
etcd for all of them; kwok is installed with ``go install`` at ``KWOK_VERSION``. A machine
builds each set of versions once: the result lives in ``<cache>/bin/<key>/`` and is written
atomically (built into a temporary folder, then renamed), so a folder that exists is
complete.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

KWOK_VERSION = "v0.8.0"
KUBERNETES_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
BINARIES = ("etcd", *KUBERNETES_COMMANDS, "kwok")
# kwok v0.8.0 has no built-in stages; these files from its module are passed with --config.
STAGE_FILES = {
    "node-initialize": "node/fast/node-initialize.yaml",
    "node-heartbeat-with-lease": "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod-ready": "pod/fast/pod-ready.yaml",
    "pod-complete": "pod/fast/pod-complete.yaml",
    "pod-delete": "pod/fast/pod-delete.yaml",
}
MIN_GO = (1, 26)

_REQUIRE = re.compile(r"^\s*(?:require\s+)?(\S+)\s+(v\S+)", re.MULTILINE)
_PROXY_TROUBLE = (
    "dial tcp",
    "no such host",
    "i/o timeout",
    "connection refused",
    "TLS handshake timeout",
    "proxy.golang.org",
)


class BuildError(RuntimeError):
    """The binaries cannot be built; the message names what is missing."""


@dataclass(frozen=True)
class Versions:
    kubernetes: str
    etcd: str
    kwok: str

    @property
    def key(self) -> str:
        return f"k8s-{self.kubernetes}_etcd-{self.etcd}_kwok-{self.kwok}"


def module_version(go_mod: str, module: str) -> str:
    """The version at which ``go_mod`` (the text of a go.mod) requires ``module``."""
    for name, version in _REQUIRE.findall(go_mod):
        if name == module:
            return version
    raise BuildError(f"go.mod does not require {module}")


def source_dir() -> Path:
    """The Go module shipped as package data (deploy/local in a checkout)."""
    return Path(str(resources.files("kubesalvo.deploy") / "local"))


def kubernetes_modules(local: Path | None = None) -> dict[str, Path]:
    """Every shipped Kubernetes module by the release it pins, the default one first."""
    local = local or source_dir()
    found = {module_version((local / "go.mod").read_text(), "k8s.io/kubernetes"): local}
    for go_mod in sorted(local.glob("k8s-v*/go.mod")):
        found[module_version(go_mod.read_text(), "k8s.io/kubernetes")] = go_mod.parent
    return found


def kubernetes_module(kubernetes: str | None = None, local: Path | None = None) -> Path:
    """The folder of the module that pins ``kubernetes`` (``v1.37.2``, ``1.37.2`` or just
    ``1.37``), or of the default module for None."""
    modules = kubernetes_modules(local)
    if kubernetes is None:
        return next(iter(modules.values()))
    wanted = "v" + kubernetes.strip().removeprefix("v")
    for version, folder in modules.items():
        if version == wanted or version.startswith(wanted + "."):
            return folder
    raise BuildError(
        f"--kubernetes {kubernetes}: no shipped module pins it; accepted: " + ", ".join(modules)
    )


def shipped_versions(local: Path | None = None, kubernetes: str | None = None) -> Versions:
    local = local or source_dir()
    module = kubernetes_module(kubernetes, local)
    return Versions(
        kubernetes=module_version((module / "go.mod").read_text(), "k8s.io/kubernetes"),
        etcd=module_version((local / "etcd" / "go.mod").read_text(), "go.etcd.io/etcd/server/v3"),
        kwok=KWOK_VERSION,
    )


def cache_root() -> Path:
    """``$KUBESALVO_CACHE``, else ``$XDG_CACHE_HOME/kubesalvo``, else ``~/.cache/kubesalvo``."""
    if root := os.environ.get("KUBESALVO_CACHE"):
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "kubesalvo"


def bin_dir(versions: Versions | None = None, root: Path | None = None) -> Path:
    return (root or cache_root()) / "bin" / (versions or shipped_versions()).key


def release_of(folder: Path) -> str:
    """The Kubernetes release of a binary folder made by ``build`` (from its name)."""
    match = re.match(r"k8s-(v[^_]+)_", folder.name)
    if not match:
        raise BuildError(f"{folder} is not a binary folder of kubesalvo cluster build")
    return match[1]


def is_complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in BINARIES) and all(
        (folder / "stages" / f"{stage}.yaml").is_file() for stage in STAGE_FILES
    )


def version_ldflags(kubernetes: str) -> str:
    """Linker flags that make ``--version`` report the real release (``go build`` from a
    module leaves the version variables at their ``v0.0.0-master`` defaults)."""
    major, minor = kubernetes.lstrip("v").split(".")[:2]
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {package}.gitVersion={kubernetes}",
            f"-X {package}.gitMajor={major}",
            f"-X {package}.gitMinor={minor}",
            f"-X {package}.gitTreeState=clean",
        ]
    return " ".join(flags)


@dataclass(frozen=True)
class Step:
    """One ``go`` invocation of the build: what it makes and the command, run in ``cwd``."""

    title: str
    argv: list[str]
    cwd: Path
    env: dict[str, str]


def build_steps(
    go: str, module: Path, out: Path, versions: Versions, kubernetes_dir: Path | None = None
) -> list[Step]:
    """The steps, run in a copy of the shipped folder ``module``; Kubernetes is built in
    ``kubernetes_dir`` (a module inside it; ``module`` itself by default)."""
    env = {"GOFLAGS": "-buildvcs=false -trimpath"}
    k8s = [f"k8s.io/kubernetes/cmd/{name}" for name in KUBERNETES_COMMANDS]
    return [
        Step(
            f"etcd {versions.etcd}",
            [go, "build", "-o", str(out / "etcd"), "."],
            module / "etcd",
            env,
        ),
        Step(
            f"Kubernetes {versions.kubernetes} ({', '.join(KUBERNETES_COMMANDS)})",
            [go, "build", "-ldflags", version_ldflags(versions.kubernetes), "-o", f"{out}/", *k8s],
            kubernetes_dir or module,
            env,
        ),
        Step(
            f"kwok {versions.kwok}",
            [go, "install", f"sigs.k8s.io/kwok/cmd/kwok@{versions.kwok}"],
            module,
            {**env, "GOBIN": str(out)},
        ),
    ]


def go_version(go: str) -> tuple[int, int]:
    text = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=True)
    match = re.match(r"go(\d+)\.(\d+)", text.stdout.strip())
    if not match:
        raise BuildError(f"cannot read the Go version from {text.stdout.strip()!r}")
    return int(match[1]), int(match[2])


def find_go() -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            "`go` is not on PATH: kubesalvo cluster build compiles etcd, Kubernetes and kwok "
            f"from source and needs Go >= {MIN_GO[0]}.{MIN_GO[1]} (https://go.dev/dl/)"
        )
    have = go_version(go)
    if have < MIN_GO:
        raise BuildError(
            f"Go {have[0]}.{have[1]} at {go} is too old: kwok {KWOK_VERSION} and the pinned "
            f"Kubernetes module need Go >= {MIN_GO[0]}.{MIN_GO[1]}"
        )
    return go


def explain_failure(step: Step, output: str) -> str:
    """A message for a failed step: proxy trouble is named as such, else the output's tail."""
    tail = "\n".join(output.strip().splitlines()[-20:])
    if any(sign in output for sign in _PROXY_TROUBLE):
        proxy = os.environ.get("GOPROXY") or "the default, https://proxy.golang.org"
        return (
            f"building {step.title} failed: the Go module proxy cannot be reached "
            f"(GOPROXY={proxy}); check the network, or set GOPROXY to a proxy that can be "
            f"reached (GOPROXY=direct fetches from the origin repositories).\n{tail}"
        )
    return f"building {step.title} failed:\n{tail}"


@contextmanager
def _module_copy() -> Iterator[Path]:
    """A writable copy of the shipped module: the install location may be read-only."""
    with tempfile.TemporaryDirectory(prefix="kubesalvo-go-") as tmp:
        dest = Path(tmp) / "local"
        shutil.copytree(source_dir(), dest, ignore=shutil.ignore_patterns("__pycache__"))
        yield dest


def _copy_stages(go: str, out: Path, versions: Versions) -> None:
    modcache = subprocess.run(
        [go, "env", "GOMODCACHE"], capture_output=True, text=True, check=True
    ).stdout.strip()
    stage_root = Path(modcache) / f"sigs.k8s.io/kwok@{versions.kwok}" / "kustomize" / "stage"
    (out / "stages").mkdir()
    for name, rel in STAGE_FILES.items():
        src = stage_root / rel
        if not src.is_file():
            raise BuildError(f"kwok stage {rel} is missing from the module cache ({stage_root})")
        shutil.copyfile(src, out / "stages" / f"{name}.yaml")


Progress = Callable[[str, float | None], None]


def build(
    force: bool = False, progress: Progress | None = None, kubernetes: str | None = None
) -> Path:
    """Builds every binary of ``kubernetes`` (None: the default release) unless the cache
    already holds them; returns their folder.

    ``progress(title, seconds)`` is told when a step starts (``seconds`` None) and ends.
    """
    versions = shipped_versions(kubernetes=kubernetes)
    # The same module inside the writable copy made below.
    inside = kubernetes_module(kubernetes).relative_to(source_dir())
    final = bin_dir(versions)
    if is_complete(final) and not force:
        return final
    go = find_go()

    def fill(staging: Path) -> None:
        with _module_copy() as module:
            for step in build_steps(go, module, staging, versions, module / inside):
                _run(step, progress)
        _copy_stages(go, staging, versions)
        (staging / "versions").write_text(versions.key + "\n")

    install_folder(final, fill, is_complete)
    return final


def install_folder(
    folder: Path, fill: Callable[[Path], None], complete: Callable[[Path], bool]
) -> None:
    """Fill a staging folder beside ``folder`` (``fill(staging)``), then rename it into
    place: a reader sees the old folder or the whole new one, never a part of one. When
    another build (a second test session) renamed its folder there first, a ``complete``
    one is kept. Every cached build (the control plane, helm, metrics-server, the tests'
    PromQL checker) installs so."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        fill(staging)
        if folder.exists():
            shutil.rmtree(folder)
        try:
            os.rename(staging, folder)
        except OSError:
            if not complete(folder):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _run(step: Step, progress: Progress | None) -> None:
    if progress:
        progress(step.title, None)
    started = time.monotonic()
    env = {**os.environ, **step.env}
    # GOFLAGS from the environment would be overwritten; keep both.
    if extra := os.environ.get("GOFLAGS"):
        env["GOFLAGS"] = f"{extra} {step.env['GOFLAGS']}"
    try:
        done = subprocess.run(
            step.argv, cwd=step.cwd, env=env, capture_output=True, text=True, check=False
        )
    except FileNotFoundError as error:
        raise BuildError(f"cannot run {step.argv[0]}: {error}") from error
    if done.returncode != 0:
        raise BuildError(explain_failure(step, done.stdout + done.stderr))
    if progress:
        progress(step.title, time.monotonic() - started)


# helm renders, lints and installs deploy/chart in the tests. It is one `go install` of a
# pinned release (its module has no replace directives, so no module of ours is needed),
# cached in a folder of its own keyed by that release.
HELM_MODULE = "helm.sh/helm/v4"
HELM_VERSION = "v4.3.1"


def helm_binary(root: Path | None = None) -> Path:
    """Where helm of ``HELM_VERSION`` lives (built or not)."""
    return (root or cache_root()) / "bin" / f"helm-{HELM_VERSION}" / "helm"


def helm_step(go: str, out: Path) -> Step:
    """The ``go install`` that puts helm into ``out``. Helm reads its version from a linker
    variable (``helm version`` says so); set it, as its release builds do."""
    ldflags = f"-s -w -X {HELM_MODULE}/internal/version.version={HELM_VERSION}"
    return Step(
        f"helm {HELM_VERSION}",
        [go, "install", "-ldflags", ldflags, f"{HELM_MODULE}/cmd/helm@{HELM_VERSION}"],
        out,
        {"GOFLAGS": "-buildvcs=false -trimpath", "GOBIN": str(out)},
    )


def build_helm(force: bool = False, progress: Progress | None = None) -> Path:
    """Builds helm unless its cache folder holds it; returns the binary's path."""
    target = helm_binary()
    if target.is_file() and not force:
        return target
    go = find_go()
    install_folder(
        target.parent,
        lambda staging: _run(helm_step(go, staging), progress),
        lambda folder: (folder / target.name).is_file(),
    )
    return target
