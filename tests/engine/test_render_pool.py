"""Rendering in forked workers (:mod:`builder.engine.render_pool`): how the jobs are shared out."""

from __future__ import annotations

import pytest

from builder.engine.render_pool import job_chunks, worker_count


@pytest.mark.parametrize(("jobs", "workers"), [(1234, 2), (48, 2), (5, 2), (1000, 8), (0, 2)])
def test_chunks_keep_every_job_once_in_order_and_shrink_towards_the_end(jobs: int, workers: int) -> None:
    pending = list(range(100, 100 + jobs))
    chunks = job_chunks(pending, workers)
    assert [index for chunk in chunks for index in chunk] == pending
    sizes = [len(chunk) for chunk in chunks]
    assert all(size <= 32 for size in sizes)
    assert all(size >= 4 for size in sizes[:-1])  # only the very last may be cut short
    assert sizes == sorted(sizes, reverse=True)


def test_a_large_render_ends_in_small_chunks() -> None:
    sizes = [len(chunk) for chunk in job_chunks(list(range(1234)), 2)]
    assert sizes[0] == 32
    assert sizes[-8:] == [4] * 8  # the two workers end within a few pages of each other


def test_few_pages_render_in_this_process() -> None:
    assert worker_count(47) == 1


def test_map_in_workers_gives_what_one_process_gives() -> None:
    import os

    from builder.engine.render_pool import map_in_workers

    items = list(range(200))
    parent = os.getpid()
    forked = map_in_workers(lambda i: (i * i, os.getpid()), items, 2)
    assert [square for square, _ in forked] == [i * i for i in items]
    assert all(pid != parent for _, pid in forked)
    assert map_in_workers(lambda i: (i, os.getpid()), items[:10], 2) == [(i, parent) for i in items[:10]]


def test_bodies_rendered_elsewhere_are_the_bodies_rendered_here() -> None:
    from builder.content.markdown import Markdown

    bodies = [f"# Recipe {i}\n\n## Troubleshooting\n\n### Why {i}?\n\nBecause.\n" for i in range(5)] * 2
    here, there = Markdown(), Markdown()
    todo = there.missing(bodies, faq=True)
    assert len(todo) == 5  # each body once
    there.add({key: Markdown().render_body(body, True) for key, body in todo.items()})
    assert there.missing(bodies, faq=True) == {}
    assert [there.render(b, faq=True) for b in bodies] == [here.render(b, faq=True) for b in bodies]
