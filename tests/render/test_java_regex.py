"""AWS's Java patterns run with Python's re: every CreateTrainingJob pattern translates, and reads as Java does."""

from __future__ import annotations

import re

import pytest

from smtrain.render import java_regex
from smtrain.render.java_regex import LIMITS, UnsupportedPattern, fullmatch, translate
from smtrain.render.service_model import OPERATION, service_model

TAG = r"([\p{L}\p{Z}\p{N}_.:/=+\-@]*)"  # TagKey / TagValue in the model


def _create_training_job_patterns() -> list[str]:
    model = service_model()
    names = model.shape_names(model.input_shape(OPERATION))
    return sorted({model.shapes[n]["pattern"] for n in names if "pattern" in model.shapes[n]})


PATTERNS = _create_training_job_patterns()


def test_the_operation_has_patterns_with_the_constructs_python_lacks():
    assert len(PATTERNS) > 20
    assert any(r"\p{L}" in p for p in PATTERNS) and any(r"\p{Alnum}" in p for p in PATTERNS)


@pytest.mark.parametrize("limit", LIMITS)
def test_every_create_training_job_pattern_compiles_after_translation(limit):
    for pattern in PATTERNS:
        translated = translate(pattern, limit)
        assert re.compile(translated, re.ASCII), pattern
        assert java_regex.compiled(pattern, limit) is not None, pattern


@pytest.mark.parametrize(("text", "expected"), [
    ("team", True), ("Équipe d'été", False),  # an apostrophe is not in the class
    ("équipe été", True), ("数据 科学", True), ("x\u3000y", True),  # Zs: the ideographic space
    ("٣٤", True), ("Ⅻ", True),  # Nd and Nl digits are \p{N}
    ("a,b", False), ("emoji 😀", False), ("tab\there", False),  # So, a comma, a control are not
    ("a+b=c@d:e/f_g.h-i", True), ("", True),
])
def test_tag_pattern_reads_unicode_categories_as_java(text, expected):
    assert fullmatch(TAG, text) is expected


def test_sets_are_built_below_the_bound_the_text_needs():
    assert java_regex.bound_for("abc") == 0x80
    assert java_regex.bound_for("é") == 0x10000
    assert java_regex.bound_for("😀") == 0x110000
    # The same verdict from every bound that holds the text.
    for text in ("abc", "a b", "a,b"):
        for limit in LIMITS:
            assert (re.compile(translate(TAG, limit), re.ASCII).fullmatch(text) is not None) is fullmatch(TAG, text)


@pytest.mark.parametrize(("pattern", "text", "expected"), [
    (".*", "a\nb", False), (".*", "a\rb", False), (".*", "a\u2028b", False), ("(?s).*", "a\rb", True),
    ("abc$", "abc", True), ("abc$", "abc\n", False),  # $ may sit before a final terminator; matches() needs all
    (r"abc\z", "abc", True), (r"\w+", "é", False), (r"\d+", "٣", False),  # \w and \d are ASCII in Java
    (r"\p{Alnum}+", "é", False), (r"\p{Alnum}+", "a1", True), (r"\P{L}+", "12", True), (r"\P{L}+", "a", False),
    (r"[a-z&&[^aeiou]]+", "bcd", True), (r"[a-z&&[^aeiou]]+", "bad", False),  # intersection
    (r"[a-c[x-z]]+", "axz", True), (r"[a-c[x-z]]+", "d", False),  # a nested class is a union
    (r"[\uD800\uDC00-\uDBFF\uDFFF]", "😀", True), (r"[\uD800\uDC00-\uDBFF\uDFFF]", "a", False),  # surrogate pairs
    (r"\Qa.b\E", "a.b", True), (r"\Qa.b\E", "axb", False), (r"\x{41}", "A", True), (r"\e", "\x1b", True),
    (r"\v", "\x0b", True), (r"\v", "\n", True), (r"\h", "\xa0", True), (r"\R", "\r\n", True),
    (r"(?<n>ab)\k<n>", "abab", True), (r"(a)\1", "aa", True), (r"x{2}{3}", "xxxxxx", True),
    (r"a(?i)b", "aB", True), (r"a(?i)b", "AB", False), (r"(?i:é)", "É", False),  # case folding is ASCII
    (r"[-0-9a-zA-Z]+", "sg-0abc", True), (r"(?<!-)x", "x", True),
])
def test_java_constructs_read_as_java(pattern, text, expected):
    assert fullmatch(pattern, text) is expected


@pytest.mark.parametrize("pattern", [r"\p{IsLatin}", r"\p{InGreek}", r"\p{IsAlphabetic}", r"(?x)a b", r"\G", r"(a"])
def test_constructs_not_translated_are_refused_not_misread(pattern):
    with pytest.raises(UnsupportedPattern):
        translate(pattern)
    assert fullmatch(pattern, "a") is None
