"""kube-scheduler's plugins and kubesalvo's, one module each, and the registry of them.

Every plugin module holds what the rest of kubesalvo needs to know about the plugin, in
one place: its name (``NAME``, from :mod:`names`), the extension points it implements,
its args model with defaults and validation (the only one: the config loader and
``simulate`` both build it), its failure reasons (reason texts and status codes), and
the cluster events after which a pod it rejected may fit (``EVENTS``, the queueing
hint's registration). :mod:`registry` collects them into ``PLUGINS``, the table the
config loader, the queue, the encoder and ``explain`` read. :mod:`framework` holds what
all plugins share (extension points, status codes, cluster events, the args errors).

Plugin modules import :mod:`framework` and :mod:`names` only, never each other; the
filters' kernel work stays in ``core/encode.py`` and the compiled kernels.
"""
