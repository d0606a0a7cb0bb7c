# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Security properties of the collection, as tests (issue 10).

Static: no module or module_util runs a shell string (AST), secret options are no_log, package
signature checks are never disabled. Dynamic: secrets never reach ``-vvv`` output of real runs
(a lab host for the MOK key passphrase, the Kubernetes API emulator for kubeconfig contents),
files site.yml writes are root-owned with the documented mode, temp files are created 0600 and
removed (spied on in-process).
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import stat
import subprocess
import sys

import pytest

from _reliability import host_root, playbook, prepared_lab
from conftest import ROOT, VENV_BIN

PLUGINS = os.path.join(ROOT, "plugins")
MODULES = sorted(f[:-3] for f in os.listdir(os.path.join(PLUGINS, "modules")) if f.endswith(".py"))
SECRET_NAME = re.compile(r"(pass(word|phrase)?|token|secret|credential|_content|_pin)$")
KNOWN_SECRETS = {"nvidia_fs": ["mok_key_passphrase"], "gpu_operator": ["kubeconfig_content", "api_key"]}


def _py_files(*subdirs):
    for sub in subdirs:
        for d, _dirs, files in os.walk(os.path.join(PLUGINS, sub)):
            for f in sorted(files):
                if f.endswith(".py"):
                    yield os.path.join(d, f)


# --------------------------------------------------------------------------- no shell strings
STRINGISH = (ast.JoinedStr,)


def _is_string_expr(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        return True
    if isinstance(node, STRINGISH):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.Add)):
        return _is_string_expr(node.left) or _is_string_expr(node.right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("format", "join"):
        return True
    return False


def shell_findings(source, name="<src>"):
    """Places where code could run a shell string."""
    out = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.keyword) and node.arg == "use_unsafe_shell":
            out.append("%s:%d use_unsafe_shell" % (name, node.value.lineno))
        if isinstance(node, ast.keyword) and node.arg == "shell" and not (
                isinstance(node.value, ast.Constant) and node.value.value is False):
            out.append("%s:%d shell=%s" % (name, node.value.lineno, ast.dump(node.value)))
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
            if any(n and n.split(".")[0] in ("subprocess", "commands", "pty") for n in names):
                out.append("%s:%d imports %s" % (name, node.lineno, names))
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        attr = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        owner = getattr(func.value, "id", "") if isinstance(func, ast.Attribute) else ""
        if (owner, attr) in (("os", "system"), ("os", "popen"), ("os", "execl"), ("os", "execlp"), ("os", "spawnl")):
            out.append("%s:%d os.%s" % (name, node.lineno, attr))
        if attr == "run_command" and node.args and _is_string_expr(node.args[0]):
            out.append("%s:%d run_command given a string" % (name, node.lineno))
        if attr == "run" and "runner" in ast.dump(func).lower() and node.args and _is_string_expr(node.args[0]):
            out.append("%s:%d Runner.run given a string" % (name, node.lineno))
    return out


def test_the_shell_scanner_finds_what_it_looks_for():
    bad = ("import subprocess\nm.run_command('ls -l %s' % x, use_unsafe_shell=True)\n"
           "subprocess.call(cmd, shell=True)\nos.system('x')\nself.runner.run('a b')\nm.run_command(' '.join(a))\n")
    assert len(shell_findings(bad)) == 7, shell_findings(bad)
    assert shell_findings("m.run_command(['ls', '-l'])\nrunner.run(argv, mutates=True)\n") == []


def test_no_module_or_module_util_runs_a_shell_string():
    found = []
    for path in _py_files("modules", "module_utils", "action", "plugin_utils", "callback"):
        with open(path) as f:
            found += shell_findings(f.read(), os.path.relpath(path, ROOT))
    assert found == []


# --------------------------------------------------------------------------- no_log
def _options(spec, prefix=""):
    for name, opt in (spec or {}).items():
        yield prefix + name, opt
        yield from _options(opt.get("options"), prefix + name + ".")


def test_secret_options_are_no_log_in_module_argument_specs():
    missing, seen = [], {}
    for mod in MODULES:
        module = importlib.import_module("ansible_collections.gpudirect.storage.plugins.modules." + mod)
        for name, opt in _options(module.arguments().argument_spec if hasattr(module, "arguments") else module.argument_spec()):
            if SECRET_NAME.search(name.split(".")[-1]) or name in KNOWN_SECRETS.get(mod, []):
                seen.setdefault(mod, []).append(name)
                if not opt.get("no_log"):
                    missing.append("%s.%s" % (mod, name))
    assert missing == []
    for mod, names in KNOWN_SECRETS.items():
        assert set(names) <= set(seen.get(mod, [])), (mod, seen)


