"""The gangs' old address, kept only for ``core/place.py``: Coscheduling's group reading lives
in ``core/plugins/coscheduling/gang.py``.

``core/place.py`` belongs to this session's kernel work and imports ``core.gang``; once it
imports the plugin's module this file goes. Nothing else may import it (tests check).
"""

from kubesalvo.core.plugins.coscheduling.gang import *  # noqa: F403
from kubesalvo.core.plugins.coscheduling.gang import __all__  # noqa: F401
