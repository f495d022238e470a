"""supervise(): restarts with backoff, keeps health, and stops only when cancelled."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from edge.supervise import Health, supervise


async def test_a_failing_service_is_restarted_with_growing_delays():
    health, attempts = Health(), []
    up = asyncio.Event()

    async def flaky(started):  # type: ignore[no-untyped-def]
        attempts.append(asyncio.get_running_loop().time())
        if len(attempts) < 4:
            raise ConnectionError("telegram is down")
        started()
        up.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(supervise("flaky", flaky, health, first_delay=0.02, max_delay=0.08))
    await asyncio.wait_for(up.wait(), 5)
    state = health.components["flaky"]
    assert state.status == "up" and state.restarts == 3 and "telegram is down" in state.last_error
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert gaps[0] >= 0.02 and gaps[1] >= 0.04 and gaps[2] >= 0.08  # doubling, capped
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert state.status == "stopped"


async def test_one_service_failing_does_not_touch_another():
    health = Health()
    steady_up = asyncio.Event()

    async def broken(started):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    async def steady(started):  # type: ignore[no-untyped-def]
        started()
        steady_up.set()
        await asyncio.Event().wait()

    tasks = [asyncio.create_task(supervise("broken", broken, health, first_delay=0.01)),
             asyncio.create_task(supervise("steady", steady, health))]
    await asyncio.wait_for(steady_up.wait(), 5)
    await asyncio.wait_for(health.components["broken"].settled.wait(), 5)
    assert health.components["steady"].status == "up" and not health.healthy
    assert "broken failed" in health.summary()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
