"""When a job runs: 5-field cron (and @daily-style names), one-shot `at`, `every` intervals, and
sunrise / sunset with an offset — each answering "the next run after this instant", in the job's time zone.

Cron fields are matched on the local wall clock. On the day the clocks go forward, a time inside the
skipped hour runs at the moment of the jump; on the day they go back, a repeated time runs once.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from edge.config import LocationConfig
from edge.errors import EdgeError
from edge.scheduler.sun import Event, sun_event

EXAMPLES = ('"0 7 * * 1-5" (7:00 on weekdays), "@daily", "every 30m", "at 07:30", "in 20m", '
            '"at 2026-12-24T18:00:00+01:00", "sunset", "sunrise-30m"')
MACROS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
          "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
_DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?$")
_SUN = re.compile(r"^(sunrise|sunset)\s*(?:([+-])\s*(\S+))?$")
SEARCH_YEARS = 5  # a cron expression that matches nothing in this long never will (Feb 30)


class ScheduleError(EdgeError):
    """A schedule that cannot be understood; the message says why and shows examples."""


class Schedule(Protocol):
    text: str  # the normalised form that is stored, parsed again at every start

    def next_after(self, after: datetime) -> datetime | None: ...


@dataclass(frozen=True)
class Place:
    zone: tzinfo
    latitude: float | None = None
    longitude: float | None = None

    @classmethod
    def from_config(cls, location: LocationConfig) -> Place:
        zone = ZoneInfo(location.timezone) if location.timezone else system_zone()
        if location.has_place:
            return cls(zone, location.latitude, location.longitude)
        return cls(zone)


def system_zone() -> tzinfo:
    """The system's time zone with its DST rules (a fixed UTC offset would be wrong half the year)."""
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    with contextlib.suppress(OSError):
        candidates.append(os.readlink("/etc/localtime").partition("zoneinfo/")[2])
    with contextlib.suppress(OSError):
        candidates.append(Path("/etc/timezone").read_text().strip())
    for name in candidates:
        with contextlib.suppress(ValueError, ZoneInfoNotFoundError):
            if name:
                return ZoneInfo(name)
    return UTC


def parse(text: str, place: Place, now: datetime) -> Schedule:
    """A schedule from its text. `now` anchors "in 20m", "at 07:30" and `every` intervals."""
    spec = " ".join(text.strip().lower().split())
    try:
        schedule = _parse(spec, place, now)
    except ScheduleError as exc:
        raise ScheduleError(f"{exc}. Examples: {EXAMPLES}") from None
    if schedule.next_after(now) is None and not isinstance(schedule, At):
        raise ScheduleError(f"{text!r} never happens. Examples: {EXAMPLES}")
    return schedule


def _parse(spec: str, place: Place, now: datetime) -> Schedule:
    if not spec:
        raise ScheduleError("the schedule is empty")
    if spec.startswith("in "):
        return At(now.astimezone(UTC) + _duration(spec[3:]), place.zone)
    if spec.startswith("at "):
        return At(_instant(spec[3:], place.zone, now), place.zone)
    if spec.startswith("every "):
        return Every(_duration(spec[6:]), now.astimezone(UTC), spec)
    if match := _SUN.match(spec):
        if place.latitude is None or place.longitude is None:
            raise ScheduleError(f"{spec!r} needs the place: set [location] latitude and longitude")
        sign, amount = match.group(2), match.group(3)
        offset = (-1 if sign == "-" else 1) * _duration(amount) if amount else timedelta(0)
        return Sun(match.group(1), offset, place, spec)  # type: ignore[arg-type]
    if spec == "@reboot":
        raise ScheduleError("@reboot is not supported: use a job with catch-up, or the heartbeat")
    return Cron.parse(MACROS.get(spec, spec), place.zone, spec)


def _duration(text: str) -> timedelta:
    match = _DURATION.match(text.replace(" ", ""))
    if not text or not match or not any(match.groups()):
        raise ScheduleError(f"{text!r} is not a duration like 20m, 2h, 1h30m or 1d")
    days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    duration = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    if duration < timedelta(minutes=1):
        raise ScheduleError("the shortest interval is one minute")
    return duration


def _instant(text: str, zone: tzinfo, now: datetime) -> datetime:
    """RFC 3339 (with or without an offset: without, the local zone), or HH:MM as its next occurrence."""
    if re.fullmatch(r"\d{1,2}:\d{2}", text):
        hour, minute = map(int, text.split(":"))
        if hour > 23 or minute > 59:
            raise ScheduleError(f"{text!r} is not a time of day")
        today = now.astimezone(zone).replace(hour=hour, minute=minute, second=0, microsecond=0, tzinfo=None)
        moment = wall_to_instant(today, zone)
        return moment if moment > now else wall_to_instant(today + timedelta(days=1), zone)
    try:
        moment = datetime.fromisoformat(text.upper().replace(" ", "T"))
    except ValueError:
        raise ScheduleError(f"{text!r} is not a time like 07:30 or 2026-12-24T18:00:00+01:00") from None
    return moment.astimezone(UTC) if moment.tzinfo else wall_to_instant(moment, zone)


