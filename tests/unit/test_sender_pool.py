"""The delivery engine's sender allowance: it grows while deliveries wait and the process has
CPU time to spare, shrinks while the process is busy, and stays within its floor and size."""

from __future__ import annotations

from dispatcher.allowance import FIRST_SENDERS, Pool, next_allowance


class Clocks:
    """A process that uses ``share`` of a CPU, each reading a sweep (0.1 s) later."""

    def __init__(self, share: float) -> None:
        self.share = share
        self.cpu = self.wall = 0.0

    def __call__(self) -> tuple[float, float]:
        self.cpu += 0.1 * self.share
        self.wall += 0.1
        return self.cpu, self.wall


def test_a_busy_process_keeps_its_first_senders_however_many_deliveries_wait() -> None:
    pool = Pool(2000, Clocks(share=0.97))
    assert [pool.adjust(waiting=True) for _ in range(50)] == [FIRST_SENDERS] * 50


def test_senders_waiting_for_receivers_grow_to_the_bound_in_a_second() -> None:
    pool = Pool(2000, Clocks(share=0.2))
    grown = [pool.adjust(waiting=True) for _ in range(10)]
    assert grown[0] == FIRST_SENDERS * 3 // 2
    assert grown == sorted(grown)
    assert grown[-1] == 2000


def test_nothing_waiting_changes_nothing() -> None:
    pool = Pool(2000, Clocks(share=0.2))
    assert pool.adjust(waiting=False) == FIRST_SENDERS


def test_a_process_that_becomes_busy_gives_senders_back_down_to_the_floor() -> None:
    clocks = Clocks(share=0.2)
    pool = Pool(2000, clocks)
    while pool.adjust(waiting=True) < 2000:
        pass
    clocks.share = 1.0
    shrunk = [pool.adjust(waiting=True) for _ in range(100)]
    assert shrunk[0] == 2000 - 2000 // 16
    assert shrunk == sorted(shrunk, reverse=True)
    assert shrunk[-1] == FIRST_SENDERS


def test_a_small_bound_is_the_floor_too() -> None:
    assert Pool(4, Clocks(share=1.0)).allowed == 4
    assert next_allowance(4, 0.0, True, 4, 4) == 4
    assert next_allowance(4, 1.0, True, 4, 4) == 4
    assert next_allowance(1, 0.0, True, 1, 10) == 2


def test_a_delivery_gets_a_sender_more_at_once_only_while_the_process_has_time_to_spare() -> None:
    clocks = Clocks(share=0.2)
    pool = Pool(100, clocks)
    assert not pool.more()  # nothing is known before the first sweep
    pool.adjust(waiting=False)
    # Up to half as many again as the sweep allowed, and within the bound.
    assert [pool.more() for _ in range(40)] == [True] * 32 + [False] * 8
    assert pool.allowed == 96
    pool.adjust(waiting=False)
    assert [pool.more() for _ in range(10)] == [True] * 4 + [False] * 6
    assert pool.allowed == 100
    clocks.share = 0.9
    pool.adjust(waiting=True)
    assert not pool.more()


def test_a_busy_process_keeps_the_senders_its_receivers_answer_time_needs() -> None:
    clocks = Clocks(share=0.2)
    pool = Pool(2000, clocks)
    for _ in range(4):  # receivers answering in 200 ms, CPU time to spare
        pool.adjust(waiting=True, answered=0.2)
    grown = pool.allowed
    assert pool.unqueued == 0.2
    clocks.share = 0.97
    # Deliveries wait for a sender, and answers come as fast as the receivers give them: the
    # senders bound the deliveries, so none is given back.
    assert [pool.adjust(waiting=True, answered=0.21) for _ in range(20)] == [grown] * 20
    # Answers waiting for the event loop: senders are given back.
    assert pool.adjust(waiting=True, answered=0.3) == grown - grown // 16
    # No delivery waiting for a sender: the senders are not what bounds them.
    assert pool.adjust(waiting=False, answered=0.2) < grown - grown // 16


def test_a_busy_process_gives_senders_back_before_it_knows_its_receivers() -> None:
    pool = Pool(2000, Clocks(share=0.97))
    pool.allowed = 1000
    assert pool.adjust(waiting=True, answered=0.2) == 1000 - 1000 // 16


def test_a_lull_in_a_busy_process_grows_the_allowance_by_a_sixteenth_not_by_half() -> None:
    clocks = Clocks(share=0.97)
    pool = Pool(2000, clocks)
    pool.allowed = 800
    assert pool.adjust(waiting=True) == 750
    clocks.share = 0.5  # one sweep with time to spare after a busy one
    assert pool.adjust(waiting=True) == 750 + 750 // 16
    assert [pool.more() for _ in range(50)] == [True] * 49 + [False]  # 796 + 796 // 16
    assert pool.allowed == 845
    # A second sweep in a row with time to spare: the process has room, half as many again.
    assert pool.adjust(waiting=True) == 845 + 845 // 2
