"""``check`` under hostile input: whatever a pull request holds, ``--format json`` prints JSON (and
``github`` annotations), never a traceback, in bounded time and memory."""

from __future__ import annotations

import json
import resource
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.cli import main
from tests.conftest import SITES, MakeSite, examples


def _json_report(capsys: pytest.CaptureFixture[str], root: Path) -> tuple[int, dict[str, object]]:
    code = main(["check", "--root", str(root), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"stats", "errors", "warnings", "findings"}
    return code, report


def test_a_bad_root_is_reported_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = _json_report(capsys, tmp_path / "nowhere")
    assert code == 1
    assert report["errors"] == [
        {"path": "<site>", "line": None, "message": f"site root '{tmp_path / 'nowhere'}' is not a folder"}
    ]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (b"titl: x\n", 1, "titl: Extra inputs are not permitted"),
        (b'title: "caf\xe9"\n', 1, "not valid UTF-8 (byte 0xe9); save the file as UTF-8"),
        (b"title: &t x\ndescription: *t\n", 2, "YAML aliases are not allowed (*t): write the value out"),
        (
            b'repository_url: "javascript:alert(1)"\n',
            1,
            "repository_url: Value error, links are https, http or relative, not 'javascript:'",
        ),
        (
            b'repository_url: "java\\nscript:alert(1)"\n',
            1,
            "repository_url: Value error, a link may not hold spaces or control characters",
        ),
        (
            b'title: "\\x01"\n',
            1,
            "control character U+0001 in text: text may hold tabs and line breaks, "
            "no other control character",
        ),
    ],
)
def test_an_invalid_site_yaml_is_reported_as_json(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str], text: bytes, line: int, message: str
) -> None:
    root = make_site({"site.yaml": text})
    code, report = _json_report(capsys, root)
    assert code == 1
    assert report["errors"] == [{"path": "site.yaml", "line": line, "message": message}]
    assert main(["check", "--root", str(root), "--format", "github"]) == 1
    assert capsys.readouterr().out.startswith(f"::error file=site.yaml,line={line}::")


def test_a_site_yaml_that_is_not_a_regular_file_is_reported(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = make_site()
    (tmp_path / "elsewhere.yaml").write_text("title: from outside\n", encoding="utf-8")
    (root / "site.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    _, report = _json_report(capsys, root)
    assert report["errors"] == [
        {
            "path": "site.yaml",
            "line": None,
            "message": "a symbolic link: inputs must be regular files inside the site root",
        }
    ]
    (root / "site.yaml").unlink()
    (root / "site.yaml").mkdir()
    _, report = _json_report(capsys, root)
    assert report["errors"] == [{"path": "site.yaml", "line": None, "message": "a folder, not a file"}]


# --- Property: anything in any input file gives a JSON report ------------------------------------

TARGETS = [
    "site.yaml",
    "data/nodes.yaml",
    "data/hardware.yaml",
    "data/annotations.yaml",
    "content/recipes/tiny.md",
    "content/posts/p.md",
    "content/case-studies/c.md",
    "data/rows/tiny/x.csv",
    "data/rows/tiny/x.jsonl",
    "data/rows/tiny/x.parquet",
]
YAML_TOKENS = [
    "a",
    "title",
    "tiny",
    "node-a",
    "hardware",
    "recipe",
    "date",
    "2026-01-02",
    "0000-01-01",
    "1e-400",
    "&a ",
    "*a",
    "&b ",
    "*b",
    "<<: ",
    "!!python/object ",
    "!!set ",
    "? ",
    "- ",
    ": ",
    ", ",
    "[",
    "]",
    "{",
    "}",
    "'",
    '"',
    "\\x01",
    "\\ud800",
    "|",
    ">",
    "#",
    "---",
    "...",
    "%YAML 1.1",
    "\n",
    "\n  ",
    "\r",
    "\t",
    "\x00",
    "\x0b",
    "\ufeff",
    "javascript:alert(1)",
    "=1+1",
    " ",
    "é",
]
yaml_text = st.lists(st.sampled_from(YAML_TOKENS), max_size=60).map("".join)
content = st.one_of(
    st.binary(max_size=400),
    yaml_text.map(lambda text: text.encode("utf-8", "surrogatepass")),
    yaml_text.map(lambda text: ("---\n" + text + "\n---\nbody\n").encode("utf-8", "surrogatepass")),
)
MEMORY_LIMIT_KIB = 1_500_000
"""Peak resident memory the test process may reach (a YAML bomb took more than 5 GB)."""


@settings(
    max_examples=examples(30),
    deadline=10_000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(files=st.lists(st.tuples(st.sampled_from(TARGETS), content), min_size=1, max_size=3))
def test_any_bytes_or_yaml_in_any_input_give_a_json_report(
    files: list[tuple[str, bytes]], capsys: pytest.CaptureFixture[str]
) -> None:
    root = Path(tempfile.mkdtemp(prefix="check-prop-"))
    try:
        shutil.copytree(SITES / "minimal", root, dirs_exist_ok=True)
        for rel, data in files:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        started = time.monotonic()
        code, report = _json_report(capsys, root)
        assert time.monotonic() - started < 10
        assert code in (0, 1)
        for problem in [*report["errors"], *report["warnings"]]:  # type: ignore[misc]
            assert set(problem) - {"kind"} == {"path", "line", "message"}
            assert len(problem["message"]) <= 400
        assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < MEMORY_LIMIT_KIB
    finally:
        shutil.rmtree(root)


def test_a_file_name_of_invalid_utf8_is_reported_escaped(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_site()
    rows = bytes(root / "data/rows/tiny") + b"/bad-\xff.csv"
    with open(rows, "wb") as handle:
        handle.write(b"date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s\n")
        handle.write(b"2026-01-03,tiny,node-a,1.0.0,512,1,fast\n")
    code, report = _json_report(capsys, root)
    assert code == 1
    assert report["errors"] == [
        {
            "path": "data/rows/tiny/bad-\\udcff.csv",
            "line": 2,
            "message": "decode_tok_s must be a number, not 'fast'",
        }
    ]


@pytest.mark.parametrize("levels", [65, 20_000])
def test_deeply_nested_front_matter_is_an_error_at_its_line_in_every_format(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str], levels: int
) -> None:
    """Past the builder's limit (65) or past the parser's own (20,000 levels: PyYAML 6.0.4 refuses
    those in its own words; still inside the front matter's length limit), the file is refused at its
    line, never a crash, in every format."""
    root = make_site(
        {"content/posts/deep.md": "---\nx: " + "[" * levels + "1" + "]" * levels + "\n---\nBody.\n"}
    )
    code, report = _json_report(capsys, root)
    assert code == 1
    [error] = report["errors"]
    assert (error["path"], error["line"]) == ("content/posts/deep.md", 2)
    assert "nest" in error["message"]
    assert main(["check", "--root", str(root)]) == 1
    assert "content/posts/deep.md:2: " in capsys.readouterr().out
    assert main(["check", "--root", str(root), "--format", "github"]) == 1
    assert capsys.readouterr().out.startswith("::error file=content/posts/deep.md,line=2::")
