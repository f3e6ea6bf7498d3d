"""How big an input may be: every limit the builder sets on what a contribution holds.

A pull request is checked by CI, so a small file must not be able to take ``check`` past its memory
or its time (a Parquet compression bomb, a header of 100,000 columns, a 2 MB title). Each limit is
far above anything honest (the shipped data, the benchmark generator's 1,000-row files) and each is
refused with the file, and the line where there is one, when exceeded. CONTRIBUTING.md ("What a
contribution may contain") lists them; a test keeps that list equal to this module.
"""

from __future__ import annotations

ROW_FILE_BYTES = 16 * 1024 * 1024
"""Bytes of one row file (CSV, JSONL or Parquet), known before it is read."""
ROWS_PER_FILE = 100_000
"""Rows of one row file."""
HEADER_COLUMNS = 100
"""Columns of a CSV header or a Parquet schema, keys of a JSONL object (a row has 40 fields)."""
PARQUET_ROW_GROUPS = 1_000
"""Row groups of one Parquet file (a writer's default puts a million rows in one)."""
PARQUET_METADATA_BYTES = 8 * 1024 * 1024
"""Bytes of a Parquet file's footer (its metadata), read before the metadata is parsed."""
PARQUET_DECODED_BYTES = 64 * 1024 * 1024
"""Bytes of one Parquet file's cells once decompressed and decoded (as the file's metadata declares
them, then as they are read, row group by row group)."""
CONTENT_FILE_BYTES = 1024 * 1024
"""Bytes of one content file (``content/**/*.md``), ``site.yaml`` or ``data/*.yaml`` file."""
FRONT_MATTER_CHARS = 64 * 1024
"""Characters of a page's front matter (between its ``---`` lines)."""
FRONT_MATTER_STRING_CHARS = 4_000
"""Characters of one string in front matter or a ``data/*.yaml`` file (a title, a summary, a note)."""
BODY_CHARS = 200_000
"""Characters of a page's markdown body."""
ERRORS_PER_FILE = 100
"""Errors (and warnings) listed per file; the rest are counted in one last line, "and N more"."""
