"""The embedded structuring backend: deterministic and offline, from general detectors over the
conversation's sentences, its speaker roles and shape, and sentence embeddings. Outside this package,
import from here only.

Modules, in the order a conversation goes through them: ``text`` (sentences, hits), the detectors
(``versions``, ``codes``, ``quantities``, ``statements``, ``products``), the sentence cues (``cues``),
``analysis`` (one conversation's findings), ``columns`` (what a finding means as a column) and
``backend`` (the structuring interface); for refinement, ``phrasing``, ``segmentation`` (issue/answer
units), ``graph`` and ``pseudo_documents``."""

from sarag_assets.backends.embedded.analysis import analyzed
from sarag_assets.backends.embedded.backend import EmbeddedBackend
from sarag_assets.backends.embedded.cues import _INFO_REQUEST as INFO_REQUEST
from sarag_assets.backends.embedded.cues import confirmation, instruction_score
from sarag_assets.backends.embedded.phrasing import _FAILED as FAILURE_REPORT
from sarag_assets.backends.embedded.phrasing import _TAG_QUESTION as TAG_QUESTION
from sarag_assets.backends.embedded.phrasing import _is_filler as is_filler
from sarag_assets.backends.embedded.text import split_sentences

# What the query side's answers read of a conversation the way structuring does (`query.fixes`).
__all__ = ["EmbeddedBackend", "FAILURE_REPORT", "INFO_REQUEST", "TAG_QUESTION", "analyzed", "confirmation",
           "instruction_score", "is_filler", "split_sentences"]
