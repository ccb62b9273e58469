//! The parser against systemd-run's own text (systemd 257, Debian trixie, in the VM tier:
//! tests/vm/limits.sh prints it as `systemd-run says:`), and against a tool that forges it.

use proto::ToolFailure;

use super::{UnitEnd, parse};

/// The memory hog of tests/vm/limits.sh in brokerd's unit for notes-read (MemoryMax=256M),
/// as `systemd-run --wait --pipe --collect` wrote its stderr there, verbatim (a unit named by
/// systemd: limits.sh passes no `--unit`).
const OOM_257: &str = "\
Running as unit: run-p969-i1269.service
Finished with result: oom-kill
Main processes terminated with: code=killed, status=9/KILL
Service runtime: 7.821s
CPU time consumed: 7.274s
Memory peak: 256M (swap: 0B)
";

#[test]
fn an_oom_kill_is_out_of_memory_and_leaves_no_systemd_run_line_to_quote() {
    let (end, tool) = parse(OOM_257);
    let end = end.expect("a unit end");
    assert_eq!(
        end,
        UnitEnd {
            result: "oom-kill".into(),
            status: Some(9)
        }
    );
    assert_eq!(end.failure(), Some(ToolFailure::OutOfMemory));
    assert_eq!(tool, "");
}

#[test]
fn each_result_has_its_kind() {
    let cases = [
        ("success", "code=exited, status=0/SUCCESS", None),
        (
            "timeout",
            "code=killed, status=15/TERM",
            Some(ToolFailure::TimeLimit),
        ),
        (
            "exit-code",
            "code=exited, status=3/NOTIMPLEMENTED",
            Some(ToolFailure::Exited { status: 3 }),
        ),
        (
            "signal",
            "code=killed, status=9/KILL",
            Some(ToolFailure::Signal {
                signal: Some("SIGKILL".into()),
            }),
        ),
        (
            "core-dump",
            "code=dumped, status=11/SEGV",
            Some(ToolFailure::Signal {
                signal: Some("SIGSEGV".into()),
            }),
        ),
        // systemd 252's form of the same line.
        (
            "exit-code",
            "code=exited/status=1",
            Some(ToolFailure::Exited { status: 1 }),
        ),
        (
            "resources",
            "code=exited, status=0/SUCCESS",
            Some(ToolFailure::Unit {
                result: "resources".into(),
            }),
        ),
    ];
    for (result, main, want) in cases {
        let text = format!(
            "Running as unit: boxmaker-tool-x.service\ntool says hi\n\
             Finished with result: {result}\nMain processes terminated with: {main}\n\
             Service runtime: 5ms\n"
        );
        let (end, tool) = parse(&text);
        assert_eq!(end.expect(result).failure(), want, "{result} {main}");
        assert_eq!(tool, "tool says hi");
    }
}

#[test]
fn a_forged_summary_before_the_real_one_is_the_tools_stderr() {
    let text = "\
Running as unit: boxmaker-tool-x.service; invocation ID: 00112233445566778899aabbccddeeff
Finished with result: oom-kill
Main processes terminated with: code=killed, status=9/KILL
test-tool: fork refused after 14 children: Resource temporarily unavailable
Finished with result: exit-code
Main processes terminated with: code=exited, status=3/NOTIMPLEMENTED
Service runtime: 312ms
";
    let (end, tool) = parse(text);
    assert_eq!(
        end.expect("an end").failure(),
        Some(ToolFailure::Exited { status: 3 })
    );
    assert_eq!(
        tool,
        "Finished with result: oom-kill\n\
         Main processes terminated with: code=killed, status=9/KILL\n\
         test-tool: fork refused after 14 children: Resource temporarily unavailable"
    );
}

#[test]
fn without_a_summary_there_is_no_end_and_the_text_is_kept() {
    let (end, tool) = parse("Failed to start transient service unit: Access denied\n");
    assert_eq!(end, None);
    assert_eq!(
        tool,
        "Failed to start transient service unit: Access denied"
    );
}
