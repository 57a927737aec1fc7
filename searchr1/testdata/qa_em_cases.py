#!/usr/bin/env python3
"""Expected values of Search-R1's answer checks, computed with CPython's own str and re.

Search-R1 scores answers with verl/utils/reward_score/qa_em.py: normalize_answer (lower
case, no string.punctuation, re.sub(r"\\b(a|an|the)\\b", " ", ...), " ".join(s.split())),
em_check and subem_check. The functions below restate that code; F1 is SQuAD's token F1
over the same normalisation (the original file has none; searchr1.TokenF1 documents the
rule used when a side is empty). Everything that decides a result here is CPython's:
str.lower (full case mapping, final sigma), re's Unicode \\b, str.split's whitespace.

It writes two golden files, read by the Go tests of package searchr1 and internal/qa:

  qa_em_cases.golden.json    cases: prediction, golden answers, their normalised forms,
                             EM, SubEM and F1
  qa_em_unicode.golden.json  per code point, what the normalisation depends on: \\w,
                             str.isspace, lower() where it changes a character, and the
                             character classes of the final-sigma rule (measured through
                             lower() itself), over every assigned code point

Usage: python3 qa_em_cases.py [OUTDIR]   (default: the folder of this script)

The output depends only on the Python version's Unicode database (recorded in both files:
"unicode"); the Go test that reruns this script skips when the local python3 has another.
"""
import json
import os
import re
import string
import sys
import unicodedata
from collections import Counter


def normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def em_check(prediction, golden_answers):
    p = normalize_answer(prediction)
    return int(any(normalize_answer(g) == p for g in golden_answers))


def subem_check(prediction, golden_answers):
    p = normalize_answer(prediction)
    return int(any(normalize_answer(g) in p for g in golden_answers))


def token_f1(prediction, golden_answers):
    pred = normalize_answer(prediction).split()
    best = 0.0
    for g in golden_answers:
        gold = normalize_answer(g).split()
        if not pred or not gold:
            f = 1.0 if len(pred) == len(gold) else 0.0
        else:
            same = sum((Counter(pred) & Counter(gold)).values())
            if same == 0:
                f = 0.0
            else:
                precision = 1.0 * same / len(pred)
                recall = 1.0 * same / len(gold)
                f = (2 * precision * recall) / (precision + recall)
        best = max(best, f)
    return best


def is_surrogate(cp):
    return 0xD800 <= cp <= 0xDFFF


ALL = [chr(cp) for cp in range(0x110000) if not is_surrogate(cp)]
SPACES = [c for c in ALL if c.isspace()]

# Characters around the articles: every kind of word and non-word character \b looks at.
NEIGHBOURS = [
    "x", "Z", "5", "_", "é", "É", "ß", "ǅ", "ʰ", "中", "٣", "²", "Ⅻ", "〇", "\u0301", "\u0903",
    "\u20dd", "\u200b", "\u200d", "\ufeff", "-", "'", "’", ".", "·", "\u00a0", "\u3000",
    "\x1c", "\x1f", "\x85", "\u2028", "\u180e", "\U0001d7ce", "\U00010400", "😀", "ａ",
    "\u0660", "\u2160", "\u00bd", "\u02c6", "\u3005", "\u16ee",
]
ARTICLES = ["a", "an", "the", "The", "AN", "thé"]


