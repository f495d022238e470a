"""The policy gate: autonomy levels, approvals (yes / no / always), timeouts, and the audit trail."""

from __future__ import annotations

from edge.tools.policy import ApprovalRequest
from edge.tools.registry import ToolCall
from tests.conftest import open_runtime


def approver(answers: list[str], asked: list[ApprovalRequest]):
    async def approve(request: ApprovalRequest):
        asked.append(request)
        return answers.pop(0)

    return approve


async def test_readonly_offers_and_runs_only_read_only_tools(tmp_path):
    async with open_runtime(tmp_path, security={"autonomy": "readonly"}) as rt:
        names = {t.name for t in rt.registry.offered(small=False)}
        result = await rt.registry.execute(ToolCall("1", "file_write", {"path": "a.md", "content": "x"}), "s", None, False)
    assert "file_write" not in names and "shell" not in names and "file_read" in names
    assert result.outcome == "unknown"
    assert not (rt.config.workspace / "a.md").exists()


async def test_supervised_asks_and_respects_no(tmp_path):
    asked: list[ApprovalRequest] = []
    async with open_runtime(tmp_path) as rt:
        call = ToolCall("1", "file_write", {"path": "a.md", "content": "x"})
        result = await rt.registry.execute(call, "s", approver(["no"], asked), False)
        audit = await rt.store.audit_trail()
    assert result.outcome == "denied" and "declined" in result.content
    assert asked[0].describe() == "file_write(path='a.md', content='x')"
    assert audit[-1].decision == "denied" and not (rt.config.workspace / "a.md").exists()


async def test_always_is_remembered_for_the_session_only(tmp_path):
    asked: list[ApprovalRequest] = []
    async with open_runtime(tmp_path) as rt:
        approve = approver(["always", "no"], asked)
        for content in ("one", "two"):
            result = await rt.registry.execute(ToolCall("1", "file_write", {"path": "a.md", "content": content}), "s1", approve, False)
            assert result.ok
        other = await rt.registry.execute(ToolCall("1", "file_write", {"path": "b.md", "content": "x"}), "s2", approve, False)
    assert len(asked) == 2 and other.outcome == "denied"


async def test_low_risk_runs_without_asking_and_no_approver_means_denied(tmp_path):
    async with open_runtime(tmp_path) as rt:
        low = await rt.registry.execute(ToolCall("1", "time_now", {}), "s", None, False)
        high = await rt.registry.execute(ToolCall("2", "shell", {"command": "date"}), "s", None, False)
    assert low.ok and high.outcome == "denied" and "cannot ask" in high.content


async def test_unanswered_approval_times_out_as_no(tmp_path):
    import asyncio

    async def never(request):
        await asyncio.sleep(60)

    async with open_runtime(tmp_path, security={"approval_timeout_s": 0.1}) as rt:
        result = await rt.registry.execute(ToolCall("1", "shell", {"command": "date"}), "s", never, False)
    assert result.outcome == "denied" and "in time" in result.content


async def test_full_autonomy_runs_high_risk_and_audits_scrubbed_arguments(tmp_path):
    async with open_runtime(tmp_path, security={"autonomy": "full"}) as rt:
        result = await rt.registry.execute(ToolCall("1", "shell", {"command": "echo API_KEY=abc123secret"}), "s", None, False)
        audit = await rt.store.audit_trail()
    assert result.ok
    assert "abc123secret" not in audit[-1].arguments and "abc123secret" not in audit[-1].result
    assert audit[-1].decision == "allowed"


async def test_tool_output_is_capped(tmp_path):
    async with open_runtime(tmp_path, tools={"max_result_chars": 50}) as rt:
        (rt.config.workspace / "big.md").write_text("x" * 500)
        result = await rt.registry.execute(ToolCall("1", "file_read", {"path": "big.md"}), "s", None, False)
    assert result.content.startswith("x" * 50) and "[cut: 450 more characters]" in result.content
