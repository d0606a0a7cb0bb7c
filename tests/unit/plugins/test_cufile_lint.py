# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""bin/cufile-lint as a subprocess: exit codes, text and JSON output, checkout and installed layouts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
LINT = os.path.join(ROOT, "bin", "cufile-lint")
SHIPPED = os.path.join(ROOT, "tests", "fixtures", "cufile", "cuda-13.0-shipped.json")


def lint(*args, **kwargs):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.update(kwargs.pop("env", {}))
    script = kwargs.pop("script", LINT)
    proc = subprocess.run([sys.executable, script] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=env, cwd=kwargs.pop("cwd", ROOT), timeout=60, check=False, **kwargs)
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


@pytest.fixture
def bad(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{\n  "execution": {"allow_compat_mode": false},\n  "denylist": "nvme"\n}\n')
    return str(path)


def test_runs_as_a_command_where_there_is_python3_but_no_bare_python(tmp_path):
    assert os.access(LINT, os.X_OK)
    with open(LINT) as f:
        assert f.readline() == "#!/bin/sh\n"  # a shebang ansible-test sanity accepts
    bindir = tmp_path / "bin"
    bindir.mkdir()
    python3 = bindir / "python3"  # the only Python on PATH, as on Ubuntu and Debian GPU hosts
    python3.write_text('#!/bin/sh\nexec "%s" "$@"\n' % sys.executable)
    python3.chmod(0o755)
    env = {"PATH": os.pathsep.join([str(bindir), "/usr/bin", "/bin"])}
    assert not [d for d in env["PATH"].split(os.pathsep) if os.path.exists(os.path.join(d, "python"))]
    proc = subprocess.run([LINT, SHIPPED], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(tmp_path),
                          timeout=60, check=False)
    assert proc.returncode == 0 and proc.stdout.decode().strip().endswith("OK (0 errors, 0 warnings)"), proc.stderr


def test_clean_file_exits_0():
    rc, out, err = lint(SHIPPED)
    assert rc == 0 and out.strip().endswith("OK (0 errors, 0 warnings)"), err


def test_errors_exit_1_with_paths_and_lines(bad):
    rc, out, dummy = lint(bad)
    assert rc == 1
    assert "%s:2:17: error: execution.allow_compat_mode:" % bad in out and "did you mean properties.allow_compat_mode?" in out
    assert "%s:3:3: error: denylist:" % bad in out and "FAILED (2 errors, 0 warnings)" in out


def test_json_format(bad):
    rc, out, dummy = lint("--format", "json", SHIPPED, bad)
    doc = json.loads(out)
    assert rc == 1 and doc["ok"] is False and doc["version"] == "1.15"
    clean, failed = doc["files"]
    assert clean["ok"] and clean["findings"] == []
    assert [(f["path"], f["effect"], f["line"]) for f in failed["findings"]] == [
        ("execution.allow_compat_mode", "ignored", 2), ("denylist", "aborts", 3)]


def test_env_overlay(tmp_path):
    env = tmp_path / "user.json"
    env.write_text('{"properties": {"posix_pool_slab_size_kb": [4, 8]}}')
    rc, out, dummy = lint("--format", "json", "--env", str(env), SHIPPED)
    (result,) = json.loads(out)["files"]
    assert rc == 1 and [(f["source"], f["path"]) for f in result["findings"]] == [("merged", "properties.posix_pool_slab_count")]


def test_stdin_strict_and_quiet(tmp_path):
    proc = subprocess.run([sys.executable, LINT, "-"], input=b'{"profile": {"cufile_stats": 9}}', stdout=subprocess.PIPE,
                          timeout=60, check=False)
    assert proc.returncode == 0 and b"warning: profile.cufile_stats" in proc.stdout
    warn = tmp_path / "w.json"
    warn.write_text('{"profile": {"cufile_stats": 9}}')
    assert lint("--strict", str(warn))[0] == 1
    rc, out, dummy = lint("-q", str(warn))
    assert rc == 0 and "warning:" not in out


def test_check_paths_and_nvidia_fs_flags(tmp_path):
    f = tmp_path / "c.json"
    f.write_text('{"denylist": {"mounts": ["/nonexistent-mount"]}, "properties": {"allow_compat_mode": false}}')
    assert lint(str(f))[0] == 0
    rc, out, dummy = lint("--check-paths", "--nvidia-fs", "no", str(f))
    assert rc == 1 and "denylist.mounts[0]" in out and "5001" in out


def test_usage_errors_exit_2(tmp_path):
    assert lint("--version", "9.9", SHIPPED)[0] == 2
    rc, out, dummy = lint(str(tmp_path / "missing.json"))
    assert rc == 1 and "cannot read the file" in out


def test_works_from_an_installed_collection_layout(tmp_path, bad):
    coll = tmp_path / "ansible_collections" / "gpudirect" / "storage"
    os.makedirs(str(coll / "bin"))
    shutil.copy2(LINT, str(coll / "bin" / "cufile-lint"))
    for room in ("module_utils", "plugin_utils"):
        shutil.copytree(os.path.join(ROOT, "plugins", room, "_cufile"), str(coll / "plugins" / room / "_cufile"))
    shutil.copytree(os.path.join(ROOT, "schemas"), str(coll / "schemas"))
    rc, out, dummy = lint(bad, script=str(coll / "bin" / "cufile-lint"), cwd=str(tmp_path))
    assert rc == 1 and "did you mean properties.allow_compat_mode?" in out
    link = tmp_path / "cufile-lint"
    os.symlink(str(coll / "bin" / "cufile-lint"), str(link))          # e.g. linked into /usr/local/bin
    assert lint(SHIPPED, script=str(link), cwd=str(tmp_path))[0] == 0


def test_uses_the_importable_collection_when_there_is_one(bad):
    rc, out, dummy = lint(bad, env={"PYTHONPATH": os.path.join(ROOT, "build", "collections")})
    assert rc == 1 and "denylist" in out


def test_libcufile_release_names_what_that_release_ignores(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"block": {"nvme": {"use_pci_p2pdma": true}}, "properties": {"gds_fallback_io": "yes"}}')
    rc, out, _err = lint("--libcufile", "1.13", str(path))
    assert rc == 0 and "block: ignored by libcufile 1.13: added in 1.16" in out
    assert "properties.gds_fallback_io: ignored by libcufile 1.13: added in 1.19" in out
    rc, out, _err = lint("--libcufile", "1.20.0.107", "--format", "json", str(path))
    findings = json.loads(out)["files"][0]["findings"]
    assert rc == 1 and [(f["path"], f["effect"]) for f in findings] == [("properties.gds_fallback_io", "load_fails")]
    assert "returns 5002" in findings[0]["message"]
    assert lint("--libcufile", "1.21", str(path))[0] == 2


def test_schema_prints_the_keys_a_release_reads_as_a_table():
    rc, out, err = lint("--schema", "1.20")
    assert rc == 0 and out.startswith("# cufile.json keys of libcufile 1.20\n"), err
    assert "| properties.gds_fallback_io | boolean |  |  | 1.19 | refuses to load |" in out
    assert "| properties.io_batchsize | integer | 1..256 | 128 | 1.13 | refuses to load |" in out
    assert "| profile.nvtx |  | not read: read up to 1.15 only |  |  | ignores it |" in out
    assert "- posix-pool-slab-lengths (error): " in out
    rc, out, dummy = lint("--schema", "1.15")
    assert rc == 0 and "| properties.gds_fallback_io |  | not read: added in 1.19 |  |  | ignores it |" in out


def test_schema_as_json_is_the_release_s_json_schema():
    import jsonschema
    rc, out, err = lint("--schema", "1.20", "--format", "json")
    schema = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert rc == 0 and schema["$id"].endswith("libcufile-1.20") and schema["x-cufile-version"] == "1.20"
    assert "gds_fallback_io" in schema["properties"]["properties"]["properties"]


def test_schema_of_an_unknown_release_and_no_arguments_are_usage_errors():
    rc, dummy, err = lint("--schema", "9.9")
    assert rc == 2 and "no cufile.json schema for libcufile 9.9" in err
    rc, dummy, err = lint()
    assert rc == 2 and "give FILE arguments to check or --schema RELEASE" in err


def test_a_file_over_the_size_cap_is_one_short_error(tmp_path):
    big = tmp_path / "big.json"
    big.write_text('{"properties": {"x": "%s"}}' % ("A" * (2 * 1024 * 1024)))
    rc, out, dummy = lint(str(big))
    assert rc == 1 and len(out) < 1000 and "more than the 1 MiB" in out


def test_many_unknown_keys_print_50_findings_and_count_them_all(tmp_path):
    many = tmp_path / "many.json"
    many.write_text(json.dumps({"properties": dict(("unknown_%d" % i, i) for i in range(300))}))
    rc, out, dummy = lint(str(many))
    lines = out.splitlines()
    assert rc == 1 and len(lines) == 52 and lines[-1] == "%s: FAILED (300 errors, 0 warnings)" % many
    assert lines[-2].endswith("error: $: 250 more errors not listed (the first 50 findings are).")
    rc, out, dummy = lint("--format", "json", str(many))
    (result,) = json.loads(out)["files"]
    assert (result["errors"], len(result["findings"])) == (300, 51)
