"""VolumeBinding's capacity score arithmetic, as upstream's scorer computes it: the broken
line's integer interpolation (truncated towards zero, scores x10), utilization in integer
division (100 when the capacity is 0 or short), the mean over classes rounded half away
from zero."""

from kubesalvo.core.plugins.node_resources_fit import ShapePoint
from kubesalvo.core.volume_capacity import class_score, shape_score, utilization

DEFAULT = (ShapePoint(0, 10), ShapePoint(100, 0))


def test_the_default_shape_scores_an_empty_pool_100_and_a_full_one_0():
    assert shape_score(DEFAULT, 0) == 100
    assert shape_score(DEFAULT, 100) == 0
    assert shape_score(DEFAULT, 37) == 63


def test_interpolation_truncates_towards_zero_on_a_falling_line():
    shape = (ShapePoint(0, 10), ShapePoint(30, 3))
    # 100 + (30 - 100) * 7 / 30 = 100 - 16.33: Go truncates the step to -16
    assert shape_score(shape, 7) == 84


def test_utilization_beyond_the_last_point_or_before_the_first_takes_its_score():
    shape = (ShapePoint(20, 4), ShapePoint(60, 9))
    assert shape_score(shape, 5) == 40
    assert shape_score(shape, 90) == 90


def test_utilization_is_integer_percent_and_100_when_the_capacity_is_0_or_short():
    assert utilization(1, 3) == 33
    assert utilization(5, 0) == 100
    assert utilization(6, 5) == 100
    assert utilization(0, 5) == 0


def test_a_node_scores_the_mean_of_its_classes_rounded_half_away_from_zero():
    # 50 and 25 -> 37.5 -> 38
    assert class_score(DEFAULT, {"a": (50, 100), "b": (75, 100)}) == 38
    assert class_score(DEFAULT, {}) == 0
