"""The `edge` command as a user runs it: real subprocesses against the scripted model server."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from tests.conftest import edge_env, run_edge
from tests.fakes.llm_server import ScriptedLLM, Step


def wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def test_help_lists_the_commands_and_version(tmp_path):
    result = run_edge(["--help"], edge_env(tmp_path, None), tmp_path)
    assert result.returncode == 0
    for command in ("init", "agent", "chat", "doctor", "version"):
        assert command in result.stdout
    assert run_edge(["version"], edge_env(tmp_path, None), tmp_path).stdout.startswith("edge 0.")


def test_agent_prints_the_answer_and_exits_0(tmp_path, llm: ScriptedLLM):
    llm.script(Step(tool_calls=[{"name": "system_status", "arguments": {}}]), "All good: load is low.")
    result = run_edge(["agent", "-m", "how is the pi?"], edge_env(tmp_path, llm), tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "All good: load is low.\n"  # only the answer on stdout
    assert "system_status" in result.stderr  # tool activity on stderr


def test_agent_with_the_server_down_exits_1_with_advice(tmp_path):
    env = edge_env(tmp_path, None, EDGE_PROVIDER__BASE_URL="http://127.0.0.1:9", EDGE_PROVIDER__MAX_RETRIES="0")
    result = run_edge(["agent", "-m", "hi"], env, tmp_path)
    assert result.returncode == 1
    assert "cannot reach Ollama at http://127.0.0.1:9" in result.stdout + result.stderr
    assert "ollama serve" in result.stdout + result.stderr and "Traceback" not in result.stderr


def test_bad_config_exits_2_naming_file_and_key(tmp_path):
    path = tmp_path / "edge.toml"
    path.write_text('[security]\nautonomy = "yolo"\n')
    result = run_edge(["agent", "-m", "hi", "--config", str(path)], edge_env(tmp_path, None), tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{path}: [security] autonomy = 'yolo': expected one of 'readonly', 'supervised', 'full'" in result.stderr


def test_init_writes_config_and_workspace_and_keeps_them_the_second_time(tmp_path):
    env = edge_env(tmp_path, None)
    config = tmp_path / "conf" / "edge.toml"
    first = run_edge(["init", "--config", str(config)], env, tmp_path)
    assert first.returncode == 0 and config.read_text().startswith("# edge.toml")
    workspace = tmp_path / "state" / "workspace"
    assert sorted(p.name for p in workspace.iterdir()) == sorted(
        ["AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "MEMORY.md"])
    (workspace / "USER.md").write_text("I am Ada.")
    second = run_edge(["init", "--config", str(config)], env, tmp_path)
    assert "kept" in second.stdout and (workspace / "USER.md").read_text() == "I am Ada."


def test_chat_remembers_the_session_across_restarts_and_new_starts_fresh(tmp_path, llm: ScriptedLLM):
    env = edge_env(tmp_path, llm)
    llm.script("Nice to meet you, Ada.")
    first = run_edge(["chat"], env, tmp_path, stdin="my name is Ada\n")
    assert first.returncode == 0 and "Nice to meet you, Ada." in first.stdout
    llm.script("You are Ada.", "I do not know yet.")
    second = run_edge(["chat"], env, tmp_path, stdin="who am I?\n/new\nwho am I?\n")
    assert "Started a new conversation." in second.stdout
    remembered, fresh = llm.chats()[1]["messages"], llm.chats()[2]["messages"]
    assert [m["content"] for m in remembered[1:]] == ["my name is Ada", "Nice to meet you, Ada.", "who am I?"]
    assert [m["role"] for m in fresh] == ["system", "user"]


def test_chat_commands(tmp_path, llm: ScriptedLLM):
    result = run_edge(["chat"], edge_env(tmp_path, llm), tmp_path, stdin="/help\n/tools\n/model\n/status\n/stop\n/bogus\n")
    out = result.stdout
    assert "/new" in out and "- shell (high risk)" in out and "Model: test-model at Ollama" in out
    assert "Autonomy: supervised" in out and "Nothing is running." in out and "Unknown command /bogus" in out
    assert llm.chats() == []  # commands never reach the model


def test_chat_asks_before_a_risky_tool_and_obeys(tmp_path, llm: ScriptedLLM):
    write = {"name": "file_write", "arguments": {"path": "note.md", "content": "hello"}}
    llm.script(Step(tool_calls=[write]), "Saved.", Step(tool_calls=[write]), "Not saved.")
    result = run_edge(["chat"], edge_env(tmp_path, llm), tmp_path, stdin="save it\ny\nsave again\nn\n")
    assert result.stdout.count("Allow file_write(path='note.md', content='hello')?") == 2
    assert "Saved." in result.stdout and "Not saved." in result.stdout
    assert (tmp_path / "state" / "workspace" / "note.md").read_text() == "hello"
    assert "declined" in llm.chats()[3]["messages"][-1]["content"]


def test_ctrl_c_cancels_the_turn_not_the_chat(tmp_path, llm: ScriptedLLM):
    llm.script(Step(text="this answer takes a very long time to finish " * 10, delay=0.1), "Second answer.")
    process = subprocess.Popen([sys.executable, "-m", "edge", "chat"], env=edge_env(tmp_path, llm), cwd=tmp_path,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        process.stdin.write("talk slowly\n")
        process.stdin.flush()
        wait_for(lambda: len(llm.chats()) == 1)
        time.sleep(0.3)  # let a few chunks stream first (the signal then lands mid-answer)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(input="again\n", timeout=20)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert "[stopped]" in out and "Second answer." in out
    assert llm.chats()[1]["messages"][2]["content"].endswith("[stopped]")


def test_doctor_exit_code_follows_health(tmp_path, llm: ScriptedLLM):
    healthy = run_edge(["doctor"], edge_env(tmp_path, llm), tmp_path)
    assert healthy.returncode == 0, healthy.stdout
    assert "tools native" in healthy.stdout and healthy.stdout.strip().endswith("healthy")
    missing = run_edge(["doctor"], edge_env(tmp_path, llm, EDGE_PROVIDER__MODEL="llama3.2:3b"), tmp_path)
    assert missing.returncode == 1 and "ollama pull llama3.2:3b" in missing.stdout
    down = run_edge(["doctor"], edge_env(tmp_path, None, EDGE_PROVIDER__BASE_URL="http://127.0.0.1:9",
                                         EDGE_PROVIDER__MAX_RETRIES="0"), tmp_path)
    assert down.returncode == 1 and "FAIL provider" in down.stdout and "Traceback" not in down.stderr


def test_doctor_says_when_tools_will_be_parsed(tmp_path, llm: ScriptedLLM):
    from tests.fakes.llm_server import FakeModel

    llm.add_model(FakeModel("gemma:2b", tools=False, parameters=2_000_000_000))
    result = run_edge(["doctor"], edge_env(tmp_path, llm, EDGE_PROVIDER__MODEL="gemma:2b"), tmp_path)
    assert "tools parsed from text" in result.stdout and "small-model mode on" in result.stdout
