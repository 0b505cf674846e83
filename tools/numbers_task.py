"""The demo translation task: English number words to German number words.

Every number from 0 to 999 999 has exactly one spelling on each side, and the
German one puts the units before the tens ("twenty one" -> "ein und
zwanzig"), so a model must reorder words through the encoder-decoder
attention to translate it. Words are tokens: one vocabulary word per word,
German spelled with its real letters (UTF-8: "fünf", "dreißig", "zwölf").

Used by tools/train-demo (training data, held-out sets, vocabularies).
"""

import random

SPECIALS = ["<unk>", "<pad>", "<s>", "</s>"]  # ids 0..3: docs/model-format.md's default special ids

EN_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
            "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
            "seventeen", "eighteen", "nineteen"]
EN_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]

DE_UNITS = ["null", "eins", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun",
            "zehn", "elf", "zwölf", "dreizehn", "vierzehn", "fünfzehn", "sechzehn",
            "siebzehn", "achtzehn", "neunzehn"]
DE_TENS = ["", "", "zwanzig", "dreißig", "vierzig", "fünfzig", "sechzig", "siebzig", "achtzig",
           "neunzig"]

LIMIT = 1_000_000


def _en_below_thousand(n):
    words = []
    if n >= 100:
        words += [EN_UNITS[n // 100], "hundred"]
        n %= 100
    if n >= 20:
        words.append(EN_TENS[n // 10])
        n %= 10
        if n:
            words.append(EN_UNITS[n])
    elif n:
        words.append(EN_UNITS[n])
    return words


def english(n):
    """'three hundred twenty one thousand four hundred five' for 321405."""
    if not 0 <= n < LIMIT:
        raise ValueError("number out of range: %d" % n)
    if n == 0:
        return ["zero"]
    words = []
    if n >= 1000:
        words += _en_below_thousand(n // 1000) + ["thousand"]
    return words + _en_below_thousand(n % 1000)


def _de_below_thousand(n, before_noun):
    """A group 1..999; 'ein' rather than 'eins' where a word follows the one
    (hundert, und, tausend): 'ein hundert eins', 'ein und zwanzig tausend'."""
    words = []
    if n >= 100:
        words += ["ein" if n // 100 == 1 else DE_UNITS[n // 100], "hundert"]
        n %= 100
    if n >= 20:
        units = n % 10
        if units:
            words += ["ein" if units == 1 else DE_UNITS[units], "und"]
        words.append(DE_TENS[n // 10])
    elif n == 1:
        words.append("ein" if before_noun else "eins")
    elif n:
        words.append(DE_UNITS[n])
    return words


def german(n):
    """'drei hundert ein und zwanzig tausend vier hundert fünf' for 321405."""
    if not 0 <= n < LIMIT:
        raise ValueError("number out of range: %d" % n)
    if n == 0:
        return ["null"]
    words = []
    if n >= 1000:
        words += _de_below_thousand(n // 1000, True) + ["tausend"]
    if n % 1000:
        words += _de_below_thousand(n % 1000, False)
    return words


def vocabulary(spell):
    """Specials, then every word `spell` uses, sorted: line number = id."""
    words = set()
    for n in list(range(1000)) + [1000 * k for k in range(1, 1000)]:
        words.update(spell(n))
    return SPECIALS + sorted(words)


def random_number(rng):
    """A number whose digit count (1 to 6) is uniform, then uniform among those
    digits: short numbers get as much training as long ones although there
    are far fewer of them."""
    digits = rng.randint(1, 6)
    low = 0 if digits == 1 else 10 ** (digits - 1)
    return rng.randrange(low, 10 ** digits)


def held_out(seed, count_by_digits, exclude=()):
    """Numbers kept out of training, drawn per digit count (so every length is
    tested), sorted by value; none of `exclude`."""
    rng = random.Random(seed)
    chosen = set()
    for digits, count in sorted(count_by_digits.items()):
        low = 0 if digits == 1 else 10 ** (digits - 1)
        picked = set()
        while len(picked) < count:
            n = rng.randrange(low, 10 ** digits)
            if n not in exclude and n not in chosen:
                picked.add(n)
        chosen |= picked
    return sorted(chosen)
