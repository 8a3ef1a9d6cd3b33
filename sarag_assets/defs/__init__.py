"""The Dagster layer: thin shells that read inputs, call one core function, write, report metadata."""