def wall_to_instant(wall: datetime, zone: tzinfo) -> datetime:
    """A naive local wall-clock time as an instant (UTC). A time the clocks skipped becomes the moment
    they jumped; a repeated time is its first occurrence."""
    for _ in range(24 * 60 + 1):
        moment = wall.replace(tzinfo=zone).astimezone(UTC)
        if moment.astimezone(zone).replace(tzinfo=None) == wall:
            return moment
        wall = wall.replace(second=0, microsecond=0) + timedelta(minutes=1)
    raise ScheduleError(f"{wall} does not exist in {zone}")  # no zone skips a whole day of minutes


@dataclass(frozen=True)
class At:
    moment: datetime  # UTC
    zone: tzinfo

    @property
    def text(self) -> str:
        return "at " + self.moment.astimezone(self.zone).isoformat(timespec="seconds")

    def next_after(self, after: datetime) -> datetime | None:
        return self.moment if self.moment > after else None


@dataclass(frozen=True)
class Every:
    interval: timedelta
    anchor: datetime  # UTC: runs fall on anchor + k × interval
    text: str

    def next_after(self, after: datetime) -> datetime | None:
        steps = math.floor((after - self.anchor) / self.interval) + 1
        return self.anchor + max(steps, 1) * self.interval


@dataclass(frozen=True)
class Sun:
    event: Event
    offset: timedelta
    place: Place
    text: str

    def next_after(self, after: datetime) -> datetime | None:
        assert self.place.latitude is not None and self.place.longitude is not None
        day = (after - self.offset).astimezone(self.place.zone).date() - timedelta(days=1)
        for _ in range(370):  # a polar night lasts months, not a year
            moment = sun_event(day, self.place.latitude, self.place.longitude, self.event, self.place.zone)
            if moment is not None and moment + self.offset > after:
                return (moment + self.offset).astimezone(UTC)
            day += timedelta(days=1)
        return None


@dataclass(frozen=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool  # day-of-month was "*"
    any_weekday: bool
    zone: tzinfo
    text: str

    @classmethod
    def parse(cls, expression: str, zone: tzinfo, text: str) -> Cron:
        fields = expression.split()
        if len(fields) != 5:
            raise ScheduleError(f"{text!r} is not a schedule: a cron expression has 5 fields "
                                "(minute hour day-of-month month day-of-week)")
        minutes = _field(fields[0], 0, 59, "minute")
        hours = _field(fields[1], 0, 23, "hour")
        days = _field(fields[2], 1, 31, "day of month")
        months = _field(fields[3], 1, 12, "month", MONTHS, 1)
        weekdays = frozenset(d % 7 for d in _field(fields[4], 0, 7, "day of week", DAYS, 0))
        return cls(minutes, hours, days, months, weekdays, fields[2] == "*", fields[4] == "*", zone, text)

    def _day_matches(self, day: date) -> bool:
        in_month = day.day in self.days
        in_week = (day.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:  # one of them is "*": the other decides
            return in_month and in_week
        return in_month or in_week  # both given: either will do (as every cron does it)

    def next_after(self, after: datetime) -> datetime | None:
        wall = after.astimezone(self.zone).replace(second=0, microsecond=0, tzinfo=None) + timedelta(minutes=1)
        end = wall + timedelta(days=366 * SEARCH_YEARS)
        while wall < end:
            if wall.month not in self.months:
                wall = (wall.replace(day=1) + timedelta(days=32)).replace(day=1, hour=0, minute=0)
            elif not self._day_matches(wall.date()):
                wall = wall.replace(hour=0, minute=0) + timedelta(days=1)
            elif wall.hour not in self.hours:
                wall = wall.replace(minute=0) + timedelta(hours=1)
            elif wall.minute not in self.minutes:
                wall += timedelta(minutes=1)
            else:
                moment = wall_to_instant(wall, self.zone)
                if moment > after:
                    return moment
                wall += timedelta(minutes=1)
        return None


def _field(text: str, low: int, high: int, name: str, names: list[str] | None = None, base: int = 0) -> frozenset[int]:
    def number(token: str) -> int:
        if names and token[:3] in names and token.isalpha():
            return names.index(token[:3]) + base
        if not token.isdigit() or not low <= int(token) <= high:
            raise ScheduleError(f"{token!r} is not a valid {name} ({low}–{high})")
        return int(token)

    values: set[int] = set()
    for part in text.split(","):
        span, _, step_text = part.partition("/")
        step = number(step_text) if step_text else 1
        if step_text and (not step_text.isdigit() or step < 1):
            raise ScheduleError(f"{part!r}: the step must be a positive number")
        if span == "*":
            first, last = low, high
        elif "-" in span:
            first, last = (number(t) for t in span.split("-", 1))
        else:
            first = last = number(span)
            if step_text:
                last = high
        if first > last:
            raise ScheduleError(f"{part!r}: a range must go upwards")
        values.update(range(first, last + 1, step))
    return frozenset(values)
