"""The GDS fleet report from a real run, opened in headless Chromium (Debian's chromium package).

A small fake fleet on this machine: hosts with ``ansible_connection=local`` whose gds_facts probe
runs against the CUDA stand-ins (tests/fixtures/cuda_standin: libcuda/libnvidia-ml on
LD_LIBRARY_PATH, libcufile per host through gds_verify_cufile_lib), one host without libcufile
(verdict unavailable), one forced to fail (gds_verify_require_mode=gds), and one unreachable
address in the lab range that no lab uses (10.77.250.250). playbooks/verify.yml and
playbooks/report.yml run with the gds_report callback; Chromium loads the real HTML, the
test checks the DOM it built, and the screenshot becomes docs/images/gds-fleet-report.png.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from conftest import ROOT, VENV_BIN, run

sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures", "cuda_standin"))
import standin  # noqa: E402  (the stand-in builder of the gds_facts tests)

CHROMIUM = shutil.which("chromium")
UNREACHABLE = "10.77.250.250"
SCREENSHOT = os.path.join(ROOT, "docs", "images", "gds-fleet-report.png")
HOSTS = ["gpu-standin-01", "gpu-standin-02", "no-libcufile-03", "require-gds-04", "unreachable-05"]

pytestmark = pytest.mark.skipif(not CHROMIUM or not standin.gcc(), reason="needs chromium and gcc")


def inventory(tmp, libs):
    py = os.path.join(VENV_BIN, "python")
    cufile = os.path.join(libs, "cufile", "libcufile.so.0")
    local = {"ansible_connection": "local", "ansible_python_interpreter": py}
    hosts = {
        "gpu-standin-01": dict(local, gds_verify_cufile_lib=cufile),
        "gpu-standin-02": dict(local, gds_verify_cufile_lib=cufile, gds_verify_probe_threads=1),
        "no-libcufile-03": dict(local),
        "require-gds-04": dict(local, gds_verify_cufile_lib=cufile, gds_verify_require_mode="gds"),
        "unreachable-05": {"ansible_host": UNREACHABLE, "ansible_connection": "ssh", "ansible_user": "root",
                           "ansible_timeout": 5},
    }
    doc = {"all": {"children": {"gds_hosts": {"hosts": hosts}},
                   "vars": {"gds_verify_probe_size_mb": 64, "gds_verify_probe_path": [str(tmp)]}}}
    path = os.path.join(str(tmp), "hosts.yml")
    with open(path, "w") as f:
        json.dump(doc, f)  # JSON is YAML
    return path


def playbook(tmp, plays):
    path = os.path.join(str(tmp), "run.yml")
    with open(path, "w") as f:
        json.dump(plays, f)
    return path


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """Run verify.yml + report.yml on the fake fleet; returns (report dir, inventory, output)."""
    tmp = tmp_path_factory.mktemp("fleet")
    libs = standin.build(os.path.join(str(tmp), "libs"))
    os.makedirs(os.path.join(libs, "cufile"))
    os.rename(os.path.join(libs, "libcufile.so.0"), os.path.join(libs, "cufile", "libcufile.so.0"))
    inv = inventory(tmp, libs)
    book = playbook(tmp, [{"name": "Verify", "ansible.builtin.import_playbook": os.path.join(ROOT, "playbooks/verify.yml")},
                          {"name": "Report", "ansible.builtin.import_playbook": os.path.join(ROOT, "playbooks/report.yml")}])
    reports = os.path.join(str(tmp), "reports")
    res = run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", inv, book, "-e", "gds_verify_hosts=gds_hosts"],
              env={"ANSIBLE_CALLBACKS_ENABLED": "gpudirect.storage.gds_report", "GDS_REPORT_DIR": reports,
                   "LD_LIBRARY_PATH": libs}, check=False, timeout=600)
    assert res.returncode in (2, 4), res.stdout[-6000:]  # one host failed, one unreachable
    return {"reports": reports, "inventory": inv, "output": res.stdout, "tmp": str(tmp), "libs": libs}


def chromium(url, tmp, *extra):
    profile = os.path.join(tmp, "chromium-profile")
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + profile] + list(extra)
    res = subprocess.run(argv + [url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=180, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


class Rows(HTMLParser):
    """Rows of the hosts table in the DOM Chromium dumped: host, status, mode, reason cell text."""

    def __init__(self):
        HTMLParser.__init__(self)
        self.rows, self.bars, self._cell = [], [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and "data-host" in a:
            self.rows.append(dict(a, cells={}))
        elif tag == "td" and self.rows:
            self._cell = a.get("data-key")
            self.rows[-1]["cells"][self._cell] = ""
        elif tag == "rect" and a.get("class") == "bar":
            self.bars.append(a)

    def handle_data(self, data):
        if self._cell and self.rows:
            self.rows[-1]["cells"][self._cell] += data

    def handle_endtag(self, tag):
        if tag == "td":
            self._cell = None


def dom_rows(html_path, tmp, fragment=""):
    parser = Rows()
    parser.feed(chromium("file://" + html_path + fragment, tmp, "--dump-dom"))
    return parser


def test_report_files_have_every_inventory_host(fleet):
    report = json.load(open(os.path.join(fleet["reports"], "gds-fleet.json")))
    recs = dict((r["host"], r) for r in report["hosts"])
    assert list(recs) == HOSTS
    assert recs["gpu-standin-01"]["mode"] == "compat" and recs["gpu-standin-01"]["throughput"]["write_gbps"] > 0
    assert recs["no-libcufile-03"]["mode"] == "unavailable" and recs["no-libcufile-03"]["status"] == "ok"
    assert recs["require-gds-04"]["status"] == "failed"
    assert "weaker than the required gds" in recs["require-gds-04"]["reason"]
    assert recs["unreachable-05"]["status"] == "unreachable"
    assert "Failed to connect to the host via ssh" in recs["unreachable-05"]["reason"]
    md = open(os.path.join(fleet["reports"], "gds-fleet.md")).read()
    rows = [line for line in md.splitlines()[6:] if line.startswith("| ")]  # the GPU/storage note follows the table
    assert [line.split(" | ")[0][2:] for line in rows] == HOSTS


def test_chromium_table_rows_equal_the_inventory_and_the_failed_host_shows_why(fleet):
    page = os.path.join(fleet["reports"], "gds-fleet.html")
    dom = dom_rows(page, fleet["tmp"])
    inv = json.load(open(fleet["inventory"]))["all"]["children"]["gds_hosts"]["hosts"]
    assert sorted(r["data-host"] for r in dom.rows) == sorted(inv)
    rows = dict((r["data-host"], r) for r in dom.rows)
    assert rows["require-gds-04"]["data-status"] == "failed"
    assert "GDS verdict compat is weaker than the required gds" in rows["require-gds-04"]["cells"]["reason"]
    assert rows["unreachable-05"]["data-status"] == "unreachable"
    assert "Failed to connect to the host via ssh" in rows["unreachable-05"]["cells"]["reason"]
    assert sorted(set(b["data-host"] for b in dom.bars)) == ["gpu-standin-01", "gpu-standin-02", "require-gds-04"]


def test_chromium_sorts_the_table_with_the_inline_script(fleet):
    page = os.path.join(fleet["reports"], "gds-fleet.html")
    dom = dom_rows(page, fleet["tmp"], "#sort=-write")
    values = [float(r["cells"]["write"]) if r["cells"]["write"] != "-" else -1 for r in dom.rows]
    assert values == sorted(values, reverse=True) and values[-1] == -1
    assert [r["data-host"] for r in dom_rows(page, fleet["tmp"], "#sort=-host").rows] == HOSTS[::-1]


def test_screenshot_for_the_docs(fleet):
    page = os.path.join(fleet["reports"], "gds-fleet.html")
    os.makedirs(os.path.dirname(SCREENSHOT), exist_ok=True)
    shot = os.path.join(fleet["tmp"], "shot.png")
    chromium("file://" + page, fleet["tmp"], "--hide-scrollbars", "--window-size=1280,1180", "--screenshot=" + shot)
    with open(shot, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) == (1280, 1180)
    shutil.copyfile(shot, SCREENSHOT)


def test_callback_writes_the_report_when_the_run_aborts_before_its_report_play(fleet):
    """max_fail_percentage 0: the failing host stops the run before playbooks/report.yml; the
    callback writes the report itself, with the failure."""
    reports = os.path.join(fleet["tmp"], "aborted")
    book = playbook(fleet["tmp"], [
        {"name": "Verify with no failure budget", "hosts": "gds_hosts:!unreachable-05", "gather_facts": False,
         "max_fail_percentage": 0, "roles": ["gpudirect.storage.gds_verify"]},
        {"name": "Report", "ansible.builtin.import_playbook": os.path.join(ROOT, "playbooks/report.yml")}])
    res = run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", fleet["inventory"], book],
              env={"ANSIBLE_CALLBACKS_ENABLED": "gpudirect.storage.gds_report", "GDS_REPORT_DIR": reports,
                   "LD_LIBRARY_PATH": fleet["libs"]}, check=False, timeout=600)
    assert res.returncode != 0 and "Write the GDS fleet report" not in res.stdout, res.stdout[-4000:]
    assert "the run ended before its report play" in res.stdout
    report = json.load(open(os.path.join(reports, "gds-fleet.json")))
    recs = dict((r["host"], r) for r in report["hosts"])
    assert recs["require-gds-04"]["status"] == "failed" and recs["gpu-standin-01"]["mode"] == "compat"
    assert report["run"]["writer"] == "callback fallback"


def test_example_inventory_documents_every_role_variable():
    """inventories/example/group_vars names every option of every role's meta/argument_specs.yml."""
    import yaml
    text = "".join(open(os.path.join(ROOT, "inventories/example/group_vars", f)).read()
                   for f in sorted(os.listdir(os.path.join(ROOT, "inventories/example/group_vars"))))
    missing = []
    for role in sorted(os.listdir(os.path.join(ROOT, "roles"))):
        spec = os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")
        if not os.path.exists(spec):
            continue
        for entry in yaml.safe_load(open(spec))["argument_specs"].values():
            missing += ["%s: %s" % (role, o) for o in entry.get("options") or {} if o + ":" not in text]
    assert missing == []


def test_verify_yml_names_a_bad_role_variable_and_runs_nothing(tmp_path):
    """gds_verify's arguments are checked in verify.yml with Ansible's validator: the error names
    the variables the user set, not the module's options, and the module never ran (no facts)."""
    res = run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local",
               os.path.join(ROOT, "playbooks/verify.yml"),
               "-e", "gds_verify_require_mode=fastest", "-e", "gds_verify_probe_size_mb=lots"],
              env={"GDS_REPORT_DIR": str(tmp_path / "reports"), "ANSIBLE_CALLBACK_RESULT_FORMAT": "json"},
              check=False, timeout=300)
    out = res.stdout
    assert res.returncode == 2, out[-4000:]
    failure = json.loads(out[out.index("fatal: [localhost]: FAILED! => ") + 31:].split("\n", 1)[0])
    assert "gds_verify_require_mode" in failure["msg"] and "gds_verify_probe_size_mb" in failure["msg"], failure
    assert "ansible_facts" not in failure, failure
    assert failure["msg"].endswith("nothing was run on the host"), failure
