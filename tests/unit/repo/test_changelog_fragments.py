"""Changelog fragments: valid for antsibull-changelog, and in the sections a release that is not
out yet may carry. Until galaxy.yml's version is a release in changelogs/changelog.yaml, nothing
shipped had a bug, so "bugfixes" / "security_fixes" (fixes of released behaviour) are wrong there:
such an entry is a minor_changes / major_changes / breaking_changes entry of the coming release."""

import os
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FRAGMENTS = os.path.join(ROOT, "changelogs", "fragments")
FIX_SECTIONS = {"bugfixes", "security_fixes"}


def _load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def _unreleased_version():
    version = str(_load(os.path.join(ROOT, "galaxy.yml"))["version"])
    releases = (_load(os.path.join(ROOT, "changelogs", "changelog.yaml")) or {}).get("releases") or {}
    return None if version in releases else version


def _fragments():
    return sorted(f for f in os.listdir(FRAGMENTS) if f.endswith((".yml", ".yaml")))


def test_no_fix_sections_before_the_first_release_of_this_version():
    version = _unreleased_version()
    if version is None:
        pytest.skip("galaxy.yml's version is already released; fixes are legitimate now")
    wrong = {}
    for name in _fragments():
        sections = set(_load(os.path.join(FRAGMENTS, name)) or {}) & FIX_SECTIONS
        if sections:
            wrong[name] = sorted(sections)
    assert wrong == {}, ("version %s is unreleased: file these under minor_changes / major_changes / "
                         "breaking_changes: %s" % (version, wrong))


def test_fragment_sections_are_known_to_the_changelog_config():
    config = _load(os.path.join(ROOT, "changelogs", "config.yaml"))
    known = {section for section, _title in config["sections"]} | {config["prelude_section_name"],
                                                                   config["trivial_section_name"]}
    unknown = {}
    for name in _fragments():
        for section, entries in (_load(os.path.join(FRAGMENTS, name)) or {}).items():
            if section not in known:
                unknown[name] = section
            elif section != config["prelude_section_name"]:
                assert isinstance(entries, list) and all(isinstance(e, str) for e in entries), (name, section)
    assert unknown == {}


def test_antsibull_changelog_lint_is_clean():
    tool = shutil.which("antsibull-changelog", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    if tool is None:
        pytest.skip("antsibull-changelog is not installed (requirements/controller.in has it)")
    proc = subprocess.run([tool, "lint"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "", proc.stdout + proc.stderr
