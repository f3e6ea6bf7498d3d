"""review: what a contributor and a reviewer run on a change, over the pipeline: check and diff."""
