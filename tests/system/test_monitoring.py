"""GDS monitoring end to end: lab hosts run Debian's real prometheus-node-exporter with the
collection's textfile collector (playbooks/monitoring.yml), a real Prometheus server (Debian's
prometheus package) on this machine scrapes them with the shipped alert rules, the test reads the
metrics back through its HTTP API, unloads nvidia_fs on one host (its re-rooted /proc) and sees
GdsNvidiaFsUnloaded fire through the alerts API, then clear. The Prometheus process is stopped by
its PID; the exporters go with the lab hosts."""

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest
import yaml

from conftest import ROOT, Lab, run

FAKE = "/srv/gds-fake"
STATS = os.path.join(ROOT, "tests", "fixtures", "gds", "nvfs-stats-2.26-io-stats-enabled.constructed.txt")
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fast_rules(dest):
    """The shipped rules with every `for:` cut to 4 s, so an alert fires within the test."""
    with open(os.path.join(ROOT, "prometheus", "rules", "gds.rules.yml")) as f:
        rules = yaml.safe_load(f)
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = "4s"
    with open(dest, "w") as f:
        yaml.safe_dump(rules, f)


def write_playbook(tmp, name, tasks, hosts="all"):
    path = os.path.join(str(tmp), name)
    with open(path, "w") as f:
        yaml.safe_dump([{"name": name, "hosts": hosts, "gather_facts": False, "tasks": tasks}], f)
    return path