def test_role_secret_variables_reach_only_no_log_options():
    """A role variable holding a secret is passed to a no_log module option and nowhere else."""
    import yaml
    for role, var, module, option in (("nvidia_fs", "nvidia_fs_mok_key_passphrase", "nvidia_fs", "mok_key_passphrase"),
                                      ("gpu_operator", "gpu_operator_kubeconfig_content", "gpu_operator",
                                       "kubeconfig_content")):
        with open(os.path.join(ROOT, "roles", role, "tasks", "main.yml")) as f:
            tasks = yaml.safe_load(f)
        uses = []
        for task in tasks:
            for key, args in task.items():
                if isinstance(args, dict):
                    uses += [(key, k) for k, v in args.items() if var in str(v)]
                elif var in str(args):
                    uses.append((key, None))
        assert uses == [("gpudirect.storage." + module, option)], (role, uses)


# --------------------------------------------------------------------------- signatures
FORBIDDEN = re.compile(
    r"--allow-unauthenticated|trusted\s*=\s*yes|Trusted:\s*yes|--nogpgcheck|--no-gpgcheck|--force-yes|"
    r"AllowUnauthenticated|AllowInsecureRepositories|--allow-insecure-repositories|"
    r"\b(repo_)?gpgcheck\s*[:=]\s*['\"]?(0|false|no)\b|allow_unauthenticated\s*:\s*(true|yes)|"
    r"disable_gpg_check\s*:\s*(true|yes)|skip_gpg|--no-check-signature", re.I)


