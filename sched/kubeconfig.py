"""Which kubeconfig files a command reads, in kubectl's order.

kubectl (client-go's loading rules) takes ``--kubeconfig`` when given, else the files
listed in ``$KUBECONFIG`` (separated like ``$PATH``; missing ones skipped; merged so that
the first file to name a cluster, user or context, or to set ``current-context``, wins),
else ``~/.kube/config`` when it exists, else the pod's service account (in-cluster).
Every kubesalvo command that talks to the API server follows that order, so that a
laptop with a working ``kubectl`` needs no flag. This module only decides and reads the
``current-context`` of the chosen files; ``client.load_credentials`` loads them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

KUBECONFIG_ENV = "KUBECONFIG"


@dataclass(frozen=True)
class KubeconfigChoice:
    """The files to merge (empty: in-cluster credentials) and what chose them."""

    files: tuple[str, ...]
    origin: str

    @property
    def in_cluster(self) -> bool:
        return not self.files

    def describe(self) -> str:
        """Where the credentials come from, for logs and error messages."""
        if self.in_cluster:
            return f"in-cluster service account ({self.origin})"
        return f"{os.pathsep.join(self.files)} ({self.origin})"


def _home(environ: Mapping[str, str]) -> Path:
    # client-go's homedir.HomeDir reads $HOME first; so does this.
    home = environ.get("HOME")
    return Path(home) if home else Path.home()


def choose_kubeconfig(
    explicit: str | None,
    environ: Mapping[str, str] | None = None,
    explicit_origin: str = "--kubeconfig",
) -> KubeconfigChoice:
    """The kubeconfig files a command reads: ``explicit``, else $KUBECONFIG's existing
    files, else ~/.kube/config, else none (in-cluster)."""
    env = os.environ if environ is None else environ
    if explicit:
        # An explicit file must exist (kubectl fails on a missing one too): the loader
        # reports it, instead of this quietly falling back to in-cluster credentials.
        return KubeconfigChoice((os.path.expanduser(explicit),), explicit_origin)
    listed = [path for path in env.get(KUBECONFIG_ENV, "").split(os.pathsep) if path]
    if listed:
        files: list[str] = []
        for path in (os.path.expanduser(p) for p in listed):
            if path not in files and Path(path).is_file():
                files.append(path)
        if files:
            return KubeconfigChoice(tuple(files), f"${KUBECONFIG_ENV}")
        # kubectl does not look at ~/.kube/config once $KUBECONFIG names files.
        return KubeconfigChoice((), f"no file of ${KUBECONFIG_ENV} exists")
    home_file = _home(env) / ".kube" / "config"
    if home_file.is_file():
        return KubeconfigChoice((str(home_file),), "~/.kube/config")
    return KubeconfigChoice((), f"no --kubeconfig, ${KUBECONFIG_ENV} or ~/.kube/config")


def first_current_context(files: tuple[str, ...]) -> str | None:
    """The ``current-context`` of the first file that sets one, as kubectl merges it.

    The ``kubernetes`` package's merger lets the last file win instead, so the caller
    passes this one explicitly.
    """
    for path in files:
        with open(path, encoding="utf-8") as handle:
            loaded = yaml.safe_load(handle)
        context = loaded.get("current-context") if isinstance(loaded, dict) else None
        if context:
            return str(context)
    return None
