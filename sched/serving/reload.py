"""Serving certificates reloaded when their files change, as kube-scheduler's dynamic
serving certificate is.

Certificates rotate (cert-manager, kubeadm renewals, a Secret updated in place): a server
that loaded its pair once keeps presenting the old one until it expires. ``CertificateFiles``
remembers what it loaded (the bytes of both files) and ``reload_if_changed`` loads a
changed pair into the same ``ssl.SSLContext``: connections accepted afterwards present the
new certificate, those already open keep theirs. A pair that does not load (a half-written
rotation, a key that does not match) is tried first in a throwaway context, so the live
one never holds a broken pair; the old one stays and the next look tries again.
``watch`` looks every ``interval`` seconds (kube-scheduler looks once a minute and on
file events).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import ssl
from pathlib import Path

log = logging.getLogger(__name__)

RELOAD_INTERVAL_SECONDS = 10.0


class CertificateFiles:
    """A certificate and key file pair loaded into ``context``."""

    def __init__(self, context: ssl.SSLContext, cert_file: str, key_file: str) -> None:
        self.context = context
        self.cert_file = cert_file
        self.key_file = key_file
        self.loaded = b""
        self.reloads = 0
        if not self.reload_if_changed():
            raise ssl.SSLError(f"cannot load {cert_file} and {key_file}")

    def _fingerprint(self) -> bytes:
        digest = hashlib.sha256()
        for path in (self.cert_file, self.key_file):
            digest.update(Path(path).read_bytes())
            digest.update(b"\0")
        return digest.digest()

    def reload_if_changed(self) -> bool:
        """Load the pair if its files changed since the last load; whether it was loaded."""
        try:
            seen = self._fingerprint()
        except OSError as error:
            log.warning("cannot read the serving certificate: %s", error)
            return False
        if seen == self.loaded:
            return False
        try:
            trial = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            trial.load_cert_chain(self.cert_file, self.key_file)
            self.context.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as error:
            log.warning(
                "the serving certificate %s did not load (kept the previous one): %s",
                self.cert_file,
                error,
            )
            return False
        if self.loaded:
            self.reloads += 1
            log.info("serving certificate %s reloaded", self.cert_file)
        self.loaded = seen
        return True

    async def watch(self, interval: float | None = None) -> None:
        """Look for a changed pair every ``interval`` seconds (``RELOAD_INTERVAL_SECONDS``
        when None), until cancelled."""
        while True:
            await asyncio.sleep(RELOAD_INTERVAL_SECONDS if interval is None else interval)
            # Reading two small files: cheap enough on the loop every few seconds.
            self.reload_if_changed()
