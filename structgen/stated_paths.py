"""File paths the request states: a path field is one of them, never a path with the sentence run on.

``delete_file`` is destructive, so its ``path`` must be exactly a path the request writes: a grounded
free-text value may be any part of the request, and run 11 wrote ``"/tmp/dump.sql should"`` for "the file
/tmp/dump.sql should go away permanently". A field whose name says it holds a path (``holds_path``: a key
word of ``PATH_WORDS``, ``path``, ``file``, ``filename``, ``folder``; none of ``NOT_PATH_WORDS``,
``file_size``, ``file_type``) is one of the request's **paths** (``stated_paths``): a span of one line that
starts with a word holding a ``/`` or ``\\`` (``/tmp``, ``~/Downloads/...``, ``C:\\Users\\...``,
``./build/...``) and, unless that word has a file extension, ends at the first word with one at most
``MAX_PATH_WORDS`` words on, or the last with a slash (paths hold spaces: ``~/Pictures/Kraków
trip/IMG_0042.jpg``, ``/tmp/budget (copy).xlsx``), or a single file name (``notes.txt``); quotes and
backticks around it and the sentence's punctuation after it
are not part of it. ``ground_schema`` makes such a field a choice of those paths (``structgen.stated_spans``);
a request that writes no path leaves it free text.
"""

from __future__ import annotations

import functools
import re

__all__ = ["holds_path", "stated_paths", "paths_for", "MAX_PATH_WORDS"]

#: the most whitespace-separated words of a path
MAX_PATH_WORDS = 5
#: a key word that says a field holds a file path
PATH_WORDS = frozenset("path filepath file filename folder dir directory".split())
#: a key word that says the value is something about a file, not its path
NOT_PATH_WORDS = frozenset("size count type format extension ext id date time owner url mode".split())

_WORD = re.compile(r"\S+")
_LEAD = "`'\"(\u201c\u2018<"
_TRAIL = "`'\".,;:!?)\u201d\u2019>"
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,5}$")
_ROOT = re.compile(r"(?:/|~|\.{1,2}/|[A-Za-z]:\\)")  # how a path of its own starts
_FILE_NAME = re.compile(r"[\w()\-]*[A-Za-z_][\w()\-]*\.[A-Za-z][A-Za-z0-9]{0,5}")


def holds_path(key: str) -> bool:
    """Whether a property's name says it holds a file path (module doc)."""
    from .proper_names import key_words

    words = set(key_words(key)) if isinstance(key, str) else set()
    return bool(words & PATH_WORDS) and not words & NOT_PATH_WORDS


def _core(line: str, m: re.Match) -> tuple[int, int, str]:
    """A word's span without the quotes before it and the punctuation after it (a closing bracket that
    pairs with one inside the word stays: ``(copy).xlsx``)."""
    a, b = m.span()
    while a < b and line[a] in _LEAD and not (line[a] == "(" and ")" in line[a:b]):
        a += 1
    while b > a and line[b - 1] in _TRAIL and not (line[b - 1] == ")" and "(" in line[a:b - 1]):
        b -= 1
    return a, b, line[a:b]


def _slashed(word: str) -> bool:
    return ("/" in word or "\\" in word) and "://" not in word and any(c.isalnum() for c in word)


@functools.lru_cache(maxsize=256)
def stated_paths(source: str) -> tuple[str, ...]:
    """The paths of ``source`` (module doc), in order: a word with a ``/`` or ``\\`` and an extension is a
    path on its own (``/tmp/dump.sql``); one without runs on to the first word with an extension
    (``/tmp/Résumé José.pdf``, ``~/Pictures/Kraków trip/old invoice.pdf``), else to the last word with a
    slash before another path starts (``/var/log/app``); the words it runs over start no path of their
    own."""
    out: list[str] = []
    for line in source.splitlines():
        words = [_core(line, m) for m in _WORD.finditer(line)]
        inside = -1
        for i, (a, b, first) in enumerate(words):
            if i <= inside:
                continue
            if not _slashed(first):
                if _FILE_NAME.fullmatch(first) and "@" not in first:
                    out.append(first)  # a file name on its own: "notes.txt"
                continue
            end = i
            if not _EXTENSION.search(first):
                for k in range(i + 1, min(i + MAX_PATH_WORDS, len(words))):
                    word = words[k][2]
                    if _ROOT.match(word):
                        break  # another path starts
                    if _EXTENSION.search(word):
                        end = k
                        break
                    if _slashed(word):
                        end = k  # a folder on the way ("Kraków trip/..."): the path goes on
            out.append(line[a:words[end][1]])
            inside = end
    return tuple(dict.fromkeys(p for p in out if p))


def paths_for(key: str, source: str) -> list[str]:
    """The paths of ``source`` that property ``key`` may hold, or ``[]`` when ``key`` holds no path."""
    return list(stated_paths(source)) if holds_path(key) else []
