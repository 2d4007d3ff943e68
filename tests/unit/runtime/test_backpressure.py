"""workers.runtime.backpressure: the tick size under a memory ceiling and paced by how long
its transactions stay open."""

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


def test_ticks_halve_while_transactions_stay_open_too_long_and_double_while_quick() -> None:
    size = TickSize(largest=8000, limit=None, open_s=2.0)
    assert size.next(0) == 8000
    size.closed(2.5, committed=True, full=True)
    assert size.next(0) == 4000
    size.closed(1.5, committed=True, full=True)  # between half the bound and it: hold
    assert size.next(0) == 4000
    size.closed(0.1, committed=False, full=True)  # lost (the coordinator timed it out)
    assert size.next(0) == 2000
    assert not size.throttled  # the pace is not the memory's throttle (no pause)
    size.closed(0.1, committed=True, full=False)  # a live tick takes what arrived: no signal
    assert size.next(0) == 2000
    sizes = []
    for _ in range(3):
        size.closed(0.5, committed=True, full=True)
        sizes.append(size.next(0))
    assert sizes == [4000, 8000, 8000]


def test_the_smaller_of_the_memory_and_the_pace_bounds_a_tick() -> None:
    size = TickSize(largest=8000, limit=100 * MB, open_s=2.0)
    size.closed(3.0, committed=True, full=True)
    assert size.next(50 * MB) == 4000
    assert [size.next(120 * MB) for _ in range(2)] == [4000, 2000]
    assert size.throttled


def test_resident_memory_is_measured() -> None:
    assert resident_bytes() > 1 * MB
