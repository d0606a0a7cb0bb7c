# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Unit tests of the fleet report (records, journal, summary, Markdown, HTML, file writing).

CAPTURED_* are real: the ``ansible_facts.gds`` that gpudirect.storage.gds_facts returned on a
host with the CUDA stand-ins (tests/fixtures/cuda_standin), trimmed to the keys the report reads,
and the run journal the gds_report callback wrote during playbooks/verify.yml +
playbooks/report.yml against a fake fleet (one host unreachable, one forced to fail with
gds_verify_require_mode=gds), 2026-11-23, ansible-core 2.19.14.
"""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser

import pytest

from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import fleet as fr
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import markdown
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import html as frh
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import write as frw

CAPTURED_COMPAT_FACTS = {
    "cufile": {"findings": [], "note": "no /etc/cufile.json: libcufile uses its built-in defaults", "valid": True,
               "validator": "ok"},
    "gpus": [{"bar1_total_mib": 131072, "fb_total_mib": 81559, "index": 0, "name": "NVIDIA H100 80GB HBM3",
              "pci_bus_id": "00000000:00:05.0", "uuid": "GPU-5a1d0000-0000-4000-8000-000000000001"}],
    "mode": "compat",
    "nvidia_fs": {"loaded": False, "version": None},
    "probe": {"enabled": True, "ran": True, "size_mb": 16, "threads": 4},
    "proven": True,
    "reason": "nvidia_fs kernel module not loaded (and properties.use_pci_p2pdma is off); ext4 on /dev/vda (virtio "
              "device) is not a GDS-capable device: nvidia-fs serves local ext4/xfs on NVMe/NVMe-oF; cufile.log: "
              "NOTICE running in compatible mode",
    "reasons": ["nvidia_fs kernel module not loaded (and properties.use_pci_p2pdma is off)",
                "ext4 on /dev/vda (virtio device) is not a GDS-capable device: nvidia-fs serves local ext4/xfs on "
                "NVMe/NVMe-oF",
                "cufile.log: NOTICE running in compatible mode"],
    "secure_boot": "unknown",
    "throughput": {"read_gbps": 0.877, "size_mb": 16, "write_gbps": 1.404},
    "verified": True,
    "versions": {"cuda_driver": "13.0", "kernel": "6.18.44-fc-v669", "libcufile": None, "nvidia_driver": "580.159.04",
                 "nvidia_fs": None, "nvidia_kernel_module": None, "ofed": None},
}

CAPTURED_JOURNAL = "\n".join([
    '{"event": "start", "run_id": "d1cb13beff3342eeb9dbf2d7054a60ae", "pid": 4735}',
    '{"event": "playbook", "name": "run.yml"}',
    '{"action": "gpudirect.storage.gds_facts", "event": "unreachable", "host": "unreachable-05", "msg": "Failed to '
    'connect to the host via ssh: Connection timed out during banner exchange", "play": "Verify GPUDirect Storage", '
    '"role": "gpudirect.storage.gds_verify", "task": "Gather GDS facts and prove the data path with a cuFile write '
    'and read"}',
    '{"action": "ansible.builtin.assert", "event": "failed", "host": "require-gds-04", "msg": "require-gds-04: GDS '
    'verdict compat is weaker than the required gds: nvidia_fs kernel module not loaded (and '
    'properties.use_pci_p2pdma is off); ext4 on /dev/vda (virtio device) is not a GDS-capable device: nvidia-fs '
    'serves local ext4/xfs on NVMe/NVMe-oF; cufile.log: NOTICE running in compatible mode", "play": "Verify '
    'GPUDirect Storage", "role": "gpudirect.storage.gds_verify", "task": "Assert the GDS verdict is at least (none)"}',
]) + "\n"

GDS_FACTS = dict(CAPTURED_COMPAT_FACTS, mode="gds", proven=True,
                 reason="nvidia-fs Writes ok +16, Reads ok +16 during the probe (rw_stats_enabled=1)",
                 reasons=["nvidia-fs Writes ok +16, Reads ok +16 during the probe (rw_stats_enabled=1)"],
                 throughput={"write_gbps": 12.3456, "read_gbps": 18.2, "size_mb": 256},
                 versions=dict(CAPTURED_COMPAT_FACTS["versions"], nvidia_fs="2.26.6", libcufile="1.15.1",
                               ofed="25.10-1.7.1", nvidia_kernel_module="open"))
NO_DRIVER = "no NVIDIA driver: the nvidia kernel module is not loaded and /proc/driver/nvidia is missing"
UNAVAILABLE_FACTS = {"mode": "unavailable", "reasons": [NO_DRIVER], "reason": NO_DRIVER,
                     "throughput": {"write_gbps": None, "read_gbps": None, "size_mb": None},
                     "versions": {}, "gpus": [], "verified": False, "proven": False}


def fleet_report(generated="2026-11-23T05:21:30Z"):
    """The report of the captured run, plus a gds host and an unavailable host."""
    facts = {"gpu-standin-01": CAPTURED_COMPAT_FACTS, "require-gds-04": CAPTURED_COMPAT_FACTS,
             "gds-10": GDS_FACTS, "no-libcufile-03": UNAVAILABLE_FACTS}
    journal = fr.fold_journal(fr.parse_journal(CAPTURED_JOURNAL))
    hosts = ["gds-10", "gpu-standin-01", "no-libcufile-03", "require-gds-04", "unreachable-05"]
    return fr.build_report(fr.build_records(hosts, facts, journal), generated=generated)


def by_host(report):
    return dict((r["host"], r) for r in report["hosts"])


# -- records --------------------------------------------------------------------------------------
def test_slim_facts_keeps_what_the_report_reads_and_is_idempotent():
    slim = fr.slim_facts(CAPTURED_COMPAT_FACTS)
    assert slim["gpus"] == ["NVIDIA H100 80GB HBM3"]
    assert slim["throughput"] == CAPTURED_COMPAT_FACTS["throughput"]
    assert slim["cufile"] == {"valid": True, "errors": None, "findings": []}
    assert fr.slim_facts(slim) == slim
    assert fr.slim_facts(None) is None and fr.slim_facts({"no": "mode"}) is None


def test_record_from_real_compat_facts():
    rec = fr.build_record("gpu-standin-01", CAPTURED_COMPAT_FACTS)
    assert rec["status"] == "ok" and rec["mode"] == "compat"
    assert rec["reason"] == CAPTURED_COMPAT_FACTS["reason"]
    assert rec["throughput"] == {"write_gbps": 1.4, "read_gbps": 0.88, "size_mb": 16}
    assert rec["versions"]["nvidia_driver"] == "580.159.04" and rec["versions"]["ofed"] is None
    assert rec["gpus"] == ["NVIDIA H100 80GB HBM3"]
    assert rec["failed_checks"] == [] and rec["failure"] is None and rec["verified"] is True


def test_unreachable_host_from_the_real_journal_has_the_ssh_error_and_the_task():
    rec = by_host(fleet_report())["unreachable-05"]
    assert rec["status"] == "unreachable" and rec["mode"] == "unknown"
    assert rec["reason"].startswith("unreachable during Gather GDS facts and prove the data path")
    assert "Failed to connect to the host via ssh: Connection timed out during banner exchange" in rec["reason"]
    assert rec["failure"]["role"] == "gpudirect.storage.gds_verify"
    assert rec["failed_checks"][0]["detail"].startswith("unreachable: Failed to connect")


def test_failed_host_keeps_its_facts_and_the_failing_assertion_without_repeating_the_verdict():
    rec = by_host(fleet_report())["require-gds-04"]
    assert rec["status"] == "failed" and rec["mode"] == "compat"
    assert rec["reason"].startswith("failed at Assert the GDS verdict is at least (none) (role gpudirect.storage."
                                    "gds_verify): require-gds-04: GDS verdict compat is weaker than the required gds")
    assert rec["reason"].count("nvidia_fs kernel module not loaded") == 1
    assert rec["throughput"]["write_gbps"] == 1.4
    assert rec["failed_checks"] == [{"check": "task: Assert the GDS verdict is at least (none)",
                                     "detail": rec["failure"]["msg"]}]


def test_host_without_facts_or_journal_is_unknown_and_says_how_to_learn_why():
    rec = fr.build_records(["quiet-01"], {}, {}, journal_enabled=False)[0]
    assert rec["status"] == "unknown" and rec["mode"] == "unknown"
    assert "enable the gpudirect.storage.gds_report callback" in rec["reason"]
    assert "callback" not in fr.build_record("quiet-01", None, None, journal_enabled=True)["reason"]


def test_hosts_only_in_the_journal_are_added_and_order_is_natural():
    journal = fr.fold_journal([fr.journal_event("unreachable", "gpu-10", {"task": "Gathering Facts"},
                                                {"msg": "No route to host", "unreachable": True})])
    names = [r["host"] for r in fr.build_records(["gpu-2", "gpu-1", "gpu-2"], {}, journal)]
    assert names == ["gpu-1", "gpu-2", "gpu-10"]


@pytest.mark.parametrize("result, expected", [
    ({"msg": "Task failed: Failed to connect to the host via ssh: No route to host"},
     "Failed to connect to the host via ssh: No route to host"),
    ({"msg": "non-zero return code", "rc": 2, "stderr": "E: Unable to locate package nvidia-fs-dkms"},
     "non-zero return code | stderr: E: Unable to locate package nvidia-fs-dkms"),
    ({"rc": 3}, "rc=3"),
    ({"results": [{"failed": False}, {"failed": True, "msg": "item two broke"}]}, "item two broke"),
    ({}, "failed without a message"),
    ("plain text\nover lines", "plain text over lines"),
])
def test_failure_message(result, expected):
    assert fr.failure_message(result) == expected


def test_failure_message_is_one_bounded_line():
    text = fr.failure_message({"msg": "x" * 5000})
    assert len(text) == fr.MSG_LIMIT and text.endswith("...")


def test_journal_failed_event_carries_the_facts_of_a_failed_gds_facts_task():
    result = {"failed": True, "msg": "GDS verdict is compat, weaker than require_mode=gds: ...",
              "ansible_facts": {"gds": CAPTURED_COMPAT_FACTS}}
    event = fr.journal_event("failed", "n1", {"task": "Gate", "role": None}, result)
    assert "role" not in event and event["facts"]["mode"] == "compat"
    rec = fr.build_record("n1", None, fr.fold_journal(fr.parse_journal(json.dumps(event)))["n1"])
    assert rec["mode"] == "compat" and rec["status"] == "failed" and rec["throughput"]["read_gbps"] == 0.88


def test_fold_journal_rescue_unreachable_and_noise():
    events = fr.parse_journal("\n".join([
        "not json", "[1, 2]", "", json.dumps({"event": "start", "run_id": "r"}),
        json.dumps(fr.journal_event("failed", "a", {"task": "t1"}, {"msg": "boom"})),
        json.dumps(fr.journal_event("recovered", "a", {"task": "t2"})),
        json.dumps(fr.journal_event("unreachable", "b", {"task": "t1"}, {"msg": "gone"})),
        json.dumps(fr.journal_event("failed", "b", {"task": "t2"}, {"msg": "later"})),
    ]))
    assert len(events) == 5
    state = fr.fold_journal(events)
    assert state["a"]["status"] is None and state["a"]["recovered"] and len(state["a"]["failures"]) == 1
    assert state["b"]["status"] == "unreachable" and state["b"]["failure"]["msg"] == "gone"
    rec = fr.build_record("a", CAPTURED_COMPAT_FACTS, state["a"])
    assert rec["status"] == "ok" and rec["recovered"] and rec["failed_checks"][0]["detail"] == "boom"


def test_invalid_cufile_json_is_a_failed_check_with_the_validator_message():
    pytest.importorskip("jsonschema")  # the controller-side validator the gds_facts action uses
    from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.validate import lint_text
    result = lint_text('{"properties": {"max_direct_io_size_kb": "lots"}}', source="/etc/cufile.json")
    assert not result.ok
    facts = dict(CAPTURED_COMPAT_FACTS, cufile={"valid": False, "errors": len(result.errors),
                                                "findings": [f.as_dict() for f in result.findings]})
    checks = fr.build_record("n", facts)["failed_checks"]
    assert checks[0]["check"] == "cufile.json is valid"
    assert checks[0]["detail"].startswith("%d error(s): properties.max_direct_io_size_kb" % len(result.errors))


def test_require_mode_probe_failure_and_pending_reboot_are_failed_checks():
    facts = dict(CAPTURED_COMPAT_FACTS, mode="failed", reason="cuFileHandleRegister failed: CU_FILE_HANDLE_NOT_"
                 "REGISTERED (5027)", require_mode={"mode": "gds", "met": False})
    rec = fr.build_record("n", facts, reboot_pending="mofed installed new RDMA kernel modules")
    assert [c["check"] for c in rec["failed_checks"]] == ["verdict meets require_mode=gds", "cuFile probe", "reboot"]
    assert rec["reboot_pending"] == "mofed installed new RDMA kernel modules"


def test_summary_counts_by_mode_and_status():
    s = fleet_report()["summary"]
    assert s["hosts"] == 5 and s["gds_ready"] == 1
    assert s["by_mode"] == {"gds": 1, "p2pdma": 0, "compat": 2, "unavailable": 1, "failed": 0, "unknown": 1}
    assert s["by_status"] == {"ok": 3, "failed": 1, "unreachable": 1, "unknown": 0}
    assert s["not_gds"] == ["gpu-standin-01", "no-libcufile-03", "require-gds-04", "unreachable-05"]
    assert s["probed"] == 3 and s["max_gbps"] == 18.2


def test_ready_counts_only_verified_hosts_that_meet_the_gds_gate():
    inferred = dict(GDS_FACTS, verified=False, proven=False, probe={"enabled": False, "ran": False})
    unproven = dict(GDS_FACTS, proven=False)
    opted_out = dict(GDS_FACTS, proven=False, require_mode={"mode": "gds", "proven": False, "met": True})
    facts = {"gds-1": GDS_FACTS, "inferred-2": inferred, "unproven-3": unproven, "opted-out-4": opted_out}
    records = fr.build_records(sorted(facts), facts)
    ready = dict((r["host"], r["ready"]) for r in records)
    assert ready == {"gds-1": True, "inferred-2": False, "unproven-3": False, "opted-out-4": True}
    s = fr.summarize(records)
    assert s["gds_ready"] == 2 and s["not_gds"] == ["inferred-2", "unproven-3"]


def test_same_report_ignores_the_generation_time_not_the_playbooks_of_the_run():
    assert fr.same_report(fleet_report("t1"), fleet_report("t2"))
    assert not fr.same_report(fleet_report("t1"), dict(fleet_report("t2"), run={"playbooks": ["x.yml"]}))
    changed = fleet_report()
    changed["hosts"][0]["mode"] = "compat"
    assert not fr.same_report(fleet_report(), changed)
    assert not fr.same_report(None, fleet_report())


# -- Markdown --------------------------------------------------------------------------------------
def test_markdown_table_one_row_per_host_with_reasons_for_non_gds_only():
    report = fleet_report()
    report["hosts"][0]["reason"] = "a | pipe"  # gds host: its reason is not shown
    md = markdown.render_markdown(report)
    rows = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith(("| host", "| ---"))]
    assert [r.split(" | ")[0][2:] for r in rows] == [r["host"] for r in report["hosts"]]
    # storage, GPU/storage and throughput-mode cells are "-": these facts predate them
    assert rows[0] == "| gds-10 | ssh | ok | gds | 12.35 | 18.20 | - | - | - | 580.95.05 (open) | 2.26.6 | 1.15.1 | 25.10-1.7.1 | - |" \
        .replace("580.95.05", "580.159.04")
    assert "unreachable during Gather GDS facts" in rows[-1]
    assert "5 hosts, 1 ready for GDS. Modes: gds 1, compat 2, unavailable 1, unknown 1." in md


def test_markdown_escapes_table_syntax():
    rec = fr.build_record("h|1", None, {"status": "failed", "failure": {"task": "t", "msg": "a|b <x>", "kind": "failed"}})
    md = markdown.render_markdown(fr.build_report([rec]))
    assert "| h\\|1 |" in md and "a\\|b &lt;x>" in md


# -- HTML ------------------------------------------------------------------------------------------
class Page(HTMLParser):
    """Collects the table rows, the SVG bars, the reasons list, scripts and links of the page."""

    def __init__(self):
        HTMLParser.__init__(self)
        self.rows, self.bars, self.reasons, self.urls, self.scripts = [], [], [], [], 0
        self._in_reason = None
        self.reason_text = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-host" in a:
            self.rows.append(a)
        if tag == "rect" and a.get("class") == "bar":
            self.bars.append(a)
        if tag == "li" and (a.get("id") or "").startswith("reason-"):
            self.reasons.append(a["data-host"])
            self._in_reason = a["data-host"]
            self.reason_text[self._in_reason] = ""
        if tag == "script":
            self.scripts += 1
        for key in ("src", "href"):
            if a.get(key):
                self.urls.append(a[key])

    def handle_data(self, data):
        if self._in_reason:
            self.reason_text[self._in_reason] += data

    def handle_endtag(self, tag):
        if tag == "li":  # the reason text comes before the nested list of failed checks
            self._in_reason = None


def parse_page(report):
    page = Page()
    page.feed(frh.render_html(report))
    return page


def test_html_has_one_row_per_host_the_svg_bars_and_every_reason():
    report = fleet_report()
    page = parse_page(report)
    assert [r["data-host"] for r in page.rows] == [r["host"] for r in report["hosts"]]
    assert sorted((b["data-host"], b["data-kind"]) for b in page.bars) == sorted(
        (h, k) for h in ("gds-10", "gpu-standin-01", "require-gds-04") for k in ("write", "read"))
    assert page.reasons == ["gpu-standin-01", "no-libcufile-03", "require-gds-04", "unreachable-05"]
    assert "Connection timed out during banner exchange" in page.reason_text["unreachable-05"]
    assert "weaker than the required gds" in page.reason_text["require-gds-04"]
    text = frh.render_html(report)
    assert text.count("Connection timed out during banner exchange") == 3  # sort value, cell, reasons (no repeat)


def test_html_lists_failed_checks_the_reason_does_not_already_say():
    facts = dict(CAPTURED_COMPAT_FACTS, require_mode={"mode": "gds", "met": False})
    rec = fr.build_record("n", facts, {"status": "failed", "failures": [{"task": "t", "msg": "boom", "kind": "failed"}],
                                       "failure": {"task": "t", "msg": "boom", "kind": "failed"}})
    page = parse_page(fr.build_report([rec]))
    assert page.reason_text["n"].endswith("verdict meets require_mode=gds: verdict is compat")
    assert "task: t: boom" not in frh.render_html(fr.build_report([rec]))


def test_html_bars_are_scaled_to_the_fastest_host():
    page = parse_page(fleet_report())
    widths = dict(((b["data-host"], b["data-kind"]), float(b["width"])) for b in page.bars)
    assert widths[("gds-10", "read")] > widths[("gds-10", "write")] > widths[("gpu-standin-01", "write")]
    assert widths[("gds-10", "read")] <= 900 - 180 - 60


def test_html_is_self_contained_and_escapes_host_data():
    rec = fr.build_record('<img src=x onerror="alert(1)">', None,
                          {"status": "failed", "failure": {"task": "<script>", "msg": "</td><b>", "kind": "failed"}})
    text = frh.render_html(fr.build_report([rec]))
    page = Page()
    page.feed(text)
    assert page.urls == [] and page.scripts == 1
    assert "<img src=x" not in text and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in text
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text)


def test_html_without_probe_says_so_instead_of_an_empty_chart():
    text = frh.render_html(fr.build_report([fr.build_record("n", UNAVAILABLE_FACTS)]))
    assert 'id="chart-empty"' in text and "<svg" not in text


def test_html_long_reasons_are_cut_in_the_table_but_whole_below_it():
    rec = fr.build_record("n", dict(UNAVAILABLE_FACTS, reasons=["why " * 90]))
    text = frh.render_html(fr.build_report([rec]))
    # whole: the cell's sort value and tooltip, and the reasons section; cut: the cell's text
    assert text.count(("why " * 90).strip()) == 3
    assert "&hellip;</span>" in text


@pytest.mark.parametrize("top, expected", [(0, [0, 1]), (2.88, [0, 0.5, 1, 1.5, 2, 2.5, 3]),
                                           (18.2, [0, 5, 10, 15, 20]), (0.3, [0, 0.1, 0.2, 0.3])])
def test_chart_ticks(top, expected):
    assert frh._ticks(top) == expected


# -- writing ---------------------------------------------------------------------------------------
def test_write_report_then_unchanged_then_changed(tmp_path):
    dest = str(tmp_path / "reports")
    first = frw.write_report(dest, fleet_report("2026-11-23T05:00:00Z"))
    assert first["changed"] and sorted(os.listdir(dest)) == ["gds-fleet.html", "gds-fleet.json", "gds-fleet.md"]
    saved = json.load(open(first["files"]["json"]))
    assert saved["schema"] == fr.SCHEMA and len(saved["hosts"]) == 5
    again = frw.write_report(dest, fleet_report("2026-11-23T06:00:00Z"))
    assert not again["changed"]
    assert json.load(open(first["files"]["json"]))["generated"] == "2026-11-23T05:00:00Z"
    report = fleet_report()
    report["hosts"][1]["status"] = "failed"
    assert frw.write_report(dest, report, check_mode=True)["changed"]
    assert json.load(open(first["files"]["json"]))["hosts"][1]["status"] == "ok"  # check mode wrote nothing
    third = frw.write_report(dest, report)
    assert third["changed"] and third["diff"]["before"] != third["diff"]["after"]
    assert sorted(os.listdir(dest)) == ["gds-fleet.html", "gds-fleet.json", "gds-fleet.md"]  # no temp files left


def test_write_report_missing_file_or_broken_json_counts_as_changed(tmp_path):
    dest = str(tmp_path)
    frw.write_report(dest, fleet_report())
    os.unlink(os.path.join(dest, "gds-fleet.html"))
    assert frw.write_report(dest, fleet_report())["changed"]
    with open(os.path.join(dest, "gds-fleet.json"), "w") as f:
        f.write("{broken")
    assert frw.write_report(dest, fleet_report())["changed"]
    assert frw.write_report(str(tmp_path / "json-only"), fleet_report(), formats=["json"])["files"].keys() == {"json"}


def test_write_report_check_mode_creates_nothing(tmp_path):
    res = frw.write_report(str(tmp_path / "new"), fleet_report(), check_mode=True)
    assert res["changed"] and not os.path.exists(str(tmp_path / "new"))


def modes(dest):
    return dict((name, os.stat(os.path.join(dest, name)).st_mode & 0o777) for name in [""] + os.listdir(dest))


def test_report_files_are_the_owners_alone(tmp_path):
    dest = str(tmp_path / "new" / "reports")
    frw.write_report(dest, fleet_report())
    assert modes(dest) == {"": 0o700, "gds-fleet.json": 0o600, "gds-fleet.md": 0o600, "gds-fleet.html": 0o600}


def test_a_report_directory_of_ours_that_others_may_read_is_made_private_but_not_in_check_mode(tmp_path):
    dest = str(tmp_path / "reports")
    os.mkdir(dest)
    os.chmod(dest, 0o755)
    frw.write_report(dest, fleet_report(), check_mode=True)
    assert modes(dest) == {"": 0o755}
    frw.write_report(dest, fleet_report())
    assert modes(dest)[""] == 0o700


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o775])
def test_a_report_directory_others_may_write_is_refused_and_nothing_written(tmp_path, mode):
    dest = str(tmp_path / "shared")
    os.mkdir(dest)
    os.chmod(dest, mode)
    with pytest.raises(OSError, match=r"report directory %s \(owner uid \d+, mode %04o\) may be changed by another "
                                      r"user" % (re.escape(dest), mode)):
        frw.write_report(dest, fleet_report())
    assert os.listdir(dest) == []


def test_a_link_in_the_report_directory_is_neither_read_into_the_diff_nor_written_through(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("root:$6$hash:19000::::::\n")
    dest = tmp_path / "reports"
    dest.mkdir(mode=0o700)
    (dest / "gds-fleet.md").symlink_to(secret)
    res = frw.write_report(str(dest), fleet_report())
    assert "$6$hash" not in res["diff"]["before"]
    assert secret.read_text() == "root:$6$hash:19000::::::\n"
    assert not (dest / "gds-fleet.md").is_symlink()


def test_failure_messages_keep_no_credentials():
    result = {"msg": "non-zero return code", "rc": 1,
              "stderr": "curl https://admin:S3cret@registry.example -H 'Authorization: Bearer abc.def' --password=Pw1"}
    msg = fr.failure_message(result)
    assert "S3cret" not in msg and "abc.def" not in msg and "Pw1" not in msg
    assert msg.startswith("non-zero return code | stderr: curl https://admin:********@registry.example")
    loop = {"results": [{"failed": True, "stderr": "token=ghp_0123456789 refused"}]}
    assert fr.failure_message(loop) == "token=******** refused"
    node = {"name": "gpu-1", "failure": {"message": "pull failed: nvapi-0123456789abcdef"}}
    assert "0123456789abcdef" not in fr.k8s_record(node)["reason"]


# -- Kubernetes nodes (gds_node_probe) --------------------------------------------------------------
def test_k8s_nodes_sit_next_to_ssh_hosts_with_their_source():
    probed = {"name": "gpu-a", "mode": "compat", "reason": "nvidia_fs kernel module not loaded", "verified": True,
              "proven": True, "throughput": {"write_gbps": 1.5, "read_gbps": 2.5, "size_mb": 64},
              "versions": {"libcufile": "1.15.1"}, "gpus": [{"name": "NVIDIA H100"}], "pod": "gds-probe-gpu-a-1",
              "failure": None, "source": "kubernetes"}
    pending = {"name": "gpu-b", "mode": "failed", "reason": "probe pod p: Pending for 60s: Unschedulable: 0/3 nodes "
               "are available: 1 Insufficient nvidia.com/gpu.", "pod": "p", "source": "kubernetes",
               "failure": {"kind": "unschedulable", "message": "Pending for 60s: Unschedulable: 0/3 nodes are "
                                                               "available: 1 Insufficient nvidia.com/gpu."}}
    records = fr.build_records(["gpu-a"], {"gpu-a": CAPTURED_COMPAT_FACTS}, k8s_nodes=[pending, probed])
    want = [("gpu-a", "kubernetes"), ("gpu-a", "ssh"), ("gpu-b", "kubernetes")]
    assert [(r["host"], r["source"]) for r in records] == want
    node = records[0]
    assert node["mode"] == "compat" and node["status"] == "ok" and node["pod"] == "gds-probe-gpu-a-1"
    assert node["throughput"]["write_gbps"] == 1.5 and node["versions"]["libcufile"] == "1.15.1"
    failed = records[2]
    assert failed["status"] == "failed" and failed["mode"] == "failed"
    assert "Insufficient nvidia.com/gpu" in failed["reason"]
    md = markdown.render_markdown(fr.build_report(records))
    assert "| gpu-b | kubernetes | failed | failed |" in md and "| gpu-a | ssh | ok | compat |" in md


def test_html_shows_the_source_and_probe_pod():
    node = {"name": "gpu-a", "mode": "compat", "reason": "r", "pod": "gds-probe-gpu-a-1", "failure": None,
            "source": "kubernetes"}
    page = frh.render_html(fr.build_report(fr.build_records(["ssh-1"], {"ssh-1": CAPTURED_COMPAT_FACTS},
                                                            k8s_nodes=[node])))
    assert '<th data-key="source"' in page
    assert 'data-key="source" data-v="kubernetes"' in page and "gds-probe-gpu-a-1" in page
    assert 'data-key="source" data-v="ssh"' in page


VOLUME_NODE = {"name": "gpu-a", "mode": "compat", "reason": "nvidia_fs kernel module not loaded", "verified": True,
               "proven": True, "throughput": {"write_gbps": 1.5, "read_gbps": 2.5, "size_mb": 64},
               "pod": "gds-probe-gpu-a-1", "failure": None, "source": "kubernetes",
               "volume": {"storage_class": "nvme-gds", "claim": "gds-probe-gpu-a-1", "pv": "nvme-gds-gpu-a-1f2e3d",
                          "path": "/mnt/nvme0", "mount_path": "/gds-volume", "released": True}}


def test_the_report_names_the_pv_a_node_was_proven_through():
    rec = fr.k8s_record(VOLUME_NODE)
    assert rec["volume"] == "PV nvme-gds-gpu-a-1f2e3d (/mnt/nvme0, StorageClass nvme-gds)"
    report = fr.build_report(fr.build_records([], {}, k8s_nodes=[VOLUME_NODE]))
    assert "| gpu-a | kubernetes via PV nvme-gds-gpu-a-1f2e3d (/mnt/nvme0, StorageClass nvme-gds) | ok | compat |" \
        in markdown.render_markdown(report)
    assert "PV nvme-gds-gpu-a-1f2e3d (/mnt/nvme0, StorageClass nvme-gds)" in frh.render_html(report)


def test_a_hostpath_probe_has_no_volume():
    assert fr.k8s_record(dict(VOLUME_NODE, volume=None))["volume"] is None


@pytest.mark.parametrize("dest, playbooks, env, expected", [
    (None, ["/srv/gds/playbooks/verify.yml"], {}, "/srv/gds/reports"),
    (None, ["/srv/ops/site.yml", "/srv/ops/playbooks/other.yml"], {}, "/srv/ops/reports"),
    (None, ["/srv/gds/playbooks/verify.yml"], {"GDS_REPORT_DIR": "/var/reports"}, "/var/reports"),
    (None, ["/srv/gds/playbooks/verify.yml"], {"GDS_REPORT_DIR": "out"}, "/srv/gds/out"),
    ("", ["/srv/gds/playbooks/verify.yml"], {"GDS_REPORT_DIR": ""}, "/srv/gds/reports"),
    ("custom", ["/srv/ops/site.yml"], {"GDS_REPORT_DIR": "/ignored"}, "/srv/ops/custom"),
    ("/abs", ["/srv/ops/site.yml"], {}, "/abs"),
    (None, ["gpudirect.storage.verify"], {"HOME": "/home/u"}, "/home/u/.ansible/gds-reports"),
    (None, [], {"HOME": "/home/u"}, "/home/u/.ansible/gds-reports"),
])
def test_report_dir_never_depends_on_the_current_directory(dest, playbooks, env, expected, tmp_path, monkeypatch):
    monkeypatch.chdir(str(tmp_path))
    assert frw.report_dir(dest, playbooks, env) == expected


def test_each_inventory_has_its_own_report_directory_beside_it(tmp_path, monkeypatch):
    monkeypatch.chdir(str(tmp_path))
    (tmp_path / "inventories" / "prod").mkdir(parents=True)
    (tmp_path / "inventories" / "lab").mkdir(parents=True)
    (tmp_path / "fleet").mkdir()
    (tmp_path / "fleet" / "hosts.yml").write_text("all: {}\n")
    env = {"HOME": "/home/u"}
    for playbooks in (["gpudirect.storage.verify"], ["/srv/gds/playbooks/site.yml"]):
        assert frw.report_dir(None, playbooks, env, [str(tmp_path / "inventories" / "prod")]) == \
            str(tmp_path / "inventories" / "reports" / "prod")
        assert frw.report_dir(None, playbooks, env, [str(tmp_path / "inventories" / "lab"), "other,"]) == \
            str(tmp_path / "inventories" / "reports" / "lab")
        assert frw.report_dir(None, playbooks, env, [str(tmp_path / "fleet" / "hosts.yml")]) == \
            str(tmp_path / "fleet" / "reports" / "hosts")
    inventory = [str(tmp_path / "inventories" / "prod")]
    assert frw.report_dir("custom", [], env, inventory) == str(tmp_path / "inventories" / "custom")
    assert frw.report_dir(None, [], {"GDS_REPORT_DIR": "/var/reports"}, inventory) == "/var/reports"
    # no inventory on disk (a host list): the project directory, or ~/.ansible/gds-reports
    assert frw.report_dir(None, ["gpudirect.storage.verify"], env, ["localhost,"]) == "/home/u/.ansible/gds-reports"
    assert frw.report_dir(None, ["/srv/gds/playbooks/verify.yml"], env, ["localhost,"]) == "/srv/gds/reports"


def test_an_unmet_requirement_of_an_inferred_verdict_says_nothing_was_written():
    facts = dict(GDS_FACTS, verified=False, proven=False, probe={"enabled": False, "ran": False},
                 require_mode={"mode": "gds", "proven": True, "met": False})
    rec = fr.build_record("n", facts)
    check = next(c for c in rec["failed_checks"] if c["check"] == "verdict meets require_mode=gds")
    assert check["detail"] == "verdict is gds, not verified (nothing was written, read back and compared)"
    assert rec["ready"] is False


def test_fallback_report_of_a_run_that_ended_before_its_report_play():
    journal = "\n".join(json.dumps(e) for e in (
        {"event": "start", "run_id": "r1"},
        fr.journal_event("failed", "gpu-2", {"play": "Roll out", "task": "nvidia-fs"}, {"msg": "dkms build failed"})))
    report = fr.fallback_report(journal, ["localhost", "gpu-1", "gpu-2"], {"gpu-1": {"mode": "gds", "reason": "ok"}},
                                "Roll out", ["gpu-1", "gpu-2", "gpu-3"], {"gpu-1"}, ["site.yml"], "2026-01-01T00:00:00Z")
    by_host = dict((r["host"], r) for r in report["hosts"])
    assert sorted(by_host) == ["gpu-1", "gpu-2", "gpu-3"]
    assert by_host["gpu-1"]["mode"] == "gds" and by_host["gpu-2"]["status"] == "failed"
    assert by_host["gpu-3"]["reason"].startswith("not reached") and by_host["gpu-3"]["status"] == "unknown"
    assert report["run"] == {"playbooks": ["site.yml"], "journal": True, "writer": "callback fallback"}
    assert report["generated"] == "2026-01-01T00:00:00Z" and "ended before its report play" in report["title"]


# -- the storage's speed, how much of it reaches the GPU, the throughput mode ----------------------
THROUGHPUT_21 = {"write_gbps": 3.504, "read_gbps": 5.341, "size_mb": 256, "storage_write_gbps": 3.9,
                 "storage_read_gbps": 5.62, "write_ratio": 0.898, "read_ratio": 0.95,
                 "tuned": {"write_gbps": 3.81, "read_gbps": 6.93, "write_plan": "4x 4 MiB", "read_plan": "8x 4 MiB",
                           "storage_write_gbps": 4.0, "storage_read_gbps": 7.1, "write_ratio": 0.953,
                           "read_ratio": 0.976, "verified": True, "error": None}}


def test_record_carries_the_storage_ratio_and_the_throughput_mode():
    rec = fr.build_record("h", dict(CAPTURED_COMPAT_FACTS, throughput=THROUGHPUT_21))
    assert rec["throughput"] == {"write_gbps": 3.5, "read_gbps": 5.34, "size_mb": 256}  # the default probe
    assert rec["storage"] == {"write_gbps": 3.9, "read_gbps": 5.62, "write_ratio": 0.9, "read_ratio": 0.95}
    assert rec["tuned"] == {"write_gbps": 3.81, "read_gbps": 6.93, "write_plan": "4x 4 MiB", "read_plan": "8x 4 MiB"}
    slim = fr.slim_facts(dict(CAPTURED_COMPAT_FACTS, throughput=THROUGHPUT_21))
    assert fr.build_record("h", slim) == rec  # the run journal keeps what the record needs


def test_record_without_storage_figures_or_with_a_failed_throughput_mode():
    rec = fr.build_record("h", CAPTURED_COMPAT_FACTS)
    assert rec["storage"] == {"write_gbps": None, "read_gbps": None, "write_ratio": None, "read_ratio": None}
    assert rec["tuned"] is None
    failed = dict(THROUGHPUT_21, tuned=dict(THROUGHPUT_21["tuned"], error={"step": "tune", "message": "x"}))
    assert fr.build_record("h", dict(CAPTURED_COMPAT_FACTS, throughput=failed))["tuned"] is None
    assert fr.ratio_text(rec["storage"]) == "-" and fr.pair_text(None) == "-"
    assert fr.ratio_text({"write_ratio": 0.9, "read_ratio": None}) == "0.90 / -"


def test_markdown_and_html_show_the_storage_ratio_and_the_throughput_mode():
    rec = fr.build_record("tput-1", dict(CAPTURED_COMPAT_FACTS, throughput=THROUGHPUT_21))
    report = fr.build_report([rec])
    md = markdown.render_markdown(report)
    assert "| storage GB/s w / r | GPU/storage w / r | throughput mode GB/s w / r |" in md
    row = [line for line in md.splitlines() if line.startswith("| tput-1 |")][0]
    assert "| 3.50 | 5.34 | 3.90 / 5.62 | 0.90 / 0.95 | 3.81 / 6.93 |" in row
    assert md.rstrip().endswith(fr.RATIO_NOTE) and "1 or above: the storage is the limit" in fr.RATIO_NOTE
    assert fr.RATIO_NOTE not in markdown.render_markdown(fr.build_report([fr.build_record("old", CAPTURED_COMPAT_FACTS)]))
    text = frh.render_html(report)
    assert '<th data-key="storage_ratio" data-type="num" scope="col">GPU/storage w / r</th>' in text
    assert 'data-key="storage_ratio" data-v="0.95"' in text and "3.90 / 5.62 GB/s write / read" in text
    assert 'data-key="tuned" data-v="6.93"' in text and 'title="plans: write 4x 4 MiB, read 8x 4 MiB"' in text
    page = parse_page(report)
    assert [r["data-host"] for r in page.rows] == ["tput-1"]
