"""DS18B20 thermometers read from a fake 1-Wire sysfs tree; throttling decoded from vcgencmd's answer."""

from __future__ import annotations

import os
import stat

from tests.conftest import open_runtime

GOOD = "72 01 4b 46 7f ff 0e 10 57 : crc=57 YES\n72 01 4b 46 7f ff 0e 10 57 t=23125\n"
BAD_CRC = "72 01 4b 46 7f ff 0e 10 57 : crc=58 NO\n72 01 4b 46 7f ff 0e 10 57 t=85000\n"


def onewire_tree(root):  # type: ignore[no-untyped-def]
    for name, content in (("28-000005e2fdc3", GOOD), ("28-0000069a1b2c", BAD_CRC)):
        (root / name).mkdir(parents=True)
        (root / name / "w1_slave").write_text(content)
    (root / "w1_bus_master1").mkdir()
    return root


async def test_ds18b20_readings_and_a_bad_crc(tmp_path, llm):  # type: ignore[no-untyped-def]
    root = onewire_tree(tmp_path / "w1")
    async with open_runtime(tmp_path, llm, sensors={"onewire_root": str(root)}) as rt:
        text = await rt.registry.get("temperature_sensors").function()
    assert text == "28-000005e2fdc3: 23.1 °C\n28-0000069a1b2c: no valid reading (check the wiring)"


async def test_no_onewire_interface_no_tool(tmp_path, llm):  # type: ignore[no-untyped-def]
    async with open_runtime(tmp_path, llm, sensors={"onewire_root": str(tmp_path / "absent")}) as rt:
        assert rt.registry.get("temperature_sensors") is None


async def test_system_status_reports_throttling_from_vcgencmd(tmp_path, llm, monkeypatch):  # type: ignore[no-untyped-def]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "vcgencmd"
    fake.write_text("#!/bin/sh\necho throttled=0x50005\n")  # under-voltage now and since boot, throttled now
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    async with open_runtime(tmp_path, llm) as rt:
        text = await rt.registry.get("system_status").function()
    assert "Power and heat: under-voltage now, throttled now, under-voltage has occurred, throttling has occurred" in text
