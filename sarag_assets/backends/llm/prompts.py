"""Instruction texts for the LLM structuring backend (one per call kind). No Dagster imports.

These go into the *system* message only and never contain conversation text, metadata or candidates:
all of that is sent as delimited data in the user message (see `client.build_messages`, which also
appends the notice that whatever sits inside the delimiters is data, never instructions). The output
format is the response model's JSON schema, which instructor sends as a tool or in the prompt (by
mode), so the texts describe meaning and rules, not JSON syntax.

Changing a text changes every cache key built from it: the next run re-asks the model.
"""

from __future__ import annotations

__all__ = [
    "CANDIDATE_SCHEMA",
    "DIALOGUE_GRAPH",
    "PSEUDO_DOCUMENTS",
    "EXTRACT_ROW",
    "GOVERNANCE",
    "JUDGE_ROW",
    "NORMALIZE_COLUMNS",
    "PROPOSE_COLUMNS",
    "SCORE_COLUMNS",
]

_CONTEXT = (
    "You help turn noisy technical-support conversations (forum threads, chat logs, help-desk tickets) "
    "into one table: one row per conversation, with columns chosen for the whole corpus. Speakers are "
    "anonymized (user1, agent1, ...); a turn is shown as `[n] speaker (role): text`."
)

_PROPOSAL_RULES = """\
Propose the columns (usually 3 to 10) that hold the facts someone needs to understand and answer this
kind of problem: the product or component, versions, environment (operating system, device, browser),
error codes and messages, symptoms, the action that triggered the problem, cause, resolution steps,
outcome, dates or amounts when they matter. A good column is reusable: other conversations about similar
problems would fill it too. Do not propose columns for greetings, politeness, the speakers themselves,
personal data (names, e-mail addresses, phone numbers, account numbers) or the conversation's format."""

_NAMING_RULES = """\
Naming and typing rules:
- name: lower snake_case English, specific but reusable (`error_code`, `printer_model`,
  `installation_step`), never containing a value (`error_e42` is wrong). One column per fact: do not
  propose two names for the same thing (`os` and `operating_system`).
- type: exactly one of int, string, float, boolean, date, datetime. Lists, codes, versions and free
  text are string.
- meaning: one sentence saying what the column holds.
- constraints, only when they truly hold for every conversation: allowed_values for a small closed set,
  pattern for a regular expression a string value must fully match (e.g. an error-code format),
  minimum/maximum for numbers, max_length for strings. Leave the rest null."""

_SCORING_RULES = """\
Scores, each a number from 0 to 1:
- relevance: how central the column is to this conversation's problem and its solution
  (1 = the problem cannot be understood without it, 0 = incidental).
- answerability: how well this conversation supplies a value (1 = stated explicitly,
  0.5 = implied or partial, 0 = absent).
- overall: how much the column is worth in the corpus table for conversations like this one;
  mostly relevance, weighted by answerability, lower for columns too narrow to recur.
- justification: one short line."""

CANDIDATE_SCHEMA = f"""\
{_CONTEXT}

Task: read the one conversation in the data block and, in a single answer, propose, normalize and
score candidate columns for the table.

1. problem: the conversation's problem in one sentence (what went wrong, for what, under which
   conditions), without personal data.
2. columns: {_PROPOSAL_RULES}

{_NAMING_RULES}
- note: where the value comes from in the conversation (turn numbers, e.g. "turn 0, user").
- example_value: this conversation's value for the column, verbatim where possible, or null when the
  conversation does not give one.

{_SCORING_RULES}
"""

PROPOSE_COLUMNS = f"""\
{_CONTEXT}

Task: read the one conversation in the data block and propose candidate columns for the table.
{_PROPOSAL_RULES}

For each column give name, type, meaning (one sentence), constraints (only those that truly hold,
else null), note (turn numbers the value comes from) and example_value (this conversation's value,
verbatim where possible, or null).
"""

