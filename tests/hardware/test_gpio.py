"""GPIO through gpiozero's MockFactory driving the real device code, from a chat turn to the pin."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from edge import config as config_module
from edge.agent.loop import AgentLoop
from edge.bus import Bus
from edge.errors import ConfigError
from edge.hardware.events import HardwareEvent, Triggers
from edge.metrics import Counters
from tests.conftest import Recorder, open_runtime, running
from tests.fakes.channel import Collector
from tests.fakes.llm_server import ScriptedLLM, Step

DEVICES = {
    "pin_factory": "mock",
    "raw_pins": [5],
    "devices": [
        {"name": "porch light", "kind": "output", "pin": 17, "description": "relay by the front door"},
        {"name": "fan", "kind": "pwm", "pin": 18},
        {"name": "doorbell", "kind": "button", "pin": 4, "bounce_s": 0.0},
        {"name": "heater", "kind": "output", "pin": 22, "needs_approval": True},
        {"name": "boiler", "kind": "output", "pin": 23, "active_high": False},
    ],
}


def echo_tool_result(body: dict) -> Step:
    last = body["messages"][-1]
    return Step(text="Done: " + last["content"]) if last["role"] == "tool" else Step(text="?")


async def turn(rt, text: str, approver=None):  # type: ignore[no-untyped-def]
    return await rt.agent.turn(await rt.store.current_session("t"), text, Recorder(), approver)


async def test_turn_the_porch_light_on_from_chat(tmp_path, llm: ScriptedLLM):
    llm.script(Step(tool_calls=[{"name": "gpio_write", "arguments": {"name": "porch light", "value": "on"}}]))
    llm.responder = echo_tool_result
    async with open_runtime(tmp_path, llm, gpio=DEVICES) as rt:
        pin = rt.hardware.gpio.factory.pin(17)
        assert pin.state == 0
        result = await turn(rt, "turn the porch light on")
        state = pin.state
    assert state == 1 and "porch light (output, GPIO17) is on" in result.text


async def test_read_back_dimming_and_active_low(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm, gpio=DEVICES) as rt:
        board = rt.hardware.gpio
        assert board.write("fan", "30%") == "fan (pwm, GPIO18) is at 30%"
        assert board.factory.pin(18).state == pytest.approx(0.3)
        assert board.write("boiler", "on") == "boiler (output, GPIO23) is on"
        assert board.factory.pin(23).state == 0  # active low: on drives the pin low
        listing = await rt.registry.get("gpio_list").function()
    assert "doorbell (button, GPIO4) is off" in listing and "relay by the front door" in listing
    assert "pins are simulated" in listing


@pytest.mark.parametrize(("name", "value", "error"), [
    ("garage", "on", "no GPIO device named 'garage'; the devices are: porch light, fan, doorbell, heater, boiler"),
    ("fan", "1.5", "out of range"),
    ("porch light", "0.5", "on/off only"),
    ("porch light", "bright", "not understood"),
    ("doorbell", "on", "it can be read, not switched"),
    ("GPIO6", "on", "no GPIO device named 'GPIO6'"),  # not in raw_pins
])
async def test_bad_writes_get_clear_errors(tmp_path, llm: ScriptedLLM, name, value, error):
    from edge.tools.registry import ToolCall

    async with open_runtime(tmp_path, llm, gpio=DEVICES, security={"autonomy": "full"}) as rt:
        result = await rt.registry.execute(ToolCall("1", "gpio_write", {"name": name, "value": value}), "s", None, False)
    assert not result.ok and error in result.content


async def test_raw_pins_only_from_the_allowlist(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm, gpio=DEVICES) as rt:
        assert rt.hardware.gpio.write("5", "on") == "GPIO5 (output, GPIO5) is on"
        assert rt.hardware.gpio.factory.pin(5).state == 1


async def test_an_output_that_matters_asks_first(tmp_path, llm: ScriptedLLM):
    call = Step(tool_calls=[{"name": "gpio_write", "arguments": {"name": "heater", "value": "on"}}])
    llm.script(call, "I need your approval for that.")
    asked = []

    async def say_no(request):  # type: ignore[no-untyped-def]
        asked.append(request.describe())
        return "no"

    async with open_runtime(tmp_path, llm, gpio=DEVICES) as rt:
        await turn(rt, "heat the house", approver=say_no)
        heater = rt.hardware.gpio.factory.pin(22).state
        porch = rt.registry.get("gpio_write").risk_for({"name": "porch light"})
    assert asked == ["gpio_write(name='heater', value='on')"] and heater == 0 and porch == "low"


async def test_pulse_switches_on_then_off(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm, gpio=DEVICES) as rt:
        pin = rt.hardware.gpio.factory.pin(17)
        result = await rt.registry.get("gpio_pulse").function("porch light", 0.05)
        history = [state for _, state in pin.states]
    assert history == [0, 1, 0] and "now off" in result


@contextlib.asynccontextmanager
async def daemon_parts(tmp_path, llm, triggers):  # type: ignore[no-untyped-def]
    async with open_runtime(tmp_path, llm, gpio=DEVICES, triggers=triggers) as rt:
        bus, phone = Bus(), Collector("phone")
        bus.register(phone)
        async with running(Triggers(rt.config.triggers, rt.hardware.events, bus).run(lambda: None),
                           AgentLoop(bus, rt, rt.config.agent, Counters()).run(lambda: None)):
            yield rt, phone


async def test_a_button_press_notifies_once_however_often_it_bounces(tmp_path, llm: ScriptedLLM):
    triggers = [{"event": "gpio:doorbell:pressed", "action": "notify", "text": "Someone is at the door",
                 "channel": "phone", "min_interval_s": 60},
                {"event": "gpio:doorbell:marker", "action": "notify", "text": "marker", "channel": "phone"}]
    async with daemon_parts(tmp_path, llm, triggers) as (rt, phone):
        pin = rt.hardware.gpio.factory.pin(4)
        for _ in range(5):
            pin.drive_low()  # pressed (a button pulls the pin to ground)
            pin.drive_high()
        rt.hardware.events.emit_threadsafe(HardwareEvent("gpio", "doorbell", "marker"))  # events are handled in order
        first = await asyncio.wait_for(phone.messages.get(), 5)
        second = await asyncio.wait_for(phone.messages.get(), 5)
    assert (first.kind, first.text) == ("notify", "Someone is at the door") and second.text == "marker"


async def test_a_button_press_can_run_the_agent(tmp_path, llm: ScriptedLLM):
    llm.script("The doorbell rang at noon; I have let you know.")
    triggers = [{"event": "gpio:doorbell:pressed", "action": "agent", "text": "The doorbell was pressed. Tell the owner.",
                 "channel": "phone"}]
    async with daemon_parts(tmp_path, llm, triggers) as (rt, phone):
        rt.hardware.gpio.factory.pin(4).drive_low()
        message = await asyncio.wait_for(phone.messages.get(), 5)
    assert message.text == "The doorbell rang at noon; I have let you know."
    assert llm.chats()[0]["messages"][-1]["content"] == "The doorbell was pressed. Tell the owner."


@pytest.mark.parametrize(("gpio", "triggers", "expected"), [
    ({"devices": [{"name": "a", "pin": 17}, {"name": "b", "pin": 17}]}, [], "pin = 17: expected a pin no other device uses ('a' has it)"),
    ({"devices": [{"name": "a", "pin": 40}]}, [], "pin = 40: expected a BCM GPIO number from 0 to 27"),
    ({"devices": [{"name": "a", "pin": 3}, {"name": "a", "pin": 4}]}, [], "name = 'a': expected a name no other device has"),
    ({"devices": [{"name": "a", "pin": 3, "kind": "servo"}]}, [], "kind = 'servo': expected one of"),
    ({"devices": [{"name": "a", "pin": 3}]}, [{"event": "gpio:b:pressed"}], "[[triggers]] #1 event = 'gpio:b:pressed'"),
])
def test_config_mistakes_are_caught_at_start(tmp_path, gpio, triggers, expected):
    import tomllib  # noqa: F401  (the file is written as TOML below)

    lines = ["[gpio]", 'pin_factory = "mock"']
    for device in gpio["devices"]:
        lines += ["[[gpio.devices]]", *(f"{k} = {v!r}".replace("'", '"') for k, v in device.items())]
    for trigger in triggers:
        lines += ["[[triggers]]", *(f"{k} = {v!r}".replace("'", '"') for k, v in trigger.items())]
    path = tmp_path / "edge.toml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError) as caught:
        config_module.load(str(path), environ={})
    assert expected in str(caught.value)


def test_the_standalone_build_can_see_the_dynamic_imports():
    """Nuitka follows literal imports only: gpiozero picks its factory and pyserial its URL handler by string."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "edge" / "hardware"
    imported = {(node.module, alias.name) for path in ("gpio.py", "serial.py")
                for node in ast.walk(ast.parse((root / path).read_text())) if isinstance(node, ast.ImportFrom)
                for alias in node.names}
    assert ("gpiozero.pins.lgpio", "LGPIOFactory") in imported
    assert {("serial.urlhandler", "protocol_loop"), ("serial.urlhandler", "protocol_socket")} <= imported
