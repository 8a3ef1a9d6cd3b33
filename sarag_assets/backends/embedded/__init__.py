"""The embedded structuring backend: deterministic and offline, from general detectors over the
conversation's sentences, its speaker roles and shape, and sentence embeddings. Outside this package,
import from here only.

Modules, in the order a conversation goes through them: ``text`` (sentences, hits), the detectors
(``versions``, ``codes``, ``quantities``, ``statements``, ``products``), the sentence cues (``cues``),
``analysis`` (one conversation's findings), ``columns`` (what a finding means as a column) and
``backend`` (the structuring interface); for refinement, ``phrasing``, ``segmentation`` (issue/answer
units), ``graph`` and ``pseudo_documents``."""

from sarag_assets.backends.embedded.backend import EmbeddedBackend

__all__ = ["EmbeddedBackend"]
