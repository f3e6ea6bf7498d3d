"""``python -m builder reproduce PATH:LINE``: the same three commands as the page, exit 2 for no row."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.cli import main
from builder.config import load_config
from builder.content.models import ROW_FIELDS
from builder.data.load import load_site
from builder.errors import Problems
from builder.site.reproduce import reproduce
from tests.conftest import REPO, SITES, MakeSite

SHIPPED = "data/rows/qwen3.6-35b-a3b-nvidia-nvfp4/2026-07-06-spark-01.csv"


def test_prints_the_rows_own_serve_flags_and_its_setting(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reproduce", "--root", str(REPO), f"{SHIPPED}:2"]) == 0
    out = capsys.readouterr().out
    # the 2026-07-06 row ran with --max-model-len 10240, not the recipe's 262144
    assert "vllm serve nvidia/Qwen3.6-35B-A3B-NVFP4 \\\n  --max-model-len 10240\n" in out
    assert "262144" not in out
    assert "--random-input-len 2048" in out and "--max-concurrency 1" in out
    assert "--metadata node=spark-01 engine_version=0.24.0" in out
    assert "python -m builder import --from vllm-bench " in out
    assert "--recipe qwen3.6-35b-a3b-nvidia-nvfp4" in out and "--flags '--max-model-len 10240'" in out


def test_output_is_the_pure_functions_text(capsys: pytest.CaptureFixture[str]) -> None:
    root = SITES / "minimal"
    site = load_site(load_config(root), Problems())
    row = {name: site.rows.column(name)[1].as_py() for name in ROW_FIELDS}
    recipe = site.recipes["tiny"]
    assert main(["reproduce", "--root", str(root), "data/rows/tiny/2026-01-02-node-a.csv:3"]) == 0
    assert capsys.readouterr().out == reproduce(recipe.meta, "tiny", row).text()


def test_a_path_from_elsewhere_inside_the_root_works(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO / "data")
    assert main(["reproduce", "--root", "..", f"{Path(SHIPPED).relative_to('data')}:2"]) == 0
    assert "--max-model-len 10240" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("data/rows/tiny/2026-01-02-node-a.csv", "is not PATH:LINE"),
        ("data/rows/tiny/2026-01-02-node-a.csv:0", "is not PATH:LINE"),
        ("data/rows/tiny/2026-01-02-node-a.csv:x", "is not PATH:LINE"),
        ("data/rows/tiny/nope.csv:2", "data/rows/tiny/nope.csv: not a row file of the site"),
        (
            "data/rows/tiny/2026-01-02-node-a.csv:9",
            "data/rows/tiny/2026-01-02-node-a.csv:9: no row starts on this line (rows start on lines 2-3)",
        ),
        ("content/recipes/tiny.md:2", "content/recipes/tiny.md: not a row file of the site"),
        ("/:2", "not inside the site root"),
    ],
)
def test_a_bad_location_exits_2_with_a_clear_message(
    argument: str, message: str, make_site: MakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_site()
    assert main(["reproduce", "--root", str(root), argument]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err


def test_a_file_whose_rows_are_all_invalid_says_so(
    make_site: MakeSite, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_site(
        {
            "data/rows/tiny/bad.csv": "date,recipe,node,engine_version,prompt_tokens,concurrency,decode_tok_s\n"
            "2026-01-03,tiny,node-a,1.0.0,512,1,fast\n"
        }
    )
    assert main(["reproduce", "--root", str(root), "data/rows/tiny/bad.csv:2"]) == 2
    assert "the file has no valid row (run: python -m builder check)" in capsys.readouterr().err
