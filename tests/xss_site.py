"""A SYNTHETIC site with script-injection payloads in every field a contributor controls.

Used by ``tests/site/test_xss.py`` (the built HTML parsed: nothing became markup) and by
``tests/browser/test_xss_browser.py`` (the pages opened in Chromium: nothing ran). A payload that
executes sets ``window.__xss`` or adds an element with id ``xss-injected``, or opens a dialog.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import SITES

RUN = "window.__xss=1"
PAYLOADS = [
    f"<script>{RUN}</script>",
    f'<img src=x onerror="{RUN}">',
    f'"><svg onload="{RUN}">',
    '\'><iframe srcdoc="<script>parent.__xss=1</script>"></iframe>',
    '<div id="xss-injected">injected</div>',
    "</script><script>alert(1)</script>",
    "{{ 7*7 }}{% raw %}",
    "javascript:alert(1)",
    f"</title></textarea></style><img src=x onerror={RUN}>",
    "\u2028\u2029<!--",
]
P = " ".join(PAYLOADS)
"""All payloads in one string, for fields that take any text."""
P_ASCII = " ".join(p for p in PAYLOADS if p.isascii())
"""The payloads an identifier (engine build, flags, env) can hold: identifiers are printable ASCII."""


def yaml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # JSON strings are YAML strings


P_BODY = P.replace("{{", "\\{{")
"""The payloads in a body: ``\\{{`` writes two braces that are not a figure (``{{ ... }}``)."""

BODY = f"""SYNTHETIC page full of payloads. Raw HTML stays text: {P_BODY}

A figure marked unbound is text too: {{{{ unbound <script>{RUN}</script> }}}}.

<script>{RUN}</script>

<img src=x onerror="{RUN}">

[a javascript link](javascript:{RUN}) and [a mixed-case one](JaVaScRiPt:{RUN}) and
[an entity-encoded one](&#106;avascript:{RUN}) and [a tab-split one](java\tscript:{RUN}) and
[a data link](data:text/html;base64,PHNjcmlwdD53aW5kb3cuX194c3M9MTwvc2NyaXB0Pg==) and
[a vbscript link](vbscript:msgbox(1)) and <javascript:{RUN}> and ![an image](javascript:{RUN}).

<a href="javascript:{RUN}">raw anchor</a>

| a | table with <b onmouseover="{RUN}">html</b> |
| --- | --- |
| `code <script>{RUN}</script>` | [x](javascript:{RUN}) |

```html
<script>{RUN}</script>
```

## Troubleshooting

### Why does <img src=x onerror="{RUN}"> appear? {PAYLOADS[5]}

Because <script>{RUN}</script> and [click](javascript:{RUN}).

### "><svg onload={RUN}> question two

Answer with ![img](x" onerror="{RUN}) and {PAYLOADS[3]}.
"""


def write_xss_site(root: Path) -> Path:
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(SITES / "minimal", root)
    for old in (root / "data" / "rows").rglob("*.csv"):
        old.unlink()
    (root / "site.yaml").write_text(f"title: {yaml_str('Recipes ' + PAYLOADS[0])}\n", encoding="utf-8")
    (root / "data" / "hardware.yaml").write_text(
        f"test-gpu:\n  name: {yaml_str('GPU ' + PAYLOADS[1])}\n  description: {yaml_str(P)}\n",
        encoding="utf-8",
    )
    (root / "data" / "nodes.yaml").write_text(
        f"node-a:\n  hardware: test-gpu\n  description: {yaml_str(P)}\n  driver: {yaml_str(PAYLOADS[2])}\n"
        f"node-b:\n  hardware: test-gpu\n  description: {yaml_str(P)}\n",
        encoding="utf-8",
    )
    flags = (
        f"--max-model-len 4096 --chat-template {json.dumps(PAYLOADS[1])} --served-model-name '{PAYLOADS[0]}'"
    )
    for slug, model in (("tiny", "example/tiny"), ("tiny-b", "example/tiny")):
        (root / "content" / "recipes" / f"{slug}.md").write_text(
            f"""---
title: {yaml_str(f"{slug} {P}")}
model: {yaml_str(model)}
checkpoint: {yaml_str("org/" + PAYLOADS[1])}
hardware: test-gpu
engine: {yaml_str("vllm" if slug == "tiny" else PAYLOADS[2])}
engine_version: {yaml_str("1.0.0 " + PAYLOADS[0])}
flags: {yaml_str(flags)}
env:
  EXAMPLE_ENV: {yaml_str(PAYLOADS[0])}
  OTHER: {yaml_str(PAYLOADS[1])}
verified: 2026-01-02
contributors: [{yaml_str(PAYLOADS[1])}, {yaml_str(PAYLOADS[4])}]
summary: {yaml_str(P)}
tags: [{yaml_str(PAYLOADS[2])}]
requirements: [{yaml_str(P)}]
flag_notes:
  --max-model-len: {yaml_str(P)}
served_model: {yaml_str(PAYLOADS[3])}
sources: [{yaml_str("javascript: " + RUN)}, {yaml_str(P)}]
---
{BODY}""",
            encoding="utf-8",
        )
    (root / "content" / "case-studies").mkdir(exist_ok=True)
    (root / "content" / "case-studies" / "xss-case.md").write_text(
        f"""---
title: {yaml_str("Case " + P)}
question: {yaml_str(P)}
verdict: {yaml_str(P)}
date: 2026-01-03
date_note: {yaml_str(P)}
outcome: {yaml_str(P)}
arms:
  - label: {yaml_str(PAYLOADS[1])}
    role: baseline
    recipe: tiny
  - label: {yaml_str(PAYLOADS[4])}
    role: comparison
    recipe: tiny-b
summary: {yaml_str(P)}
sources: [{yaml_str(P)}]
---
{BODY}""",
        encoding="utf-8",
    )
    (root / "content" / "posts").mkdir(exist_ok=True)
    (root / "content" / "posts" / "xss-post.md").write_text(
        f"""---
title: {yaml_str("Post " + P)}
date: 2026-01-04
summary: {yaml_str(P)}
author: {yaml_str(PAYLOADS[1])}
tags: [{yaml_str(PAYLOADS[0])}]
sources: [{yaml_str(P)}]
---
{BODY}""",
        encoding="utf-8",
    )
    # A row file whose very name is a payload (file names reach downloads and findings).
    rows = root / "data" / "rows" / "tiny"
    header = "date,recipe,node,engine,engine_version,prompt_tokens,concurrency,decode_tok_s,aggregate_tok_s,flags,env,engine_build,driver,harness,contributor,source,notes\n"

    def cell(text: str) -> str:
        return '"' + text.replace('"', '""') + '"'

    lines = []
    for date, node, value in (
        ("2026-01-02", "node-a", 50.0),
        ("2026-01-03", "node-b", 30.0),
        ("2026-01-04", "node-a", 50.5),
    ):
        for conc in (1, 2, 4):
            lines.append(
                ",".join(
                    [
                        date,
                        "tiny",
                        node,
                        "vllm",
                        cell("1.0.0 " + PAYLOADS[0]),
                        "512",
                        str(conc),
                        str(value / conc),
                        str(value),
                        cell(flags),
                        cell(f"EXAMPLE_ENV={PAYLOADS[0]!r}".replace("'", "")),
                        cell(P_ASCII),
                        cell(PAYLOADS[2]),
                        cell(P),
                        cell(PAYLOADS[1]),
                        cell("javascript:" + RUN),
                        cell(P),
                    ]
                )
            )
    (rows / 'x"y<img src=x onerror=window.__xss=1>.csv').write_text(
        header + "\n".join(lines) + "\n", encoding="utf-8"
    )
    other = root / "data" / "rows" / "tiny-b"
    other.mkdir(parents=True, exist_ok=True)
    (other / "2026-01-02-node-a.csv").write_text(
        header.replace("\n", "")
        + "\n"
        + ",".join(
            [
                "2026-01-02",
                "tiny-b",
                "node-a",
                cell(PAYLOADS[2]),
                cell("1.0.0 " + PAYLOADS[0]),
                "512",
                "1",
                "40",
                "40",
                cell(flags),
                "",
                "",
                "",
                "",
                "",
                cell(P),
                cell(P),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    (root / "data" / "annotations.yaml").unlink(missing_ok=True)
    return root
