"""How often each thing happens in the generated benchmark: every probability of the generator, named and
documented in one frozen object, `GeneratorRates`, made of one part per stage. Most are the chance of one draw
of that stage's random stream (a few shape one: the popularity exponents, the office hours), in the order
the stage draws; changing one changes the output of every seed. The catalogues keep what belongs to their
entries (a domain's share of the corpus and its channel mix, an archetype's share of issues with an error
code)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True)
class PerChannel:
    """One probability per channel style."""

    forum: float
    ticket: float
    chat: float

    def __getitem__(self, channel: str) -> float:
        return getattr(self, channel)


@dataclass(frozen=True)
class WorldRates:
    """The latent world (its issues, drawn once per seed) and the corpus plan (which issue each conversation
    is about, when, on which channel)."""

    # -- the issues
    hresult_code: float = 0.15  # a software error code is a Windows-style 0x8004.... code, else <prefix>-<n>
    one_os_family: float = 0.3  # a software issue happens on one OS family only (e.g. Windows), else on all
    message_without_code: float = 0.6  # an issue with no error code shows a plain error message
    product_popularity: float = 0.7  # exponent s of a product's weight 1/(rank+1)^s, when a cluster picks products
    three_products: float = 0.4  # an archetype's cluster covers three products, else two
    version_sibling: float = 0.5  # an issue has a sibling on another version band of its product (another cause)
    issue_popularity: float = 0.9  # Zipf exponent s of an issue's weight 1/rank^s among its domain's issues

    # -- the plan
    office_hours: float = 0.85  # a conversation starts in office hours, else at any hour
    office_hours_start: int = 7  # the first hour of office hours ...
    office_hours_length: int = 14  # ... and how many hours they last
    secondary_issue: float = 0.08  # a conversation has a second issue
    secondary_same_product: float = 0.75  # the second issue is on the same product (and band), else another one


@dataclass(frozen=True)
class DialogueRates:
    """The rendering of one conversation (dialogue, course, facts, agent_lines, turns, rendering)."""

    # -- the customer and the values of the conversation
    email_with_number: float = 0.5  # the customer's e-mail address has digits after the name
    us_phone: float = 0.7  # the phone number is American, else British
    product_ref_name: float = 0.5  # a telecom or orders product is called by its name ...
    product_ref_name_or_model: float = 0.7  # ... else, below this, by its model; above, by both
    lowercase_chat_user: float = 0.3  # a chat customer writes all in lower case

    # -- which facts the customer gives, and which one is given wrong first
    says_product: float = 0.95
    says_product_orders: float = 0.9  # an orders customer names the product less often
    says_version: float = 0.75  # when the issue depends on the version
    says_option: float = 0.65  # the OS or plan
    shows_error: float = 0.75  # when the issue has an error code or message
    error_as_message: float = 0.5  # the message rather than the code, when the issue has both
    says_extra: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({
        "order_number": 0.85, "account_number": 0.45, "account_email": 0.5, "payment_method": 0.5,
        "amount": 0.45, "carrier": 0.35}))  # each domain field that applies to the conversation
    correction: float = 0.14  # one fact is said wrong first, then corrected
    wrong_version_other_band: float = 0.6  # a wrong version is from another band, else another patch
    corrected_on_the_spot: float = 0.2  # the correction follows at once, else in the customer's next move

    # -- the opening post
    fact_in_opening: PerChannel = PerChannel(forum=0.75, ticket=0.75, chat=0.35)  # a given fact is in the opening
    error_in_opening_bonus: float = 0.1  # added to fact_in_opening for the error
    later_fact_asked: float = 0.8  # a fact not in the opening is asked for, else volunteered later
    unknown_fact: float = 0.18  # a fact not given is asked for, and the customer does not know it
    product_in_subject: float = 0.7  # the symptom's subject is the product itself
    chat_agent_greets_first: float = 0.6
    chat_user_greets: float = 0.6  # forum and ticket customers always greet
    product_context: float = 0.5  # a sentence of context names the product before the symptom
    chat_gives_name: float = 0.2
    tried_fixes: float = 0.25  # the customer lists two fixes that did not help
    user_question: PerChannel = PerChannel(forum=0.6, ticket=0.6, chat=0.2)  # the opening ends with a question
    ticket_gives_email: float = 0.5
    ticket_gives_phone: float = 0.35
    forum_gives_email: float = 0.08
    forum_gives_phone: float = 0.03
    forum_signoff: float = 0.6

    # -- the agent's questions, chatter, fixes that fail
    chat_two_questions: float = 0.35  # a chat agent asks two questions in one line
    agent_ack_between_questions: float = 0.5
    agent_no_matter: float = 0.5  # the agent answers an "I don't know" with "no matter"
    chatter: float = 0.25  # an off-topic exchange (dropped first when the conversation is too long)
    no_failed_fix: float = 0.5  # no suggestion fails before the fix ...
    at_most_one_failed_fix: float = 0.8  # ... else, below this, one; above, two

    # -- how it ends (a conversation with a second issue is always resolved)
    resolved: float = 0.78
    no_reply: float = 0.09  # beyond the resolved: the customer never answers the fix
    no_reply_or_escalated: float = 0.17  # beyond the resolved; the rest try later
    escalation_ticket_ref: float = 0.6  # a ticket's escalation quotes a ticket reference
    explains_cause_resolved: float = 0.82  # the fix comes with the root cause, when it worked
    explains_cause_otherwise: float = 0.5
    agent_closes: float = 0.7  # a closing line from the agent after the confirmation
    chat_user_closes: float = 0.5  # and the chat customer's answer to it
    agent_answers_try_later: float = 0.5
    chat_agent_follows_up: float = 0.5  # on no reply (forum and ticket agents always follow up)

    # -- the agent's lines
    hello_named: float = 0.6  # a forum or ticket agent greets the customer by name
    opening_ticket_ref: float = 0.5  # a ticket agent's first post quotes a ticket reference
    chat_ack_named: float = 0.25
    ticket_signature: float = 0.9
    forum_signature: float = 0.5
    chat_steps_one_by_one: float = 0.6  # chat steps go one per line, acknowledged, when two or more
    listed_steps: float = 0.7  # forum and ticket steps go as a numbered list, when two or more
    asks_report_back: float = 0.5  # after a numbered list

    # -- a second issue after the first is resolved
    second_same_product_as_it: float = 0.5  # on the same product, called "it"
    second_my_product: float = 0.5  # on another product, called "my <product>"
    second_error_code: float = 0.5
    second_explained: float = 0.5
    second_confirmed: float = 0.8

    # -- turns and noise
    chat_split_turn: float = 0.35  # a chat customer sends one thought as two lines
    typo_move: PerChannel = PerChannel(forum=0.3, ticket=0.1, chat=0.45)  # a customer's move has typos
    agent_typo_move: float = 0.03
    typo_rate_min: float = 0.05  # the share of words misspelled in a move with typos, from the minimum ...
    typo_rate_span: float = 0.1  # ... up to the minimum plus this
    named_speakers: PerChannel = PerChannel(forum=0.35, ticket=0.05, chat=0.08)  # names, not role labels
    chat_agent_full_name: float = 0.5  # a named chat agent signs with an initial (forum and ticket always)


@dataclass(frozen=True)
class QueryRates:
    """The benchmark's queries, written from the world and the plan."""

    # -- the issue and what the query states about it
    by_conversations: float = 0.5  # a query's issue is drawn by its number of conversations, else uniformly
    states_product: float = 0.85  # a query names the product (more facts are added when the issue is ambiguous)
    states_version: float = 0.3  # ... a version of the issue, when it has versions
    states_code: float = 0.3  # ... the error code, when the issue has one
    states_option: float = 0.2  # ... the OS or plan, when the issue has them
    typo_turn: float = 0.12  # a query's turn has typos ...
    typo_rate: float = 0.1  # ... and this share of its words (4+ letters) is misspelled

    # -- which follow-up: thresholds of one draw, cumulative
    followup_version: float = 0.2  # below this, about the issue on the older or newer version ...
    followup_version_or_product: float = 0.4  # ... else, below this, about it on another product ...
    followup_version_product_or_symptom: float = 0.55  # ... else, below this, the symptom last; above, the same issue

    # -- the turns of a follow-up
    agent_greets_first: float = 0.4  # a same-issue follow-up opens with the agent's greeting
    agent_names_cause: float = 0.6  # in an older/newer-version follow-up the agent's turn names the cause
    other_by_name: float = 0.7  # the other product is called by its name, else by its model (when it has one)


@dataclass(frozen=True)
class TypoRates:
    """How a word is misspelled (grammar.add_typos), in conversations and queries alike; how many words are
    misspelled is set by the dialogue and query parts."""

    common_misspelling: float = 0.6  # a word with a common misspelling ("teh", "recieve") gets it, else is garbled
    swap: float = 0.45  # a garbled word has two neighbouring letters swapped (not the last) ...
    swap_or_drop: float = 0.8  # ... else, below this, one letter dropped; above, one letter doubled


@dataclass(frozen=True)
class GeneratorRates:
    """Every probability of the generator, one part per stage."""

    world: WorldRates = WorldRates()
    dialogue: DialogueRates = DialogueRates()
    queries: QueryRates = QueryRates()
    typos: TypoRates = TypoRates()


RATES = GeneratorRates()
