"""Profile validation: plugins at the points they implement, weights that cannot overflow."""

import pytest

from kubesalvo.core.profile import Profile, ProfileError


def test_unknown_plugins_and_bad_weights_are_refused():
    with pytest.raises(ProfileError, match="supported values"):
        Profile(filters=("NodeResourcesFitt",))
    with pytest.raises(ProfileError, match="weight"):
        Profile(scores=(("ImageLocality", 0),))
    with pytest.raises(ProfileError, match="overflow"):
        Profile(scores=(("ImageLocality", 1 << 62), ("NodeAffinity", 1 << 62)))
