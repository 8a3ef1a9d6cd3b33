"""The shapes of the catalogue (what can go wrong with what) and of the latent world built from it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Step:
    """One resolution step: a canonical wording (the nugget) and imperative phrasings agents use."""

    canonical: str
    phrasings: tuple[str, ...]  # base-form verb phrases ("update the firmware to 1.2.4")
    actor: str = "user"  # "agent" when support does it ("ship a replacement"): said as "I'll ..."


@dataclass(frozen=True)
class Cause:
    """One way an archetypal problem can be caused, and how it is fixed."""

    canonical: str  # the root cause as a nugget, e.g. "corrupted local sync index"
    explain: tuple[str, ...]  # agent sentences explaining it (templates)
    steps: tuple[Step, ...]
    params: tuple[tuple[str, tuple[str, ...]], ...] = ()  # slot -> choices, fixed per issue
    kinds: tuple[str, ...] = ("*",)  # product kinds this cause can occur on


@dataclass(frozen=True)
class Archetype:
    """A kind of problem (symptom) that several products can have, each instance with its own cause."""

    key: str
    symptom: str  # canonical symptom
    says: tuple[str, ...]  # user clauses; {subj} is the thing that misbehaves
    ask: tuple[str, ...]  # query clauses; {p} is a product reference
    causes: tuple[Cause, ...]
    errors: tuple[str, ...] = ()  # error-message templates; a template without {code} gives no code
    code_rate: float = 0.0  # share of issues of this kind that show an error code
    kinds: tuple[str, ...] = ("*",)  # product kinds it applies to
    uses_version: bool = True  # whether the product version matters (False: billing, shipping, ...)
    extras: tuple[str, ...] = ()  # domain fields that apply (order_number, carrier, ...)


@dataclass(frozen=True)
class Product:
    key: str
    name: str
    kind: str
    vendor: str  # the brand a support agent speaks for
    code_prefix: str
    generic: str  # how users refer to it without naming it ("the app", "my router")
    model: str | None = None
    bands: tuple[str, ...] = ()  # version bands, oldest first
    options: tuple[str, ...] = ()  # OS (software) or plans (telecom, accounts) it is used with


@dataclass(frozen=True)
class Domain:
    name: str
    weight: float  # share of the corpus
    products: tuple[Product, ...]
    archetypes: tuple[Archetype, ...]
    failed_fixes: tuple[tuple[str, str], ...]  # (imperative, past tense) generic fixes that do not help
    brands: tuple[str, ...]  # who the support team works for when it is not the product vendor
    channel_weights: tuple[float, float, float]  # forum, chat, ticket
    version_word: str  # "version", "firmware", "app version"
    option_word: str  # "OS", "plan"
    subjects: tuple[str, ...]  # user references to the product, templates with {product}/{model}
    query_refs: tuple[str, ...]  # product references in queries


@dataclass
class Issue:
    """One latent issue: a product (and version band) with an archetypal symptom and a concrete cause."""

    issue_id: str
    domain: str
    archetype: Archetype
    product: Product
    band: str | None
    versions: tuple[str, ...]
    fix_version: str | None
    options: tuple[str, ...]
    error_code: str | None
    error_message: str | None
    cause: Cause
    root_cause: str
    steps: tuple[str, ...]  # canonical, concrete
    params: dict[str, str]
    start_day: int
    span_days: int
    weight: float = 1.0
    siblings: list["Issue"] = field(default_factory=list)  # same product + archetype, other band
    related: list["Issue"] = field(default_factory=list)  # same archetype, other product

    @property
    def symptom(self) -> str:
        return self.archetype.symptom
