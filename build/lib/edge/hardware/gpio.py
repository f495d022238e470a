"""GPIO devices by name, through gpiozero with an explicit pin factory: lgpio on a Pi, simulated elsewhere.

gpiozero is imported only when devices are configured (it costs ~10 MB). Its callbacks run on its own
threads; they reach the event loop only through EventQueue.emit_threadsafe().
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from edge.config import GpioConfig, GpioDeviceConfig
from edge.errors import EdgeError, ToolError
from edge.hardware.events import EventQueue, HardwareEvent

log = logging.getLogger(__name__)
_EDGES = {"button": ("pressed", "released"), "motion": ("motion", "no_motion"), "input": ("on", "off")}


class HardwareError(EdgeError):
    pass


def make_pin_factory(choice: str) -> tuple[Any, bool]:
    """(factory, simulated). Literal imports, so that the standalone build includes them."""
    if choice == "lgpio" or (choice == "auto" and any(Path("/dev").glob("gpiochip*"))):
        try:
            from gpiozero.pins.lgpio import LGPIOFactory

            return LGPIOFactory(), False
        except Exception as exc:  # lgpio missing, or the chip cannot be opened (permissions)
            if choice == "lgpio":
                raise HardwareError(f"cannot use the GPIO chip through lgpio: {exc}; is the user in the 'gpio' group?") from exc
            log.warning("lgpio is not usable (%s); GPIO pins are SIMULATED", exc)
    from gpiozero.pins.mock import MockFactory, MockPWMPin

    return MockFactory(pin_class=MockPWMPin), True


class GpioBoard:
    def __init__(self, config: GpioConfig, events: EventQueue | None) -> None:
        self.config = config
        self.factory, self.simulated = make_pin_factory(config.pin_factory)
        if self.simulated:
            log.warning("GPIO pins are simulated: nothing on this machine is switched (no /dev/gpiochip* or lgpio)")
        self.devices: dict[str, tuple[GpioDeviceConfig, Any]] = {}
        self._events = events
        for device in config.devices:
            self.devices[device.name] = (device, self._open(device))

    def _open(self, device: GpioDeviceConfig) -> Any:
        import gpiozero

        options: dict[str, Any] = {"pin_factory": self.factory}
        try:
            if device.kind == "output":
                made = gpiozero.DigitalOutputDevice(device.pin, active_high=device.active_high,
                                                    initial_value=bool(device.initial), **options)
            elif device.kind == "pwm":
                made = gpiozero.PWMOutputDevice(device.pin, active_high=device.active_high,
                                                initial_value=device.initial, **options)
            elif device.kind == "button":
                made = gpiozero.Button(device.pin, bounce_time=device.bounce_s or None, **options)
            elif device.kind == "motion":
                made = gpiozero.MotionSensor(device.pin, **options)
            else:
                made = gpiozero.DigitalInputDevice(device.pin, bounce_time=device.bounce_s or None, **options)
        except gpiozero.GPIOZeroError as exc:
            raise HardwareError(f"GPIO device {device.name!r} on pin {device.pin}: {exc}") from exc
        if device.kind in _EDGES and self._events is not None:
            rising, falling = _EDGES[device.kind]
            made.when_activated = lambda: self._emit(device.name, rising)
            made.when_deactivated = lambda: self._emit(device.name, falling)
        return made

    def _emit(self, name: str, kind: str) -> None:
        assert self._events is not None
        self._events.emit_threadsafe(HardwareEvent("gpio", name, kind))

    def device(self, name: str) -> tuple[GpioDeviceConfig, Any]:
        found = self.devices.get(name) or self._raw_pin(name)
        if found is None:
            known = ", ".join(self.devices) or "none configured"
            raise ToolError(f"no GPIO device named {name!r}; the devices are: {known}")
        return found

    def describe(self, name: str) -> str:
        device, made = self.device(name)
        state = f"at {made.value:.0%}" if device.kind == "pwm" else "on" if made.is_active else "off"
        return f"{device.name} ({device.kind}, GPIO{device.pin}) is {state}"

    def write(self, name: str, value: str) -> str:
        device, made = self.device(name)
        if device.kind not in ("output", "pwm"):
            raise ToolError(f"{device.name} is an input ({device.kind}); it can be read, not switched")
        level = _level(value, pwm=device.kind == "pwm")
        made.value = level if device.kind == "pwm" else bool(level)
        return self.describe(name)  # read back: what the pin really is now

    def _raw_pin(self, name: str) -> tuple[GpioDeviceConfig, Any] | None:
        """'17' or 'GPIO17' for a pin in [gpio] raw_pins: opened on first use as a plain output."""
        digits = name.upper().removeprefix("GPIO")
        if not digits.isdigit() or int(digits) not in self.config.raw_pins:
            return None
        key = f"GPIO{int(digits)}"
        if key not in self.devices:
            device = GpioDeviceConfig(name=key, kind="output", pin=int(digits))
            self.devices[key] = (device, self._open(device))
        return self.devices[key]

    def close(self) -> None:
        for _, made in self.devices.values():
            made.close()
        self.factory.close()


def _level(value: str, pwm: bool) -> float:
    word = value.strip().lower()
    if word in ("on", "true", "high", "1"):
        return 1.0
    if word in ("off", "false", "low", "0"):
        return 0.0
    try:
        level = float(word.rstrip("%")) / (100 if word.endswith("%") else 1)
    except ValueError:
        raise ToolError(f"value {value!r} is not understood; use on, off" + (" or a level from 0 to 1" if pwm else "")) from None
    if not pwm:
        raise ToolError(f"value {value!r}: this device is on/off only; use on or off")
    if not 0.0 <= level <= 1.0:
        raise ToolError(f"level {value!r} is out of range; use a level from 0 to 1 (or 0% to 100%)")
    return level
