"""The LLM structuring backend: an OpenAI-compatible structured client with retries and a DuckDB call
cache, the prompts, the response models, and the backend that uses them. Outside this package, import
from here only."""

from sarag_assets.backends.llm.backend import LLMBackend
from sarag_assets.backends.llm.cache import CallCache
from sarag_assets.backends.llm.client import (
    CallStats,
    LLMCallFailed,
    LLMSettings,
    StructuredLLM,
)
from sarag_assets.backends.llm.training_pairs import (
    KINDS,
    code_digest,
    extraction_prompt,
    preference_pairs,
    write_pairs,
)

__all__ = [
    "KINDS",
    "CallCache",
    "CallStats",
    "LLMBackend",
    "LLMCallFailed",
    "LLMSettings",
    "StructuredLLM",
    "code_digest",
    "extraction_prompt",
    "preference_pairs",
    "write_pairs",
]
