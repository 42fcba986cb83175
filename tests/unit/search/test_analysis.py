"""Text analysis: splitting, casing, stopwords, stemming, scripts without spaces."""

from __future__ import annotations

import pytest

from foldgate.search.analysis import analyze, split_words
from foldgate.search.stem import stem


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("read_text_file", ["read", "text", "file"]),
        ("getHTTPResponse", ["get", "http", "response"]),
        ("listDirectoryWithSizes", ["list", "directory", "with", "sizes"]),
        ("tavily-search", ["tavily", "search"]),
        ("github__create_issue", ["github", "create", "issue"]),
        ("S3Bucket v2", ["s3", "bucket", "v2"]),
        ("ÜBER Straße", ["über", "strasse"]),  # casefold
        ("\uff26\uff35\uff2c\uff2c", ["full"]),  # fullwidth letters: NFKC
        ("地理编码服务", ["地理", "理编", "编码", "码服", "服务"]),  # CJK bigrams
        ("API接口", ["api", "接口"]),
    ],
)
def test_split_words(text: str, words: list[str]) -> None:
    assert split_words(text) == words


def test_analyze_drops_stopwords_and_single_letters_and_stems() -> None:
    assert analyze("Could you please show me the files in a folder?") == ["show", "file", "folder"]
    assert analyze("Creating created creates create") == ["creat"] * 4
    assert analyze("listing lists listed") == ["list"] * 3


def test_analyze_without_stemming_keeps_words() -> None:
    assert analyze("Creating directories", stemming=False) == ["creating", "directories"]


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("caresses", "caress"),
        ("ponies", "poni"),
        ("ties", "tie"),
        ("cats", "cat"),
        ("agreed", "agre"),
        ("hopping", "hop"),
        ("filing", "file"),
        ("relational", "relat"),
        ("generalization", "gener"),
        ("adjustable", "adjust"),
        ("directories", "directori"),
        ("directory", "directori"),
        ("controll", "control"),
        ("news", "news"),  # Porter2 exception: not the plural of "new"
        ("gas", "gas"),  # Porter2 plural rule: no vowel before the letter preceding the s
        ("status", "status"),
        ("it", "it"),
        ("ec2", "ec2"),
    ],
)
def test_porter_stems(word: str, expected: str) -> None:
    assert stem(word) == expected


def test_analysis_is_bounded_on_huge_input() -> None:
    terms = analyze("x" * 100_000 + " " + "word " * 1000)
    assert terms == ["word"] * 1000  # the 100k-letter token is dropped, not kept
