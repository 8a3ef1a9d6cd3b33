"""The latent world: issue instances drawn from the catalogue, and the corpus plan (who talks about what, when).

Everything is seeded; nothing iterates over a set or a hash-ordered structure, so the same (n, seed) gives
the same world in any process.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import date
from random import Random

from . import catalog_accounts, catalog_orders, catalog_software, catalog_telecom
from .model import Archetype, Domain, Issue, Product
from .rates import RATES, GeneratorRates, WorldRates

DOMAINS: tuple[Domain, ...] = (
    catalog_software.DOMAIN,
    catalog_telecom.DOMAIN,
    catalog_orders.DOMAIN,
    catalog_accounts.DOMAIN,
)
DOMAIN_BY_NAME = {d.name: d for d in DOMAINS}
CHANNELS = ("forum", "chat", "ticket")

EPOCH = date(2022, 1, 1)
LAST_DAY = (date(2025, 6, 30) - EPOCH).days
ISSUE_PREFIX = {"software": "SW", "telecom": "TC", "orders": "OR", "accounts": "AC"}


def applies(arch: Archetype, product: Product) -> bool:
    return arch.kinds == ("*",) or product.kind in arch.kinds


def target_issue_count(n: int) -> int:
    """More conversations, more distinct issues: ~3·sqrt(n), at least 40 (capped by the catalogue)."""
    return max(40, int(3 * n**0.5))


@dataclass
class World:
    issues: list[Issue]
    by_domain: dict[str, list[Issue]]
    cum_weights: dict[str, list[float]]
    index: dict[str, int]  # issue_id -> position in issues


def _code(domain: str, product: Product, arch: Archetype, rng: Random, taken: set, rates: WorldRates) -> str:
    while True:
        if domain == "software":
            code = (
                f"0x{rng.randrange(0x80040000, 0x8007FFFF):08X}"
                if rng.random() < rates.hresult_code
                else f"{product.code_prefix}-{rng.randrange(100, 9999)}"
            )
        elif domain == "telecom":
            code = f"{product.code_prefix}-E{rng.randrange(100, 999)}"
        elif domain == "orders":
            head = {"payment_declined": "PAY", "promo_rejected": "PRM"}.get(arch.key, "ERR")
            code = f"{head}-{rng.randrange(100, 9999)}"
        else:
            code = f"{product.code_prefix}-{rng.randrange(1000, 9999)}"
        if code not in taken:  # membership only; never iterated
            taken.add(code)
            return code


def _versions(band: str, rng: Random) -> tuple[tuple[str, ...], str]:
    k = 1 + int(rng.random() * 3)
    patches = sorted(rng.sample(range(0, 7), k))
    fix = patches[-1] + 1 + int(rng.random() * 2)
    return tuple(f"{band}.{p}" for p in patches), f"{band}.{fix}"


def _fill(template: str, slots: dict) -> str:
    # canonical strings use only {slot} (no alternatives)
    out = template
    for k, v in slots.items():
        if "{" + k + "}" in out:
            out = out.replace("{" + k + "}", v)
    return out


def _make_issue(
    domain: Domain, arch: Archetype, product: Product, band: str | None, cause_idx: int, rng: Random, taken: set,
    seq: int, rates: WorldRates,
) -> Issue:
    cause = arch.causes[cause_idx]
    if band is not None:
        versions, fix_version = _versions(band, rng)
    else:
        versions, fix_version = (), None
    options = product.options
    if domain.name == "software" and options and rng.random() < rates.one_os_family:
        family = rng.choice(options).split()[0]
        options = tuple(o for o in options if o.split()[0] == family)
    code = message = None
    if arch.errors:
        with_code = [e for e in arch.errors if "{code}" in e]
        without = [e for e in arch.errors if "{code}" not in e]
        if with_code and rng.random() < arch.code_rate:
            code = _code(domain.name, product, arch, rng, taken, rates)
            message = rng.choice(with_code).replace("{code}", code).replace("{product}", product.name)
        elif without and rng.random() < rates.message_without_code:
            message = rng.choice(without).replace("{product}", product.name)
    params = {name: rng.choice(choices) for name, choices in cause.params}
    slots = {"product": product.name, "model": product.model or product.name, "vendor": product.vendor, **params}
    if fix_version:
        slots["fix_version"] = fix_version
    steps = tuple(_fill(s.canonical, slots) for s in cause.steps)
    if band is not None and product.bands:
        pos = product.bands.index(band) / len(product.bands)
        start = int(pos * (LAST_DAY - 240)) + rng.randrange(0, 200)
    else:
        start = rng.randrange(0, LAST_DAY - 150)
    span = rng.randrange(120, 520)
    return Issue(
        issue_id=f"{ISSUE_PREFIX[domain.name]}-{seq:04d}",
        domain=domain.name,
        archetype=arch,
        product=product,
        band=band,
        versions=versions,
        fix_version=fix_version,
        options=options,
        error_code=code,
        error_message=message,
        cause=cause,
        root_cause=_fill(cause.canonical, slots),
        steps=steps,
        params=params,
        start_day=min(start, LAST_DAY - 60),
        span_days=span,
    )


def _domain_issues(domain: Domain, k: int, rng: Random, taken: set, seq0: int, rates: WorldRates) -> list[Issue]:
    """Issues come in clusters: one archetype on 2-3 products (same symptom, different product), often with a
    sibling on another version band of the same product (same product and symptom, different cause)."""
    free: dict[tuple[str, str], list[str | None]] = {}
    for arch in domain.archetypes:
        for p in domain.products:
            if applies(arch, p):
                bands = list(p.bands) if (arch.uses_version and p.bands) else [None]
                free[(arch.key, p.key)] = bands
    prod_pop = [1.0 / (r + 1) ** rates.product_popularity for r in range(len(domain.products))]
    prod_order = list(domain.products)
    rng.shuffle(prod_order)
    archs = list(domain.archetypes)
    rng.shuffle(archs)
    issues: list[Issue] = []
    seq = seq0
    a = 0
    stalled = 0
    while len(issues) < k and stalled < len(archs):
        arch = archs[a % len(archs)]
        a += 1
        cands = [(p, prod_pop[i]) for i, p in enumerate(prod_order) if free.get((arch.key, p.key))]
        if not cands:
            stalled += 1
            continue
        stalled = 0
        size = min(len(cands), 2 + (rng.random() < rates.three_products))
        chosen: list[Product] = []
        while len(chosen) < size:
            total = sum(w for p, w in cands if p not in chosen)
            r = rng.random() * total
            for p, w in cands:
                if p in chosen:
                    continue
                r -= w
                if r <= 0:
                    chosen.append(p)
                    break
            else:
                chosen.append(next(p for p, _ in cands if p not in chosen))
        for p in chosen:
            bands = free[(arch.key, p.key)]
            band = bands.pop(int(rng.random() * len(bands)))
            allowed = [i for i, c in enumerate(arch.causes) if c.kinds == ("*",) or p.kind in c.kinds]
            cause_idx = rng.choice(allowed)
            first = _make_issue(domain, arch, p, band, cause_idx, rng, taken, seq, rates)
            seq += 1
            issues.append(first)
            if bands and len(allowed) > 1 and rng.random() < rates.version_sibling and len(issues) < k:
                band2 = bands.pop(int(rng.random() * len(bands)))
                other = [c for c in allowed if c != cause_idx]
                second = _make_issue(domain, arch, p, band2, rng.choice(other), rng, taken, seq, rates)
                seq += 1
                issues.append(second)
                first.siblings.append(second)
                second.siblings.append(first)
            if len(issues) >= k:
                break
    return issues


def build_world(n: int, seed: int, rates: GeneratorRates = RATES) -> World:
    rng = Random(seed * 1_000_003 + 11)
    k_total = target_issue_count(n)
    taken: set = set()
    issues: list[Issue] = []
    by_domain: dict[str, list[Issue]] = {}
    cum: dict[str, list[float]] = {}
    for domain in DOMAINS:
        k = max(10, round(k_total * domain.weight))
        dom_issues = _domain_issues(domain, k, rng, taken, len(issues) + 1, rates.world)
        # skewed popularity: Zipf over a random ranking
        ranks = list(range(1, len(dom_issues) + 1))
        rng.shuffle(ranks)
        acc = 0.0
        cw = []
        for iss, r in zip(dom_issues, ranks):
            iss.weight = 1.0 / r**rates.world.issue_popularity
            acc += iss.weight
            cw.append(acc)
        for iss in dom_issues:
            iss.related = [
                o for o in dom_issues if o.archetype.key == iss.archetype.key and o.product.key != iss.product.key
            ]
        by_domain[domain.name] = dom_issues
        cum[domain.name] = cw
        issues.extend(dom_issues)
    return World(issues, by_domain, cum, {iss.issue_id: i for i, iss in enumerate(issues)})


@dataclass(frozen=True)
class PlanItem:
    position: int  # order in the corpus (by time)
    dialogue_id: str
    issue: int  # index into World.issues
    secondary: int  # -1 for none
    day: int  # days since EPOCH
    second: int  # second of the day the conversation starts
    channel: str


def _pick(cum: list[float], rng: Random) -> int:
    return bisect.bisect_left(cum, rng.random() * cum[-1])


def build_plan(world: World, n: int, seed: int, rates: GeneratorRates = RATES) -> list[PlanItem]:
    rng = Random(seed * 1_000_003 + 23)
    plan = rates.world
    dom_cum = []
    acc = 0.0
    for d in DOMAINS:
        acc += d.weight
        dom_cum.append(acc)
    by_product: dict[str, list[int]] = {}
    for i, iss in enumerate(world.issues):
        by_product.setdefault(iss.product.key, []).append(i)
    rows = []
    for k in range(n):
        d = DOMAINS[_pick(dom_cum, rng)]
        local = _pick(world.cum_weights[d.name], rng)
        iss = world.by_domain[d.name][local]
        idx = world.index[iss.issue_id]
        day = min(LAST_DAY, iss.start_day + int(rng.random() * iss.span_days))
        # office-ish hours, with a tail into the night
        if rng.random() < plan.office_hours:
            hour = int(plan.office_hours_start + rng.random() * plan.office_hours_length)
        else:
            hour = int(rng.random() * 24)
        second = hour * 3600 + int(rng.random() * 3600)
        cw = d.channel_weights
        r = rng.random() * sum(cw)
        channel = CHANNELS[0] if r < cw[0] else CHANNELS[1] if r < cw[0] + cw[1] else CHANNELS[2]
        sec = -1
        if rng.random() < plan.secondary_issue:
            same = [j for j in by_product[iss.product.key] if j != idx and world.issues[j].band in (None, iss.band)]
            pool = same if same and rng.random() < plan.secondary_same_product else [
                world.index[o.issue_id] for o in world.by_domain[d.name] if o.product.key != iss.product.key
            ]
            if pool:
                sec = pool[int(rng.random() * len(pool))]
        rows.append((day, second, k, idx, sec, channel))
    rows.sort()
    width = max(6, len(str(n)))
    return [
        PlanItem(pos, f"conv-{pos:0{width}d}", idx, sec, day, second, channel)
        for pos, (day, second, _k, idx, sec, channel) in enumerate(rows)
    ]
