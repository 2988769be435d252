"""Reading pluginConfig args: from the YAML of ``pluginConfig[j].args`` to the plugins'
own args models.

The models, with kube-scheduler v1's defaults and validation rules, live with their
plugins (``core/plugins/<plugin>.py``, listed in the registry's ``ARGS``), and so do the
readers of kube-scheduler's args kinds (each spec's ``args_reader``, written against
``core/args_reading.py``, which :class:`~kubesalvo.sched.config.decode.Decoder`
implements); an args model of plain values is read field by field. Each reader checks the
document's shape, builds the model, and reports every problem the model finds with itself
at its real path under ``profiles[i].pluginConfig[j].args``. :data:`ARGS_DECODERS` maps
plugin names to readers; a plugin without an entry takes no args.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

from kubesalvo.core.args_reading import API_VERSION, plain_reader
from kubesalvo.core.plugins import registry
from kubesalvo.sched.config.decode import Decoder
from kubesalvo.sched.config.gates import FeatureGates

__all__ = ["API_VERSION", "ARGS_DECODERS", "PluginArgs", "default_args"]

# One of the plugins' args models (registry.ARGS).
PluginArgs: TypeAlias = object

# Plugin name -> reader of its args: kube-scheduler's args kinds have their own, in their
# modules (their fields nest, and some defaulting is the file's, not the model's); every
# other plugin with an args model of plain values gets the plain reader. A plugin not
# listed takes no args.
ARGS_DECODERS: dict[str, Callable[[Decoder, Any, str], Any]] = {
    name: registry.PLUGINS[name].args_reader or plain_reader(name, model)
    for name, model in registry.ARGS.items()
}


def default_args(plugin: str, gates: FeatureGates | None = None) -> Any:
    """The defaulted args of a plugin that has an args kind, else None."""
    decoder = ARGS_DECODERS.get(plugin)
    return None if decoder is None else decoder(Decoder(gates), {}, "")
