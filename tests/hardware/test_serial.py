"""Serial devices through a pty emulator: queries from chat, unplug and recovery, lines as events."""

from __future__ import annotations

import asyncio

from edge.bus import Bus
from edge.hardware.events import Triggers
from edge.tools.registry import ToolCall
from tests.conftest import Recorder, open_runtime
from tests.fakes.llm_server import ScriptedLLM, Step
from tests.fakes.serial_device import SerialDevice
from tests.hardware.test_gpio import Collector


def ports(tmp_path, **extra) -> dict:  # type: ignore[no-untyped-def]
    return {"ports": [{"name": "greenhouse", "url": str(tmp_path / "ttyGREENHOUSE"), "write_needs_approval": False, **extra}]}


def watch(port, states: list[bool]) -> dict[bool, asyncio.Event]:  # type: ignore[no-untyped-def]
    """Events set when the port connects (True) or loses its device (False)."""
    reached = {True: asyncio.Event(), False: asyncio.Event()}

    def on_state(connected: bool, error: str) -> None:
        states.append(connected)
        reached[connected].set()
        reached[not connected].clear()

    port.on_state = on_state
    reached[port.connected].set()
    return reached


async def test_a_serial_query_from_chat_reaches_the_device_and_the_answer_the_reply(tmp_path, llm: ScriptedLLM):
    device = SerialDevice(tmp_path / "ttyGREENHOUSE").plug_in()
    llm.script(Step(tool_calls=[{"name": "serial_query", "arguments": {"port_name": "greenhouse", "command": "TEMP?"}}]))
    llm.responder = lambda body: Step(text=f"The greenhouse reads {body['messages'][-1]['content']} °C.")
    try:
        async with open_runtime(tmp_path, llm, serial=ports(tmp_path)) as rt:
            result = await rt.agent.turn(await rt.store.current_session("t"), "greenhouse temperature?", Recorder())
    finally:
        device.unplug()
    assert result.text == "The greenhouse reads 21.5 °C." and device.received == ["TEMP?"]


async def test_unplugged_device_gives_a_clear_error_then_recovers(tmp_path, llm: ScriptedLLM):
    device = SerialDevice(tmp_path / "ttyGREENHOUSE").plug_in()
    states = []
    async with open_runtime(tmp_path, llm, serial=ports(tmp_path), security={"autonomy": "full"}) as rt:
        port = rt.hardware.ports["greenhouse"]
        port._reconnect_s = 0.05
        reached = watch(port, states)
        query = ToolCall("1", "serial_query", {"port_name": "greenhouse", "command": "PING"})
        assert (await rt.registry.execute(query, "s", None, False)).content == "PONG"
        device.unplug()
        await asyncio.wait_for(reached[False].wait(), 10)
        unplugged = await rt.registry.execute(query, "s", None, False)
        device.plug_in()
        await asyncio.wait_for(reached[True].wait(), 10)
        again = await rt.registry.execute(query, "s", None, False)
    assert not unplugged.ok and "'greenhouse' is not connected" in unplugged.content and "as soon as it is back" in unplugged.content
    assert again.content == "PONG" and states[-2:] == [False, True]


async def test_a_device_that_was_never_there_is_reported_not_raised(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm, serial=ports(tmp_path), security={"autonomy": "full"}) as rt:
        result = await rt.registry.execute(ToolCall("1", "serial_send", {"port_name": "greenhouse", "command": "X"}), "s", None, False)
        unknown = await rt.registry.execute(ToolCall("1", "serial_send", {"port_name": "attic", "command": "X"}), "s", None, False)
    assert "not connected" in result.content and "No such file" in result.content
    assert "no serial port named 'attic'; the ports are: greenhouse" in unknown.content


async def test_writes_need_approval_unless_the_port_says_otherwise(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm, serial=ports(tmp_path, write_needs_approval=True)) as rt:
        result = await rt.registry.execute(ToolCall("1", "serial_send", {"port_name": "greenhouse", "command": "X"}), "s", None, False)
    assert result.outcome == "denied"