class Prometheus(object):
    def __init__(self, tmp, targets):
        self.port = free_port()
        config = os.path.join(str(tmp), "prometheus.yml")
        fast_rules(os.path.join(str(tmp), "gds.rules.yml"))
        with open(config, "w") as f:
            yaml.safe_dump({"global": {"scrape_interval": "2s", "evaluation_interval": "2s"},
                            "rule_files": ["gds.rules.yml"],
                            "scrape_configs": [{"job_name": "node", "static_configs": [{"targets": targets}]}]}, f)
        self.log = open(os.path.join(str(tmp), "prometheus.log"), "w")
        self.proc = subprocess.Popen([PROMETHEUS, "--config.file=" + config, "--storage.tsdb.path=" + os.path.join(str(tmp), "data"),
                                      "--web.listen-address=127.0.0.1:%d" % self.port], stdout=self.log,
                                     stderr=subprocess.STDOUT)

    def api(self, path, **params):
        url = "http://127.0.0.1:%d/api/v1/%s?%s" % (self.port, path, urllib.parse.urlencode(params))
        with urllib.request.urlopen(url, timeout=10) as resp:
            body = json.load(resp)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr):
        return dict((r["metric"].get("instance"), float(r["value"][1])) for r in self.api("query", query=expr)["result"])

    def firing(self, name):
        return sorted(a["labels"].get("instance") for a in self.api("alerts")["alerts"]
                      if a["labels"]["alertname"] == name and a["state"] == "firing")

    def stop(self):
        """Stop the server by its PID: SIGTERM, then SIGKILL if it has not ended in 20 s."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=20)
        self.log.close()


def on_hosts(lab, command):
    """{host: stdout} of a command on every lab host (ansible's one-line output)."""
    res = run(["ansible", "-i", lab.inventory, "all", "-m", "ansible.builtin.shell", "-a", command, "-o"])
    out = {}
    for line in res.stdout.splitlines():
        if " | " in line and "(stdout)" in line:
            out[line.split(" | ", 1)[0]] = line.split("(stdout)", 1)[1].strip().replace("\\n", "\n")
    return out


def until(check, timeout=120, what=""):
    deadline, last = time.time() + timeout, None
    while time.time() < deadline:
        try:
            last = check()
            if last:
                return last
        except (OSError, ValueError, KeyError, AssertionError) as exc:  # server starting
            last = exc
        time.sleep(1)
    raise AssertionError("timed out waiting for %s (last: %r)" % (what, last))


@pytest.mark.skipif(not os.path.exists(PROMETHEUS), reason="Debian's prometheus package is missing (make deps)")
def test_alert_fires_and_clears_when_nvidia_fs_is_unloaded(tmp_path):
    debs = tmp_path / "debs"
    debs.mkdir()
    run(["apt-get", "download", "prometheus-node-exporter"], cwd=str(debs))
    deb = os.path.join(str(debs), os.listdir(str(debs))[0])
    lab = Lab("mon", 2, tmp_path)
    prometheus = None
    try:
        ips = [h["ip"] for h in lab.hosts]
        lab.playbook(os.path.join(ROOT, "lab", "simulate-gpu-host.yml"))
        env = {"GPUDIRECT_PROC_ROOT": FAKE}
        load = [{"name": "Load nvidia_fs in the fake tree", "ansible.builtin.command": "/opt/gds-shims/modprobe nvidia_fs",
                 "environment": env, "changed_when": True},
                {"name": "Its stats", "ansible.builtin.copy": {"src": STATS, "dest": FAKE + "/proc/driver/nvidia-fs/stats",
                                                               "mode": "0444"}}]
        lab.playbook(write_playbook(tmp_path, "load.yml", load))
        # Debian's real exporter, from the .deb this machine's mirror has (lab hosts reach no mirror)
        lab.playbook(write_playbook(tmp_path, "exporter.yml", [
            {"name": "Copy the package", "ansible.builtin.copy": {"src": deb, "dest": "/root/node-exporter.deb", "mode": "0644"}},
            {"name": "Install it", "ansible.builtin.apt": {"deb": "/root/node-exporter.deb"}},
            {"name": "Started", "ansible.builtin.systemd_service": {"name": "prometheus-node-exporter", "state": "started"}}]))
        exporter_pid = "systemctl show -p MainPID --value prometheus-node-exporter"
        pids = on_hosts(lab, exporter_pid)
        assert len(pids) == len(ips) and all(int(p) > 0 for p in pids.values()), pids
        # the verdict recorded by gds_verify (the lab's honest one: unavailable, no GPU)
        lab.playbook(os.path.join(ROOT, "playbooks", "verify.yml"), "-e", "gds_verify_record_verdict=true",
                     env={"GDS_REPORT_DIR": str(tmp_path / "reports")})
        args = ["-e", "gds_monitoring_proc_root=" + FAKE, "-e", "gds_monitoring_interval=2s",
                "-e", "gds_monitoring_require_mode=compat"]
        monitoring = os.path.join(ROOT, "playbooks", "monitoring.yml")
        check = lab.playbook(monitoring, "--check", "--diff", *args).stdout
        assert "changed=" in check and "failed=0" in check
        first = lab.playbook(monitoring, *args).stdout
        again = lab.playbook(monitoring, *args).stdout
        assert first.count("changed=0") == 0 and again.count("changed=0") == len(ips), again[-3000:]
        assert on_hosts(lab, exporter_pid) == pids  # an exporter the role did not install is not restarted

        prometheus = Prometheus(tmp_path, ["%s:9100" % ip for ip in ips])
        instances = ["%s:9100" % ip for ip in ips]
        until(lambda: sorted(prometheus.query("gds_nvidia_fs_loaded == 1")) == sorted(instances), what="both loaded")
        assert prometheus.query('gds_verdict_mode{mode="unavailable"} == 1').keys() == set(instances)
        assert prometheus.query("gds_cufile_valid == 1").keys() == set(instances)  # the controller's validation, recorded
        assert prometheus.query("gds_nvidia_fs_read_bytes_total")[instances[0]] == 65536 * 2 ** 20
        assert sorted(prometheus.query("gds_required_mode_rank")) == sorted(instances)
        until(lambda: prometheus.firing("GdsVerdictBelowRequired") == sorted(instances),
              what="GdsVerdictBelowRequired (unavailable is weaker than compat)")
        # host 0 was proven gds (the record as gds_verify writes it), then loses nvidia_fs
        record = {"schema": 1, "time": time.time(), "mode": "gds", "verified": True, "proven": True,
                  "write_gbps": 3.5, "read_gbps": 5.3, "cufile": {"valid": True, "release": "1.15", "files": []}}
        lab.playbook(write_playbook(tmp_path, "arm.yml", [
            {"name": "A gds verdict", "ansible.builtin.copy": {
                "content": json.dumps(record), "dest": "/var/lib/gpudirect-storage/last_verdict.json", "mode": "0644"}}],
            hosts=lab.hosts[0]["name"]))
        until(lambda: instances[0] in prometheus.query('gds_verdict_mode{mode="gds"} == 1'), what="host 0 at gds")
        assert prometheus.firing("GdsNvidiaFsUnloaded") == []
        lab.playbook(write_playbook(tmp_path, "unload.yml", [
            {"name": "Unload nvidia_fs", "ansible.builtin.command": "/opt/gds-shims/modprobe -r nvidia_fs",
             "environment": env, "changed_when": True}], hosts=lab.hosts[0]["name"]))
        until(lambda: prometheus.firing("GdsNvidiaFsUnloaded") == [instances[0]], what="GdsNvidiaFsUnloaded firing")
        lab.playbook(write_playbook(tmp_path, "reload.yml", load, hosts=lab.hosts[0]["name"]))
        until(lambda: prometheus.firing("GdsNvidiaFsUnloaded") == [], what="GdsNvidiaFsUnloaded cleared")

        gone = lab.playbook(monitoring, "-e", "gds_monitoring_state=absent", *args).stdout
        assert "failed=0" in gone
        left = on_hosts(lab, "ls /etc/systemd/system/gds-textfile-collector.* /usr/local/lib/gpudirect-storage/gds_textfile_collector.py "
                             "/var/lib/prometheus/node-exporter/gpudirect_storage.prom 2>/dev/null | wc -l")
        assert sorted(left.values()) == ["0"] * len(ips), left
        assert on_hosts(lab, exporter_pid) == pids  # the exporter it did not install still runs, untouched
    finally:
        if prometheus is not None:
            prometheus.stop()
        lab.down()
