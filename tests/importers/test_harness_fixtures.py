"""Every file a harness wrote against the stand-in server imports with the values the stand-in was set to.

bench/harness/run_harnesses.py installs each harness at a pinned version, runs it against
bench/standin_server.py and writes the files to tests/fixtures/harness/ with runs.json, which lists each
file with what the run was set to. The checks below compare the imported values with those settings,
within 2 %, not with the file: a reader that takes the wrong field or the wrong unit fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from builder.errors import Problems
from builder.importers import load_cells, reader_for

HARNESS = Path(__file__).resolve().parents[1] / "fixtures" / "harness"
MANIFEST = json.loads((HARNESS / "runs.json").read_text())
SPEED = MANIFEST["standin"]
TOLERANCE = 0.02


def _near(text: str, want: float) -> bool:
    return abs(float(text) - want) <= TOLERANCE * want


@pytest.mark.parametrize("entry", MANIFEST["runs"], ids=lambda e: e["file"])
def test_harness_output_imports_the_stand_ins_settings(entry: dict[str, Any]) -> None:
    problems = Problems()
    path = HARNESS / entry["file"]
    items = reader_for(entry["format"])(path.name, path.read_bytes(), problems)
    if "refused" in entry:
        assert items == []
        assert any(entry["refused"] in p.message for p in problems.errors), problems.errors
        return
    assert problems.errors == []
    assert items
    prompt, output = entry["prompt_tokens"], entry["output_tokens"]
    ttft = SPEED["ttft_ms"] + SPEED["ttft_ms_per_prompt_token"] * prompt
    for item in items:
        cells = item.cells
        assert _near(cells["prompt_tokens"], prompt), cells["prompt_tokens"]
        if "output_tokens" in cells:
            assert _near(cells["output_tokens"], output), cells["output_tokens"]
        if entry.get("load_recorded", True):
            assert load_cells(item.load) == entry["load"]
            assert item.unknown == ()
        else:  # the file does not record it (AIPerf's CSV): an option gives it
            assert item.load == {} and item.unknown == ("load",)
        # the tool, with its version where the file records it (llama-benchy's table, vLLM's JSON do not)
        assert cells["harness"].startswith(entry["tool"])
        last = cells["harness"].split()[-1]
        assert last == entry["version"] or not re.fullmatch(r"\d+(\.\d+)+", last)
        checked = {
            "ttft_ms": ttft,
            "itl_ms": 1000 / SPEED["tok_s"],
            "tpot_ms": 1000 / SPEED["tok_s"],
            "decode_tok_s": SPEED["tok_s"],
            # llama-benchy's prompt processing rate of all the streams it starts at once
            "prefill_tok_s": int(entry["load"].get("concurrency", "1")) * prompt / (ttft / 1000),
        }
        present = {name: want for name, want in checked.items() if name in cells}
        assert "decode_tok_s" in present
        for name, want in present.items():
            assert _near(cells[name], want), f"{name} {cells[name]}, the stand-in was set to {want:.4g}"
        for name in ("requests", "failed_requests"):
            if name in entry:
                assert cells[name] == str(entry[name])


def test_every_light_harness_has_fixtures() -> None:
    tools = {entry["tool"] for entry in MANIFEST["runs"]}
    assert {"llama-benchy", "guidellm", "aiperf"} <= tools
