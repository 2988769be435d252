"""The gangs' old address, kept for three modules only: Coscheduling's group reading lives in
``core/plugins/coscheduling/gang.py``.

``core/place.py``, ``core/volume_burst.py`` and ``core/volume_slots.py`` are other work's
files this session and import ``core.gang``; once they import the plugin's module this file
goes. Nothing else may import it (tests/test_import_contracts.py checks).
"""

from kubesalvo.core.plugins.coscheduling.gang import *  # noqa: F403
from kubesalvo.core.plugins.coscheduling.gang import __all__  # noqa: F401
