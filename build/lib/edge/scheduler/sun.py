"""Sunrise and sunset for a place and a date (the NOAA almanac algorithm; within a minute or two).

The zenith is 90.833°: the sun's upper edge on the horizon, with atmospheric refraction, as almanacs
and weather sites publish it.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import Literal

ZENITH = 90.833
Event = Literal["sunrise", "sunset"]


def _utc_hours(day: date, latitude: float, longitude: float, event: Event) -> float | None:
    """Hours after 00:00 UTC of `day`, in [0, 24); None when the sun does not rise or set that day."""
    rad, deg = math.radians, math.degrees
    day_of_year = day.timetuple().tm_yday
    longitude_hours = longitude / 15
    t = day_of_year + ((6 if event == "sunrise" else 18) - longitude_hours) / 24
    anomaly = 0.9856 * t - 3.289
    true_longitude = (anomaly + 1.916 * math.sin(rad(anomaly)) + 0.020 * math.sin(rad(2 * anomaly)) + 282.634) % 360
    right_ascension = deg(math.atan(0.91764 * math.tan(rad(true_longitude)))) % 360
    right_ascension += (true_longitude // 90) * 90 - (right_ascension // 90) * 90  # same quadrant as the longitude
    right_ascension /= 15
    sin_declination = 0.39782 * math.sin(rad(true_longitude))
    cos_declination = math.cos(math.asin(sin_declination))
    cos_hour = ((math.cos(rad(ZENITH)) - sin_declination * math.sin(rad(latitude)))
                / (cos_declination * math.cos(rad(latitude))))
    if not -1 <= cos_hour <= 1:
        return None  # polar day or polar night
    hour_angle = deg(math.acos(cos_hour))
    hour_angle = (360 - hour_angle if event == "sunrise" else hour_angle) / 15
    local_mean = hour_angle + right_ascension - 0.06571 * t - 6.622
    return (local_mean - longitude_hours) % 24


def sun_event(day: date, latitude: float, longitude: float, event: Event, zone: tzinfo) -> datetime | None:
    """The sunrise or sunset that falls on `day` in the time zone `zone` (aware, in that zone), or None."""
    for utc_day in (day, day - timedelta(days=1), day + timedelta(days=1)):  # the UTC date may differ by one
        hours = _utc_hours(utc_day, latitude, longitude, event)
        if hours is None:
            continue
        moment = (datetime(utc_day.year, utc_day.month, utc_day.day, tzinfo=UTC) + timedelta(hours=hours)).astimezone(zone)
        if moment.date() == day:
            return moment
    return None
