"""SWF reading: header, field fallbacks, skipped and malformed lines, gzip detection, the real KTH trace."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from federation.simulator.swf import MachineShape, SwfError, read_swf, split_nodes

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"

# Line numbers matter: the malformed lines below are lines 13 and 14 of the file.
SYNTHETIC = """\
; Version: 2.2
; Computer: Test SP2
; Information: http://example.org/a
;              http://example.org/b
; UnixStartTime: 843480031
; MaxNodes: 16
; MaxProcs: 64
; Note: first note
; Note: second note
;
    1      0   5   100    8   -1   -1    8    200   -1  1   3   2  -1  1  -1  -1  -1
    2     10  -1    50   -1   -1   -1    4     -1   -1  1   4   2  -1  1  -1  -1  -1
    3     20  -1    50    2   -1   -1    2     60   -1  1   3
    4     30  -1    70    2   -1   -1    2    abc   -1  1   3   2  -1  1  -1  -1  -1
    5     40  -1    -1    2   -1   -1    2     60   -1  5   3   2  -1  1  -1  -1  -1
    6     50  -1    30   -1   -1   -1   -1     60   -1  1   3   2  -1  1  -1  -1  -1
    7     60   0    40    1  3.5   -1    1     60   -1  1   5   1  -1  2   1  -1  -1

    8     70   0    10    2   -1   -1    2     60   -1  1   5   1  -1  2   1  -1  -1
