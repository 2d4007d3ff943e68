"""workers.runtime.backpressure: the tick size under a memory ceiling."""

from workers.runtime.backpressure import TickSize, resident_bytes

MB = 1 << 20


def test_ticks_shrink_over_the_ceiling_and_grow_back_below_it() -> None:
    size = TickSize(largest=1000, limit=100 * MB)
    assert size.next(50 * MB) == 1000
    assert [size.next(120 * MB) for _ in range(3)] == [500, 250, 125]
    assert size.throttled
    assert size.next(90 * MB) == 125  # between 80 % and the ceiling: hold
    assert [size.next(70 * MB) for _ in range(4)] == [250, 500, 1000, 1000]
    assert not size.throttled


def test_never_below_one_transaction_and_no_ceiling_means_no_throttle() -> None:
    size = TickSize(largest=4, limit=MB)
    assert [size.next(2 * MB) for _ in range(4)] == [2, 1, 1, 1]
    assert TickSize(largest=7, limit=None).next(1 << 40) == 7


def test_resident_memory_is_measured() -> None:
    assert resident_bytes() > 1 * MB