NORMALIZE_COLUMNS = f"""\
{_CONTEXT}

Task: normalize the list of candidate columns in the data block (JSON), proposed by different
conversations or detectors, so that equal things get equal names and types.
- Rename every column to lower snake_case English; resolve synonyms and spelling variants to one
  name (`OS`, `os_name`, `operating system` → `operating_system`).
- Map every type to exactly one of int, string, float, boolean, date, datetime.
- Columns that mean the same thing become one column: keep the clearest meaning, the constraints that
  hold for all of them, and an example value if any has one.
- Keep every other column, its meaning and its constraints; do not invent new columns or values.

{_NAMING_RULES}
"""

SCORE_COLUMNS = f"""\
{_CONTEXT}

Task: the data block holds one conversation and a list of candidate columns (JSON). Score every listed
column against this conversation, exactly once, using its name exactly as given.

{_SCORING_RULES}
"""

EXTRACT_ROW = f"""\
{_CONTEXT}

Task: fill this conversation's row of the table. The data block holds the conversation and the table's
columns (JSON: name, type, meaning, constraints). Give one entry per column, using its name exactly as
given.
- value: what this conversation states, or directly implies, for the column's meaning; null when it
  does not say. Never guess and never use outside knowledge: unknown is null. A value that is stated
  and later corrected takes the corrected form. Speaker labels (user1, agent1) are never values.
- Write the value in the column's type: int as digits, float as a decimal number, boolean as true or
  false, date as YYYY-MM-DD, datetime as YYYY-MM-DDTHH:MM:SS; strings short and in the conversation's
  own wording. A value must respect the column's allowed values, pattern and limits; if the stated
  fact does not fit them, give null.
- evidence: the shortest verbatim excerpt of the conversation that supports the value (null when the
  value is null).
"""

JUDGE_ROW = f"""\
{_CONTEXT}

Task: check the values of this conversation's extracted row. The data block holds the conversation
and the row (JSON: for each column its type, meaning, the extracted value and the evidence the
extractor cited). Judge every listed column exactly once, using its name exactly as given.
- supported = true only if the conversation states the value, or directly implies it, as the
  column's meaning asks: the fact must really be in the conversation (the cited evidence must appear
  there and actually say it). A value that is invented, guessed, belongs to a different column, is a
  speaker label, or is contradicted or corrected later in the conversation is not supported.
- reason: one line, citing the turn number where the value is (or is not) found.
"""

GOVERNANCE = """\
You govern the metadata M*: the set of columns of one table built from many technical-support
conversations, one row per conversation. M* evolves one conversation at a time. The data block (JSON)
holds the capacity (the maximum number of columns), min_support, the current columns (name, type,
meaning, aliases, support = how many conversations mapped to the column, mean_score), pending concepts
(proposed earlier but not admitted yet, with their support) and the candidate columns one new
conversation proposes, each with its scores (relevance, answerability, overall; 0 to 1).

Decide which operations this conversation's candidates cause. The operations:
- KEEP: a candidate means the same as a current column. columns = [column name]; the column stays as
  it is and gains support.
- EXPAND: a current column is generalized or specialized into a better column that also covers the
  candidate (e.g. `error_code` -> `installation_error_code`). columns = [column name, new name]; the
  new name is the candidate's name or a new lower snake_case name that is not already a column. The
  old name stays as an alias, so values already extracted carry over.
- ADD: the candidate holds a fact no current column covers and is worth a column for the corpus.
  columns = [candidate name], or the name of the pending concept it matches.
- MERGE: two or more current columns of the same type overlap so much that they should be one.
  columns = [merged column names..., surviving column name]; all are current columns. (To fold a
  candidate into a column, use KEEP.)
- DELETE: a current column is redundant and strictly worse than another one that covers it (lower
  support and scores). columns = [column name].

Rules:
- Admit a change (EXPAND, ADD, MERGE, DELETE) only when it improves coverage (more of the facts
  that answer support questions get a column) without hurting compactness (no two columns for the
  same fact, no column so narrow that it fits a single conversation). When in doubt, prefer KEEP or
  leave the candidate out.
- A new concept normally becomes a column only once at least min_support conversations proposed it
  (a matching pending concept's support plus this conversation). A candidate you leave out is not
  lost: it waits among the pending concepts and gains support.
- Never exceed the capacity: the table may never have more than `capacity` columns. Operations apply
  in the order you give them, so at capacity put the DELETE or MERGE that frees a slot before the
  ADD, and do it only when the candidate is clearly better than what it displaces. After an EXPAND,
  refer to that column by its new name.
- Every name in `columns` must be spelled exactly as given in the data (current column, candidate
  or pending concept), except the new name of an EXPAND.
- candidate: the candidate that causes the operation, spelled exactly as given. Each candidate is
  used by at most one KEEP, EXPAND or ADD. A DELETE or MERGE names the candidate that motivates it,
  or null. Do not list current columns that no candidate touches.
- reason: one short line for every operation.
"""