async def test_byte_cap_and_unsolicited_lines(tmp_path, llm: ScriptedLLM):
    device = SerialDevice(tmp_path / "ttyGREENHOUSE").plug_in()
    try:
        async with open_runtime(tmp_path, llm, serial=ports(tmp_path), security={"autonomy": "full"}) as rt:
            too_long = await rt.registry.execute(ToolCall("1", "serial_send", {"port_name": "greenhouse", "command": "x" * 300}),
                                                 "s", None, False)
            device.say("DOOR OPEN")
            device.say("DOOR CLOSED")
            lines: list[str] = []
            while len(lines) < 2:  # a read returns what has arrived so far, waiting only when nothing has
                read = await rt.registry.execute(ToolCall("2", "serial_read", {"port_name": "greenhouse"}), "s", None, False)
                lines += read.content.splitlines()
    finally:
        device.unplug()
    assert "too much to send" in too_long.content and lines == ["DOOR OPEN", "DOOR CLOSED"]


async def test_serial_lines_can_trigger_a_notification(tmp_path, llm: ScriptedLLM):
    device = SerialDevice(tmp_path / "ttyGREENHOUSE").plug_in()
    triggers = [{"event": "serial:greenhouse:line", "match": "^WET", "action": "notify", "text": "Basement: {value}",
                 "channel": "phone", "min_interval_s": 0}]
    try:
        async with open_runtime(tmp_path, llm, serial=ports(tmp_path, events=True), triggers=triggers) as rt:
            bus, phone = Bus(), Collector("phone")
            bus.register(phone)
            task = asyncio.create_task(Triggers(rt.config.triggers, rt.hardware.events, bus).run(lambda: None))
            device.say("DRY 12%")
            device.say("WET 87%")
            message = await asyncio.wait_for(phone.messages.get(), 5)
            task.cancel()
    finally:
        device.unplug()
    assert message.text == "Basement: WET 87%"


def test_cli_gpio_serial_and_doctor(tmp_path, llm: ScriptedLLM):
    from tests.conftest import edge_env, run_edge

    device = SerialDevice(tmp_path / "ttyGREENHOUSE").plug_in()
    config = tmp_path / "edge.toml"
    config.write_text(f"""
[gpio]
pin_factory = "mock"
[[gpio.devices]]
name = "porch"
pin = 17
[[serial.ports]]
name = "greenhouse"
url = "{tmp_path / 'ttyGREENHOUSE'}"
[[serial.ports]]
name = "attic"
url = "{tmp_path / 'ttyATTIC'}"
""")
    env = edge_env(tmp_path, llm)
    try:
        listed = run_edge(["gpio", "list", "--config", str(config)], env, tmp_path)
        written = run_edge(["gpio", "write", "porch", "on", "--config", str(config)], env, tmp_path)
        unknown = run_edge(["gpio", "read", "garage", "--config", str(config)], env, tmp_path)
        ports = run_edge(["serial", "list", "--config", str(config)], env, tmp_path)
        answer = run_edge(["serial", "send", "greenhouse", "TEMP?", "--config", str(config)], env, tmp_path)
        absent = run_edge(["serial", "send", "attic", "PING", "--config", str(config)], env, tmp_path)
        doctor = run_edge(["doctor", "--config", str(config)], env, tmp_path)
    finally:
        device.unplug()
    assert listed.stdout == "porch (output, GPIO17) is off\n" and "simulated" in listed.stderr
    assert written.stdout == "porch (output, GPIO17) is on\n"
    assert unknown.returncode == 1 and "the devices are: porch" in unknown.stderr and "Traceback" not in unknown.stderr
    assert "greenhouse" in ports.stdout and "present" in ports.stdout and "attic" in ports.stdout and "not plugged in" in ports.stdout
    assert answer.stdout == "21.5\n"
    assert absent.returncode == 1 and "'attic' is not connected" in absent.stderr
    assert "ok  gpio" in doctor.stdout and "simulated pins" in doctor.stdout
    assert "FAIL serial" in doctor.stdout and "attic" in doctor.stdout and doctor.returncode == 1
