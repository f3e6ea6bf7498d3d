"""Markdown documents: parsed front matter, pickling, and the keys bodies render under."""

from __future__ import annotations

from builder.content.markdown import Markdown


def _body(i: int) -> str:
    # Every tenth body repeats an earlier one: duplicates are rendered once.
    n = i - 10 if i % 10 == 9 else i
    return (
        f"# Recipe {n}\n\nRun it with `--flag {n}`.\n\n| a | b |\n| - | - |\n| {n} | <b>{n}</b> |\n\n"
        f"## Troubleshooting\n\n### Why is run {n} slow?\n\nBecause of *{n}*.\n\n"
        f"### Second question {n}\n\nAnswer.\n\n## After\n\nText {n}.\n"
    )


def test_a_pickled_document_reads_its_front_matter_when_first_asked() -> None:
    import pickle

    from builder.content.markdown import split_document

    doc = split_document("content/recipes/x.md", "---\ntitle: A\nmodel: b/c\n---\nThe body.\n")
    restored = pickle.loads(pickle.dumps(doc))
    assert "front" not in vars(restored)  # still bytes
    assert restored.body == doc.body and restored.digest == doc.digest
    assert restored.line_of(("model",)) == 3
    assert "front" in vars(restored) and restored.front == doc.front
    assert restored == doc
    twice = pickle.loads(pickle.dumps(pickle.loads(pickle.dumps(doc))))  # bytes passed on unread
    assert twice == doc


def test_a_document_renders_under_the_key_its_body_has() -> None:
    import pickle

    from builder.content.markdown import markdown_key, split_document

    doc = pickle.loads(pickle.dumps(split_document("content/x.md", "---\ntitle: A\n---\n# Hi\n\ntext\n")))
    assert doc.body_keys == (markdown_key(doc.body, False), markdown_key(doc.body, True))
    markdown = Markdown()
    by_doc = markdown.render(doc, faq=True)
    assert markdown.render(doc.body, faq=True) is by_doc  # one cache entry for both
    assert markdown.cache == {doc.body_keys[True]: by_doc}


def _serial(bodies: list[str]) -> Markdown:
    serial = Markdown()
    for body in bodies:
        serial.render(body, faq=True)
    return serial
