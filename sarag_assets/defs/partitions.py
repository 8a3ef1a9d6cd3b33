import dagster as dg

# One partition per landed file, or per chunk of a large file (see core/landing.py).
conversation_batches = dg.DynamicPartitionsDefinition(name="conversation_batches")
