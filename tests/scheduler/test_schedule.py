"""Schedules: cron edge cases (month ends, DST), at / in / every, sun times against published tables."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from edge.scheduler.schedule import Place, ScheduleError, parse
from edge.scheduler.sun import sun_event

BERLIN = ZoneInfo("Europe/Berlin")
HERE = Place(BERLIN, 52.52, 13.405)


def local(*args: int, zone=BERLIN) -> datetime:
    return datetime(*args, tzinfo=zone)


def runs(spec: str, after: datetime, count: int, place: Place = HERE) -> list[str]:
    schedule = parse(spec, place, after)
    found, moment = [], after
    for _ in range(count):
        moment = schedule.next_after(moment)
        found.append(moment.astimezone(place.zone).isoformat(timespec="minutes"))
    return found


def test_month_ends_and_leap_days():
    assert runs("0 9 31 * *", local(2026, 1, 31, 10, 0), 2) == ["2026-03-31T09:00+02:00", "2026-05-31T09:00+02:00"]
    assert runs("0 0 29 2 *", local(2026, 1, 1), 1) == ["2028-02-29T00:00+01:00"]
    assert runs("@monthly", local(2026, 12, 15), 1) == ["2027-01-01T00:00+01:00"]
    with pytest.raises(ScheduleError, match="never happens"):
        parse("0 0 30 2 *", HERE, local(2026, 1, 1))


def test_day_of_month_or_day_of_week_as_cron_does_it():
    # Both fields given: the 13th *or* a Friday. One given: only it decides.
    assert runs("0 12 13 * fri", local(2026, 2, 1), 3) == [
        "2026-02-06T12:00+01:00", "2026-02-13T12:00+01:00", "2026-02-20T12:00+01:00"]
    assert runs("0 8 * jan-mar mon-fri", local(2026, 3, 27, 9), 2) == ["2026-03-30T08:00+02:00", "2026-03-31T08:00+02:00"]
    assert runs("*/20 9-10 * * 7", local(2026, 3, 1, 10, 30), 2) == ["2026-03-01T10:40+01:00", "2026-03-08T09:00+01:00"]


def test_clocks_going_forward_run_the_skipped_time_once_at_the_jump():
    # 2026-03-29 in Berlin: 02:00 CET becomes 03:00 CEST.
    assert runs("30 2 * * *", local(2026, 3, 28, 12), 2) == ["2026-03-29T03:00+02:00", "2026-03-30T02:30+02:00"]
    assert runs("0 7 * * *", local(2026, 3, 28, 12), 2) == ["2026-03-29T07:00+02:00", "2026-03-30T07:00+02:00"]
    after_jump = parse("0 3 * * *", HERE, local(2026, 3, 28)).next_after(local(2026, 3, 28, 12))
    assert after_jump == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)


def test_clocks_going_back_run_a_repeated_time_once():
    # 2026-10-25 in Berlin: 03:00 CEST becomes 02:00 CET; 02:30 happens twice.
    found = runs("30 2 * * *", local(2026, 10, 24, 12), 2)
    assert found == ["2026-10-25T02:30+02:00", "2026-10-26T02:30+01:00"]
    hourly = parse("@hourly", HERE, local(2026, 10, 25))
    moments = [hourly.next_after(datetime(2026, 10, 24, 23, 30, tzinfo=UTC))]
    for _ in range(3):
        moments.append(hourly.next_after(moments[-1]))
    assert [m.isoformat() for m in moments] == ["2026-10-25T00:00:00+00:00", "2026-10-25T02:00:00+00:00",
                                                "2026-10-25T03:00:00+00:00", "2026-10-25T04:00:00+00:00"]


def test_at_in_and_every():
    now = local(2026, 11, 22, 18, 0)
    assert parse("in 20m", HERE, now).next_after(now) == now + timedelta(minutes=20)
    assert parse("in 1h30m", HERE, now).next_after(now) == now + timedelta(minutes=90)
    assert runs("at 19:15", now, 1) == ["2026-11-22T19:15+01:00"]
    assert runs("at 07:00", now, 1) == ["2026-11-23T07:00+01:00"]  # passed today: tomorrow
    assert runs("at 2026-12-24T18:00:00+01:00", now, 1) == ["2026-12-24T18:00+01:00"]
    assert runs("at 2026-12-24 18:00", now, 1) == ["2026-12-24T18:00+01:00"]  # no offset: local time
    at = parse("at 2026-12-24 18:00", HERE, now)
    assert at.text == "at 2026-12-24T18:00:00+01:00" and at.next_after(local(2026, 12, 25)) is None
    every = parse("every 30m", HERE, now)
    assert every.next_after(now) == now + timedelta(minutes=30)
    assert every.next_after(now + timedelta(minutes=30)) == now + timedelta(minutes=60)  # strictly after
    assert every.next_after(now + timedelta(hours=5, minutes=1)) == now + timedelta(hours=5, minutes=30)


@pytest.mark.parametrize(("place", "day", "sunrise", "sunset"), [
    # Published times (timeanddate.com), local clock time; the algorithm is good to a minute or two.
    (("Europe/London", 51.5074, -0.1278), date(2024, 6, 21), "04:43", "21:21"),
    (("America/New_York", 40.7128, -74.0060), date(2024, 12, 21), "07:16", "16:32"),
    (("Australia/Sydney", -33.8688, 151.2093), date(2024, 1, 1), "05:47", "20:09"),
    (("Europe/Berlin", 52.52, 13.405), date(2024, 3, 20), "06:07", "18:19"),
])
def test_sun_times_match_published_tables(place, day, sunrise, sunset):
    zone, latitude, longitude = ZoneInfo(place[0]), place[1], place[2]
    for event, expected in (("sunrise", sunrise), ("sunset", sunset)):
        moment = sun_event(day, latitude, longitude, event, zone)
        hours, minutes = map(int, expected.split(":"))
        published = datetime(day.year, day.month, day.day, hours, minutes, tzinfo=zone)
        assert abs((moment - published).total_seconds()) <= 120, (event, moment)


def test_sun_schedules_with_offsets_and_polar_night():
    # Berlin, 2024-03-20: sunset 18:20:05 by the algorithm (published: 18:19); the next day's is later.
    assert runs("sunset", local(2024, 3, 20, 12), 2) == ["2024-03-20T18:20+01:00", "2024-03-21T18:22+01:00"]
    assert runs("sunrise-30m", local(2024, 3, 20, 12), 1) == ["2024-03-21T05:35+01:00"]
    assert runs("sunset + 1h", local(2024, 3, 20, 19, 0), 1) == ["2024-03-20T19:20+01:00"]
    tromso = Place(ZoneInfo("Europe/Oslo"), 69.6492, 18.9553)
    first_light = parse("sunrise", tromso, local(2024, 12, 1)).next_after(local(2024, 12, 1, zone=tromso.zone))
    assert date(2025, 1, 14) <= first_light.date() <= date(2025, 1, 17)  # the polar night ends mid-January


@pytest.mark.parametrize(("spec", "reason"), [
    ("61 * * * *", "'61' is not a valid minute"), ("sometimes", "a cron expression has 5 fields"),
    ("every 10s", "the shortest interval is one minute"), ("every soon", "not a duration"),
    ("at 25:00", "not a time of day"), ("at tomorrow", "not a time like"), ("*/0 * * * *", "the step must be a positive number"),
    ("5-1 * * * *", "a range must go upwards"), ("@reboot", "not supported"),
])
def test_bad_schedules_say_why_with_examples(spec, reason):
    with pytest.raises(ScheduleError) as caught:
        parse(spec, HERE, local(2026, 11, 22))
    assert reason in str(caught.value) and "Examples:" in str(caught.value)


def test_sun_needs_a_place():
    with pytest.raises(ScheduleError, match=r"\[location\] latitude and longitude"):
        parse("sunset", Place(BERLIN), local(2026, 11, 22))