"""


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    path = tmp_path / "trace.swf"
    path.write_text(SYNTHETIC)
    return path


def test_header_keys_continuations_and_repeats(plain: Path) -> None:
    header = read_swf(plain).header
    assert header["MaxProcs"] == "64"
    assert header["UnixStartTime"] == "843480031"
    assert header["Information"] == "http://example.org/a\nhttp://example.org/b"
    assert header["Note"] == "first note\nsecond note"
    assert "http" not in header


def test_jobs_fields_and_fallbacks(plain: Path) -> None:
    trace = read_swf(plain)
    by_id = {j.id: j for j in trace.jobs}
    assert sorted(by_id) == [1, 2, 7, 8]
    one = by_id[1]
    assert (one.submit, one.runtime, one.walltime, one.procs) == (0.0, 100.0, 200.0, 8)
    assert (one.user, one.group, one.trace_wait, one.line_no) == (3, 2, 5.0, 11)
    assert (one.tenant, one.group_queue) == ("user3", "group2")
    two = by_id[2]
    assert two.procs == 4  # allocated is -1: falls back to requested
    assert two.walltime == 50.0  # requested time is -1: falls back to the runtime
    assert (by_id[7].queue, by_id[7].partition) == (2, 1)  # a float field (3.5) does not break a line


def test_skipped_jobs_are_counted_with_reasons(plain: Path) -> None:
    trace = read_swf(plain)
    assert trace.skipped == 2
    assert trace.skip_reasons == {"unknown runtime": 1, "unknown processor count": 1}


def test_malformed_lines_are_reported_with_line_numbers(plain: Path) -> None:
    warnings = read_swf(plain).warnings
    assert [line for line, _ in warnings] == [13, 14]
    assert "expected 18 fields, found 12" in warnings[0][1]
    assert "field 9 (requested_time)" in warnings[1][1] and "'abc'" in warnings[1][1]


def test_strict_mode_raises_on_the_first_malformed_line(plain: Path) -> None:
    with pytest.raises(SwfError, match=r"trace\.swf:13: expected 18 fields") as err:
        read_swf(plain, strict=True)
    assert err.value.line_no == 13


def test_strict_mode_names_the_bad_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.swf"
    path.write_text("1 0 -1 10 2 -1 -1 2 nan -1 1 3 2 -1 1 -1 -1 -1\n")
    with pytest.raises(SwfError, match=r"bad\.swf:1: field 9 \(requested_time\): 'nan'"):
        read_swf(path, strict=True)


def test_gzip_is_detected_by_content_not_name(tmp_path: Path, plain: Path) -> None:
    zipped = tmp_path / "looks-plain.swf"
    zipped.write_bytes(gzip.compress(SYNTHETIC.encode()))
    misnamed = tmp_path / "not-zipped.swf.gz"
    misnamed.write_text(SYNTHETIC)
    expected = read_swf(plain)
    for path in (zipped, misnamed):
        got = read_swf(path)
        assert (got.jobs, got.header, got.warnings, got.skipped) == (
            expected.jobs,
            expected.header,
            expected.warnings,
            expected.skipped,
        )


def test_limit_counts_usable_jobs(plain: Path) -> None:
    assert [j.id for j in read_swf(plain, limit=3).jobs] == [1, 2, 7]


def test_machine_shape_from_header_or_node_override(plain: Path) -> None:
    trace = read_swf(plain)
    assert trace.machine() == MachineShape(nodes=16, cores_per_node=4)  # 64 procs / 16 nodes
    assert trace.machine(nodes=10) == MachineShape(10, 7)  # ceil(64 / 10): never fewer than 64 cores


def test_machine_shape_without_header_uses_the_widest_job(tmp_path: Path) -> None:
    path = tmp_path / "bare.swf"
    path.write_text("1 0 -1 10 6 -1 -1 6 60 -1 1 3 2 -1 1 -1 -1 -1\n2 5 -1 10 3 -1 -1 3 60 -1 1 3 2 -1 1 -1 -1 -1\n")
    assert read_swf(path).machine() == MachineShape(6, 1)  # the waits are unknown (-1): no peak in use


def test_machine_shape_without_header_is_the_most_processors_in_use_at_once(tmp_path: Path) -> None:
    """Worked by hand: A (4 procs) runs 0-10, B (3) runs 5-15, C (2) runs 10-15 (it starts as A ends,
    so they never overlap), D (5, wait unknown) is left out: 7 in use over 5-10, more than the widest
    job (D's 5)."""
    lines = [
        "1 0 0 10 4 -1 -1 4 60 -1 1 3 2 -1 1 -1 -1 -1",
        "2 5 0 10 3 -1 -1 3 60 -1 1 3 2 -1 1 -1 -1 -1",
        "3 8 2 5 2 -1 -1 2 60 -1 1 3 2 -1 1 -1 -1 -1",
        "4 9 -1 10 5 -1 -1 5 60 -1 1 3 2 -1 1 -1 -1 -1",
    ]
    path = tmp_path / "bare.swf"
    path.write_text("\n".join(lines) + "\n")
    trace = read_swf(path)
    assert trace.peak_in_use() == 7
    assert trace.machine() == MachineShape(7, 1)


@pytest.mark.parametrize(
    ("total", "clusters", "expected"),
    [(100, 3, [34, 33, 33]), (10, 2, [5, 5]), (7, 4, [2, 2, 2, 1]), (5, 1, [5])],
)
def test_split_nodes_gives_the_remainder_to_the_first_clusters(total: int, clusters: int, expected: list[int]) -> None:
    assert split_nodes(total, clusters) == expected


@pytest.mark.parametrize(("total", "clusters"), [(3, 4), (10, 0)])
def test_split_nodes_rejects_impossible_splits(total: int, clusters: int) -> None:
    with pytest.raises(ValueError):
        split_nodes(total, clusters)


def test_a_trace_that_cannot_be_read_is_a_clear_error(tmp_path: Path) -> None:
    """A missing file, a directory, and gzip that is cut short or corrupt: each names the file (they were
    tracebacks from the CLI)."""
    whole = gzip.compress(b"1 0 0 10 1 -1 -1 1 10 -1 1 1 1 1 1 1 -1 -1\n" * 200)
    cut, corrupt = tmp_path / "cut.swf.gz", tmp_path / "corrupt.swf.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    corrupt.write_bytes(whole[:20] + bytes(b ^ 0xFF for b in whole[20:40]) + whole[40:])
    for path, why in [
        (tmp_path / "missing.swf", "No such file or directory"),
        (tmp_path, "Is a directory"),
        (cut, "Compressed file ended before the end-of-stream marker was reached"),
        (corrupt, "while decompressing data"),
    ]:
        with pytest.raises(ValueError, match=f"^cannot read {path}: .*{why}"):
            read_swf(path)


@pytest.mark.skipif(not (TRACES / "KTH-SP2-1996-2.1-cln.swf.gz").exists(), reason="shared/traces not present")
def test_real_kth_trace_has_the_documented_job_count() -> None:
    trace = read_swf(TRACES / "KTH-SP2-1996-2.1-cln.swf.gz", strict=True)
    # The archive's header documents the count: "; MaxRecords: 28476" (MaxJobs 28490 before cleaning
    # removed jobs 1-14). One record, job 27313, has -1 for both allocated and requested processors,
    # so 28,475 are usable and 1 is skipped.
    assert trace.header_int("MaxRecords") == 28476
    assert len(trace.jobs) + trace.skipped == 28476
    assert trace.skip_reasons == {"unknown processor count": 1}
    assert trace.warnings == []
    assert trace.machine() == MachineShape(nodes=100, cores_per_node=1)
    assert trace.header_int("UnixStartTime") == 843480031
