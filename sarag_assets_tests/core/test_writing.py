"""Counting words in any script (`core/writing.py`)."""

from __future__ import annotations

import unicodedata

import pytest

from sarag_assets.core.writing import words


@pytest.mark.parametrize("text, count", [
    ("हिन्दी में लिखा गया वाक्य", 5),  # Hindi: vowel signs and viramas are parts of their words
    ("तमिल மொழி மிகவும் பழமையானது", 4),  # Devanagari and Tamil
    ("কম্পিউটার চালু হচ্ছে না", 4),  # Bengali
    (unicodedata.normalize("NFD", "Tiếng Việt không dấu"), 4),  # Vietnamese, decomposed as a Mac exports it
    ("great 👍️ thanks", 2),  # an emoji's variation selector is no word
    ("华为P40手机坏了", 4),  # Han: one word per two characters, the code a word of its own
    ("ล้างแคชแล้วติดตั้งแอปใหม่", 7),  # Thai: one word per four code points (6 words: ล้าง แคช แล้ว ติดตั้ง แอป ใหม่)
    ("แอปNimbus5ปิด", 3),  # a name written against Thai is a word of its own
    ("the router drops wifi", 4),
])
def test_a_word_keeps_its_combining_marks(text, count):
    assert words(text) == count
