"""Write the stand-in's tokenizer: one token per whitespace-separated word, as the stand-in counts.

Run with a harness venv's python (it needs the ``tokenizers`` package the harnesses install):
``python bench/harness/make_tokenizer.py DIR``. DIR gets ``tokenizer.json`` and ``tokenizer_config.json``,
which ``AutoTokenizer.from_pretrained(DIR)`` and ``tokenizers.Tokenizer.from_file`` both load, so the
harnesses need no model hub. The vocabulary is ``[UNK]``, ``tok`` (the stand-in's output word) and the
words ``w0`` … ``w{VOCAB-3}`` of the stand-in's corpus; an unknown word is one ``[UNK]`` token, an
ordinary one (not special: a harness that decodes without special tokens keeps it, so a prompt of N
tokens stays N words).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers

VOCAB = 4096


def main(folder: str) -> None:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    vocab = {"[UNK]": 0, "tok": 1, **{f"w{i}": i + 2 for i in range(VOCAB - 2)}}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.save(str(out / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": 1_000_000,
        "clean_up_tokenization_spaces": False,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