def _python_strings(path):
    """String constants of a Python file, except docstrings and the deny list in _packages/apt_dnf."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node, clean=False):
            skip.add(id(node.body[0].value))
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "FORBIDDEN_ARGS" for t in node.targets):
            skip.update(id(n) for n in ast.walk(node.value))
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") in ("DOCUMENTATION", "EXAMPLES", "RETURN")
                                                for t in node.targets):
            skip.add(id(node.value))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip]


def test_package_signature_checks_are_never_disabled():
    found = []
    for path in _py_files("modules", "module_utils", "action", "plugin_utils", "callback"):
        found += ["%s:%d %r" % (os.path.relpath(path, ROOT), n, s) for n, s in _python_strings(path) if FORBIDDEN.search(s)]
    for top in ("roles", "playbooks", "meta"):
        for d, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".yml", ".yaml", ".j2", ".cfg", ".conf")):
                    with open(os.path.join(d, f)) as fh:
                        for n, line in enumerate(fh, 1):
                            code = line.split("#", 1)[0]
                            if FORBIDDEN.search(code):
                                found.append("%s:%d %s" % (os.path.relpath(os.path.join(d, f), ROOT), n, line.strip()))
    assert found == []
    assert FORBIDDEN.search("deb [trusted=yes] http://x ./") and FORBIDDEN.search("gpgcheck: false")


def test_rendered_repositories_keep_signature_checks_on():
    from ansible_collections.gpudirect.storage.plugins.module_utils._packages import apt_dnf as pk
    from ansible_collections.gpudirect.storage.plugins.module_utils._packages import repos
    repo = {"url": "http://mirror.invalid/cuda", "suite": "./", "signed_by": "/etc/apt/keyrings/cuda.asc"}
    _name, apt = repos.render_apt_source(repo, "x")
    _name, dnf = repos.render_dnf_repo(repo, "x")
    assert "Signed-By: /etc/apt/keyrings/cuda.asc" in apt and not FORBIDDEN.search(apt)
    assert "gpgcheck=1" in dnf and "gpgkey=file:///etc/apt/keyrings/cuda.asc" in dnf and not FORBIDDEN.search(dnf)
    with pytest.raises(AssertionError):
        pk.check_argv(["apt-get", "install", "--allow-unauthenticated", "x"])


# --------------------------------------------------------------------------- lab: -vvv, file modes
PASSPHRASE = "Gds-S3cret-Passphrase-7f3a9c"
DOCUMENTED = {  # path -> mode (docs/cufile.md: root:root 0644; nvidia_fs and the repo files: 0644)
    "/etc/cufile.json": 0o644,
    "/etc/modules-load.d/nvidia-fs.conf": 0o644,
    "/etc/modprobe.d/nvidia-fs.conf": 0o644,
    "/etc/dkms/framework.conf.d/gpudirect-nvidia-fs.conf": 0o644,
    "/etc/apt/sources.list.d/gds-test.sources": 0o644,
}


@pytest.fixture(scope="module")
def secure_host(tmp_path_factory):
    """One lab host converged by site.yml -vvv with a MOK key passphrase; yields (lab, output)."""
    tmp = tmp_path_factory.mktemp("security")
    lab = prepared_lab("rel-sec", 1, tmp)
    try:
        extra = {"nvidia_fs_mok_key": "/var/lib/shim-signed/mok/MOK.priv",
                 "nvidia_fs_mok_cert": "/var/lib/shim-signed/mok/MOK.der",
                 "nvidia_fs_mok_key_passphrase": PASSPHRASE}
        rc, out = playbook(lab, "playbooks/site.yml", "-vvv", "-e", json.dumps(extra), report_dir=tmp / "reports")
        assert rc == 0, out[-6000:]
        yield lab, out, tmp
    finally:
        lab.down()


def test_mok_passphrase_never_appears_in_vvv_output_or_on_the_host(secure_host):
    lab, out, tmp = secure_host
    assert "mok_key_passphrase" in out and "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" in out  # it was passed, masked
    assert PASSPHRASE not in out
    res = subprocess.run(["grep", "-rlF", PASSPHRASE, str(tmp / "reports")] +
                         [os.path.join(host_root(lab.name, lab.hosts[0]["name"]), d)
                          for d in ("etc", "var/log", "var/lib/dkms", "root", "tmp", "var/tmp", "srv")],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
    assert res.stdout == ""


def test_files_written_are_root_owned_with_the_documented_mode(secure_host):
    lab = secure_host[0]
    root = host_root(lab.name, lab.hosts[0]["name"])
    for path, mode in DOCUMENTED.items():
        st = os.lstat(os.path.join(root, path.lstrip("/")))
        assert stat.S_ISREG(st.st_mode), path
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (0, 0, mode), (path, oct(st.st_mode))
        leftovers = [f for f in os.listdir(os.path.dirname(os.path.join(root, path.lstrip("/"))))
                     if f.startswith(".") and os.path.basename(path) in f]
        assert leftovers == [], (path, leftovers)  # no temp file of an atomic write left behind


def test_kubeconfig_contents_never_appear_in_vvv_output(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures"))
    from k8s_emulator.fixture import Emulator
    helm = os.path.join(ROOT, "build", "helm", "4.1.4", "helm")
    if not os.access(helm, os.X_OK):
        pytest.skip("helm 4.1.4 is not in build/helm (tests/fixtures/helm/fetch-helm.py)")
    emu = Emulator(tmp_path / "emulator", pod_delay=0.1)
    emu.start()
    try:
        with open(emu.kubeconfig) as f:
            text = f.read()
        token = re.search(r"token: (\S+)", text).group(1)
        ca_data = re.search(r"certificate-authority-data: (\S+)", text).group(1)
        env = dict(os.environ, PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""),
                   ANSIBLE_CONFIG=os.path.join(ROOT, "lab", "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                   HELM_CACHE_HOME=str(tmp_path / "hc"), HELM_CONFIG_HOME=str(tmp_path / "hcfg"),
                   HELM_DATA_HOME=str(tmp_path / "hd"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "at"))
        env.pop("KUBECONFIG", None)
        extra = {"go_kubeconfig_file": emu.kubeconfig, "gpu_operator_chart_ref": os.path.join(
            ROOT, "tests/fixtures/charts/gpu-operator-test"), "gpu_operator_helm_binary": helm,
            "gpu_operator_wait_timeout": 60, "ansible_python_interpreter": sys.executable}
        res = subprocess.run([os.path.join(VENV_BIN, "ansible-playbook"), "-vvv", "-i", "localhost,", "-c", "local",
                              os.path.join(ROOT, "tests/integration/gpu_operator/playbooks/role.yml"),
                              "-e", json.dumps(extra)], cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=300, check=False)
        assert res.returncode == 0, res.stdout[-6000:]
        assert "kubeconfig_content" in res.stdout and "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" in res.stdout
        assert token not in res.stdout and ca_data[:40] not in res.stdout
    finally:
        emu.stop()


# --------------------------------------------------------------------------- temp files
class TempSpy(object):
    """Records every tempfile.mkstemp (path, mode right after creation) while modules run."""

    def __init__(self, monkeypatch):
        import tempfile
        real = tempfile.mkstemp
        self.created = []

        def mkstemp(*args, **kwargs):
            fd, path = real(*args, **kwargs)
            self.created.append((path, stat.S_IMODE(os.fstat(fd).st_mode)))
            return fd, path
        monkeypatch.setattr(tempfile, "mkstemp", mkstemp)

    def check(self, expect_some=True):
        assert self.created or not expect_some, "no temp file was created: the spy saw nothing"
        assert [(p, oct(m)) for p, m in self.created if m != 0o600] == []
        assert [p for p, _m in self.created if os.path.lexists(p)] == []  # moved into place or removed


def test_cufile_temp_file_is_0600_and_gone_after_success_and_failure(tmp_path, monkeypatch):
    from ansible.module_utils import basic
    from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.test_cufile_config import apply, plan
    spy = TempSpy(monkeypatch)
    real_move = basic.AnsibleModule.atomic_move
    moved = []

    def atomic_move(self, src, dest, *args, **kwargs):
        moved.append(stat.S_IMODE(os.stat(src).st_mode))
        return real_move(self, src, dest, *args, **kwargs)
    monkeypatch.setattr(basic.AnsibleModule, "atomic_move", atomic_move)
    target = tmp_path / "cufile.json"
    planned = plan(target, settings={"properties": {"io_batchsize": 64}}, cufile_version="1.15")  # no libcufile here
    assert not apply(target, planned).get("failed") and target.exists()
    assert moved == [0o600]
    spy.check()

    def broken_move(self, src, dest, *args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(basic.AnsibleModule, "atomic_move", broken_move)
    before = target.read_bytes()
    planned = plan(target, settings={"properties": {"io_batchsize": 128}}, cufile_version="1.15")
    failed = apply(target, planned)
    assert failed.get("failed") and "No space left on device" in failed["msg"], failed
    assert target.read_bytes() == before
    spy.check()


@pytest.mark.parametrize("upgrade_rc", [0, 1])
def test_gpu_operator_values_and_kubeconfig_temp_files_are_0600_and_gone(monkeypatch, upgrade_rc):
    from ansible_collections.gpudirect.storage.tests.unit.plugins.modules import test_gpu_operator as gop
    spy = TempSpy(monkeypatch)
    helm = gop.FakeHelm(*gop.deployed({"gds": {"enabled": True, "version": "2.29.4"}}), upgrade_rc=upgrade_rc)
    res = gop.run(helm, {"gds": {"version": "2.30.1"}, "kubeconfig_content": "apiVersion: v1\nkind: Config\n"},
                  state=gop.CRASHING if upgrade_rc else None)
    assert bool(res.get("failed")) == bool(upgrade_rc), res
    assert helm.seen["values_mode"] == 0o600 and helm.seen["kubeconfig"][0] == 0o600
    # the values file, and the kubeconfig each client (helm, the API client) reads: each 0600 and gone
    kinds = sorted({path.rsplit(".", 2)[-2] + "." + path.rsplit(".", 1)[-1] if path.endswith(".yaml")
                    else path.rsplit(".", 1)[-1] for path, _mode in spy.created})
    assert kinds == ["kubeconfig", "values.yaml"], spy.created
    spy.check()


def test_nvidia_fs_managed_file_temp_files_are_0600_and_gone(tmp_path, monkeypatch):
    from ansible_collections.gpudirect.storage.plugins.modules import nvidia_fs
    from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.testhost_mofed_nvidia_fs import FakeHost
    host = FakeHost(tmp_path, monkeypatch)
    host.available = {"nvidia-fs-dkms": ["2.28.2-1"], "nvidia-fs": ["2.28.2-1"]}
    spy = TempSpy(monkeypatch)
    res = host.run(nvidia_fs.main, {"version": "match_driver", "params": {"rw_stats_enabled": 1}})
    assert res["changed"] and not res.get("failed"), res
    assert len(spy.created) == 2  # modules-load.d and modprobe.d
    spy.check()