# -- Structured Dialogue Refinement (SDR): pseudo-documents and dialogue graphs ------------------------

PSEUDO_DOCUMENTS = f"""\
{_CONTEXT}

Task: predict the search queries this conversation can answer, from both sides. Users phrase
problems, helpers phrase solutions, so the conversation gets two sets of queries. The data block holds
one conversation.
- issue_queries (3 to 8): what the user needed, written the way a person with the same problem would
  type it into a search box or a help form: the problem statement; the symptom together with the
  product, model, version, operating system, plan or error code it occurs with ("<product> <symptom>",
  "<error code> on <product> <version>"); the user's own questions. Use the facts as corrected later in
  the conversation.
- solution_queries (2 to 8): what resolved the problem or was tried, written so that questions like
  "what fixed X?", "how do I Y?" or "why does X happen?" match them: the step the user confirmed
  worked, the other concrete instructions, the stated cause, actions the helper took (a refund, a
  replacement, an escalation), the answer to an information question, and steps that were tried and
  failed, written as "tried: <step> (did not help)". If nothing was resolved, give what the helper
  said or proposed.
Rules: every query short (at most about 20 words), self-contained (name the product or the problem
instead of "it"), distinct from the others, and only about facts stated in the conversation. No
greetings, thanks, sign-offs or small talk, no speaker labels (user1, agent1), no redaction
placeholders ([EMAIL], [NAME], ...), no personal data.
"""

DIALOGUE_GRAPH = f"""\
{_CONTEXT}

Task: turn this conversation into a dialogue graph of issue-solution units. The data block holds one
conversation; a turn's number is the [n] in front of it.
- nodes, in conversation order, with node_id n0, n1, n2, ...: a unit starts at a user turn that
  expresses an issue or a question (consecutive user turns belong to the same unit) and includes the
  helper's answer to it.
  issue: the user's issue in this unit, in their words, without greetings or thanks.
  answer: the helper's answer to it, in the helper's words, without pleasantries; "" when nobody
  answered (the user moved on or the conversation ended there).
  turn_start, turn_end: the first and the last turn number of the unit (inclusive; existing turns).
  Turns that are only greetings, thanks or small talk are not units of their own: include them in a
  neighbouring unit or leave them out. Every conversation has at least one node.
- edges: source is the later unit, target an earlier one.
  refines: the user narrows or corrects the earlier issue ("actually it's version 2.3", "more
  specifically, only when ...", the same problem restated with a new detail).
  elaborates: the helper expands the earlier solution, typically after the user asks about it ("how
  do I do that?", "where is that setting?", "what do you mean?"), or the helper continues the same
  instructions ("Next, ...").
  A unit that starts a new topic or a second, unrelated issue gets no edge. reason: one short line.
"""