def cases():
    out = []

    def add(pred, golds):
        out.append((pred, golds))

    # 1. Word boundaries: articles next to every kind of character, both sides.
    for w in ARTICLES:
        for n in NEIGHBOURS:
            add(n + w + " x", ["x"])
            add("x " + w + n, ["x"])
            add(n + w + n, [n + n])
    # 2. Every Python whitespace character (and look-alikes that are not), inside and
    #    around an answer, with and without articles.
    for ws in SPACES + ["\u180e", "\u200b", "\u2060", "\ufeff", "\x00", "\x7f", "\x1b"]:
        add("the" + ws + "Eiffel" + ws + "Tower" + ws, ["Eiffel Tower"])
        add(ws + "a" + ws + ws + "b" + ws, ["b"])
        add("New" + ws + "York", ["new york", "NY"])
    # 3. Case mappings: Python's full lowercase and final sigma.
    for pred, golds in [
        ("İstanbul", ["istanbul"]), ("İstanbul", ["i̇stanbul"]), ("İ", ["i"]), ("İ", ["i̇"]),
        ("ΟΔΟΣ", ["οδος"]), ("ΟΔΟΣ", ["οδοσ"]), ("ΣΑΣ ΣΑΣ", ["σας σας"]), ("Σ", ["σ"]),
        ("AΣ", ["aς"]), ("AΣ'", ["aς"]), ("AΣ'B", ["aσb"]), ("A'Σ", ["aς"]), ("'Σ", ["σ"]),
        ("1Σ", ["1σ"]), ("AΣ\u0301", ["aς\u0301"]), ("AΣ\u0301B", ["aσ\u0301b"]),
        ("A\u0301Σ", ["a\u0301ς"]), ("ʰΣ", ["ʰσ"]), ("ǅΣ", ["ǆς"]), ("ΣΣ", ["σς"]),
        ("ΑΣ.", ["ας"]), ("ΑΣ·Β", ["ασ·β"]), ("ΑΣ\u00adΒ", ["ασ\u00adβ"]), ("ᾼΣ", ["ᾳς"]),
        ("ẞ", ["ß"]), ("ẞ", ["ss"]), ("\u212a", ["k"]), ("\u2126", ["ω"]), ("\u212b", ["å"]),
        ("ǅ", ["ǆ"]), ("ᾼ", ["ᾳ"]), ("Ꭰ", ["ꭰ"]), ("Ა", ["ა"]), ("𐐀", ["𐐨"]), ("I", ["ı"]),
        ("ı", ["i"]), ("ﬀ", ["ff"]), ("Ⅻ", ["ⅻ"]), ("Ⓐ", ["ⓐ"]), ("ＡＢ", ["ａｂ"]),
        ("THE İ", ["i̇"]), ("AN İ", ["i"]), ("Ⱥ", ["ⱥ"]), ("Ɐ", ["ɐ"]),
    ]:
        add(pred, golds)
    # 4. Punctuation: ASCII only (string.punctuation); other punctuation stays.
    for pred, golds in [
        ("«the» answer", ["« » answer"]), ("the—answer", ["—answer"]), ("the’s", ["’s"]),
        ("the's", ["thes"]), ("a.b.c", ["abc"]), ("¿the?", ["¿"]), ("(a) (an) (the)", [""]),
        ("\"Paris\"", ["paris"]), ("l'an", ["lan"]), ("rock-n-roll", ["rocknroll"]),
        ("3.14", ["314"]), ("a_b", ["a_b"]), ("_the_", ["the"]), ("the_", ["the"]),
    ]:
        add(pred, golds)
    # 5. EM, SubEM and F1 over several golden answers, empty ones included.
    for pred, golds in [
        ("the Eiffel Tower in Paris", ["Eiffel Tower", "Paris"]),
        ("Paris", ["the city of Paris", "paris france"]), ("", [""]), ("", ["x"]),
        ("x", [""]), ("x", []), ("a", [""]), ("the the the", ["a"]),
        ("cat cat dog", ["cat dog dog", "cat"]), ("New York City", ["new york", "york city"]),
        ("Barack Obama", ["Obama", "Barack Hussein Obama II"]), ("aé", ["é"]), ("é", ["aé"]),
        ("éthe", ["é"]), ("the é", ["é"]), ("1 the 2", ["1 2"]), ("an\u0301", ["\u0301"]),
        ("de la Cruz", ["De La Cruz"]), ("Ἀθῆναι", ["ἀθῆναι"]), ("ΜΆΙΟΣ", ["μάιος"]),
    ]:
        add(pred, golds)
    return out


def ranges(pred):
    """[[lo, hi], ...] of the code points (surrogates excluded) where pred holds."""
    out = []
    for c in ALL:
        cp = ord(c)
        if pred(c):
            if out and out[-1][1] == cp - 1:
                out[-1][1] = cp
            elif out and out[-1][1] == 0xD7FF and cp == 0xE000:
                out[-1][1] = cp
            else:
                out.append([cp, cp])
    return out


def unicode_tables():
    word = re.compile(r"\w")
    # Final sigma: (c + "Σ") ends in ς exactly when c stops the backward scan and is cased;
    # ("A" + c + "Σ") ends in ς when c is cased or skipped (case-ignorable).
    cased_stop = lambda c: (c + "Σ").lower().endswith("ς")
    cased_or_skipped = lambda c: ("A" + c + "Σ").lower().endswith("ς")
    return {
        "unicode": unicodedata.unidata_version,
        "assigned": ranges(lambda c: unicodedata.category(c) != "Cn"),
        "word": ranges(lambda c: word.match(c) is not None),
        "space": ranges(str.isspace),
        "sigma_cased": ranges(cased_stop),
        "sigma_ignorable": ranges(lambda c: cased_or_skipped(c) and not cased_stop(c)),
        "lower": [[ord(c), c.lower()] for c in ALL if c.lower() != c],
    }


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rows = []
    for pred, golds in cases():
        rows.append({
            "prediction": pred, "golds": golds,
            "norm_prediction": normalize_answer(pred), "norm_golds": [normalize_answer(g) for g in golds],
            "em": em_check(pred, golds), "subem": subem_check(pred, golds), "f1": token_f1(pred, golds),
        })
    with open(os.path.join(outdir, "qa_em_cases.golden.json"), "w", encoding="ascii") as f:
        f.write("{\"unicode\": %s, \"cases\": [\n" % json.dumps(unicodedata.unidata_version))
        f.write(",\n".join(json.dumps(r, ensure_ascii=True, sort_keys=True) for r in rows))
        f.write("\n]}\n")
    tables = unicode_tables()
    with open(os.path.join(outdir, "qa_em_unicode.golden.json"), "w", encoding="ascii") as f:
        f.write("{\n")
        keys = list(tables)
        for i, k in enumerate(keys):
            f.write("%s: %s%s\n" % (json.dumps(k), json.dumps(tables[k], ensure_ascii=True), "," if i < len(keys) - 1 else ""))
        f.write("}\n")


if __name__ == "__main__":
    main()
