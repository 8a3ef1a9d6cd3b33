"""A written conversation as turns of text: moves bounded, merged or split by channel style, and realized
with the customer's case and typos."""

from __future__ import annotations

from . import phrases as P
from .dialogue import MAX_TURNS, Move, Scene, Script
from .grammar import add_typos, lowercase, tidy


def turns(scene: Scene, script: Script) -> list[tuple[str, str]]:
    """The moves as turns, at most MAX_TURNS: optional moves dropped from the end, a speaker's consecutive
    moves merged (always in forums and tickets), in chat some customer lines split in two."""
    rng, ch = scene.rng, scene.ch
    moves = [m for m in script.moves if not m.empty()]
    # bound the length: drop optional moves from the end, then merge a speaker's consecutive moves
    def count(ms: list[Move]) -> int:
        c, prev = 0, None
        for mv in ms:
            if ch == "chat" or mv.role != prev:
                c += 1
            prev = mv.role
        return c

    if count(moves) < 3:  # too short to be a conversation: the user promises to try
        moves.append(Move("user").say(scene.px(P.TRY_LATER)))
        if script.outcome == "no_reply":
            script.outcome = "later"
    while count(moves) > MAX_TURNS and any(mv.droppable for mv in moves):
        k = max(i for i, mv in enumerate(moves) if mv.droppable)
        moves.pop(k)
    out: list[tuple[str, list]] = []
    merge_all = ch != "chat" or count(moves) > MAX_TURNS
    for mv in moves:
        text = realize(scene, script, mv)
        if out and out[-1][0] == mv.role and merge_all:
            out[-1][1].append(text)
        else:
            out.append((mv.role, [text]))
    sep = " " if ch == "chat" else "\n\n"
    turns = [(role, sep.join(texts)) for role, texts in out]
    # chat: sometimes a user sends one thought as several short lines
    if ch == "chat":
        split: list[tuple[str, str]] = []
        budget = MAX_TURNS - len(turns)
        for role, text in turns:
            parts = text.split(". ")
            if (
                role == "user"
                and budget > 0
                and len(parts) >= 2
                and parts[0].count('"') % 2 == 0
                and rng.random() < scene.rates.chat_split_turn
            ):
                split.append((role, parts[0] + ("" if scene.lower_user else ".")))
                split.append((role, ". ".join(parts[1:])))
                budget -= 1
                script.noise["split_turns"] += 1
            else:
                split.append((role, text))
        turns = split
    return turns

def realize(scene: Scene, script: Script, mv: Move) -> str:
    """One move as text: its sentences joined, in lower case for a lower-case chat customer, with typos."""
    rng, rates = scene.rng, scene.rates
    user = mv.role == "user"
    typo_p = rates.typo_move[scene.ch] if user else rates.agent_typo_move
    typo = mv.noisy and rng.random() < typo_p
    rate = rates.typo_rate_min + rates.typo_rate_span * rng.random()
    chunks: list[str] = []
    prev_sentence = False
    for it in mv.items:
        if isinstance(it, str):
            chunks.append(it)
            prev_sentence = False
            continue
        pieces = it
        if user and scene.lower_user:
            pieces = lowercase(pieces)
        if typo:
            script.noise["typos"] += add_typos(pieces, rng, rate, scene.typos)
        if prev_sentence:
            chunks.append(" ")
        chunks.extend(pieces)
        prev_sentence = True
    text = tidy("".join(chunks))
    if user and scene.lower_user and text.endswith("."):
        text = text[:-1]
    return text
