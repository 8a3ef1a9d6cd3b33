"""The LLM structuring backend's call layer (no Dagster imports): settings from the environment, a
cached, retried, validated structured call, and the DuckDB call cache."""

from sarag_assets.llm.cache import CallCache
from sarag_assets.llm.client import CallStats, LLMCallFailed, LLMSettings, StructuredLLM

__all__ = ["CallCache", "CallStats", "LLMCallFailed", "LLMSettings", "StructuredLLM"]
