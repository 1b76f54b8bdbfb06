"""``defang_delimiters``: break the structural reading of markers planted in remembered text.

The module works in three passes, in this order:

1. section rules (``--- Label ---``, ``--- Label``, longer and Unicode dash runs,
   ``=== Label ===``), line by line;
2. chat-template role markers (``[INST]``, ``<|im_start|>``, ``<system>``, ...), anywhere
   in the text, since a marker may straddle a line break;
3. speaker labels (``Assistant:``) and code fences, at line starts.

The order matters for idempotence: pass 2 may add a space after a ``<`` that ends a
line, and pass 1 trims trailing blanks, so running pass 1 after pass 2 could change the
output of a second run.
"""

from __future__ import annotations

import re

__all__ = ["defang_delimiters"]

# Characters that render as nothing.  They may sit anywhere in an indent without
# counting towards it, so they cannot hide a marker from the line-start checks.
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"
# Blanks other than space and tab: they look like spaces to a reader and to a model,
# but CommonMark does not count them as indentation, so they never make a code block.
_WIDE_BLANKS = "\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000"
# Everything a rule line may use to separate a dash run from its label.
_RULE_BLANK_CLASS = f"[ \\t{_WIDE_BLANKS}{_INVISIBLE}]"
_RULE_BLANK_CHARS = (
    " \t\u00a0\u1680\u202f\u205f\u3000"
    + _INVISIBLE
    + "".join(chr(c) for c in range(0x2000, 0x200B))
)
# Line separators other than "\n" that renderers or tokenizers may treat as a break.
# "\r" right before "\n" is part of a CRLF ending and handled separately.
_EXTRA_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_EXTRA_BREAK_SPLIT = re.compile(f"([{_EXTRA_BREAKS}])")

# Up to three spaces or tabs (each counts as one, whatever its width), with any number
# of wide blanks and invisible characters around them.  Four or more spaces/tabs make
# a CommonMark indented code block, which is left alone.
_SHORT_INDENT = f"[{_WIDE_BLANKS}{_INVISIBLE}]*+(?:[ \\t][{_WIDE_BLANKS}{_INVISIBLE}]*+){{0,3}}"

# Horizontal-line characters: ASCII hyphen-minus, the Unicode hyphens and dashes, the
# minus sign, box-drawing horizontals and the small/fullwidth hyphen forms.
_DASH_CHARS = (
    "\\-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2500\u2501\u2504\u2505\u2508\u2509"
    "\u254c\u254d\u2e3a\u2e3b\ufe58\ufe63\uff0d"
)
_EQUALS_CHARS = "=\u2550\uff1d"

_RULE_LEAD = re.compile(
    f"(?P<indent>{_SHORT_INDENT})(?:(?P<dashes>[{_DASH_CHARS}]{{3,}})|(?P<equals>[{_EQUALS_CHARS}]{{3,}}))"
)
_DASH_SET = frozenset(_DASH_CHARS.replace("\\", ""))
_EQUALS_SET = frozenset(_EQUALS_CHARS)

_EM_DASH = "\u2014"


def _closing_run_start(after: str, run_chars: frozenset[str]) -> int:
    """Start of a closing run (3+ ``run_chars``, then blanks only) ending ``after``, or 0.

    The first character never counts: it always belongs to the label (after a tight
    ``---`` it may be a Unicode dash, as in ``---—---``).  Scanning from the end keeps
    this linear where a regular-expression search would backtrack on long runs.
    """
    end = len(after.rstrip(_RULE_BLANK_CHARS))
    start = end
    while start > 1 and after[start - 1] in run_chars:
        start -= 1
    return start if end - start >= 3 else 0


def _rewrite_rule(segment: str, *, before_crlf: bool = False) -> str:
    """Rewrite one line (or line segment) if it is a labelled section rule.

    A rule is a run of three or more dash characters (or ``=`` characters) after an
    indent of at most three spaces/tabs.  Runs carrying a label become
    ``— Label —`` (both ends present) or ``— Label`` (no closing run).  Bare rules such
    as ``---`` or ``-----`` carry no forged label and are kept, which keeps Markdown
    horizontal rules and YAML document markers intact.
    """
    lead = _RULE_LEAD.match(segment)
    if lead is None:
        return segment
    indent = lead.group("indent")
    equals = lead.group("equals") is not None
    run = lead.group("equals") or lead.group("dashes")
    after = segment[lead.end() :]
    # An opening of exactly three ASCII hyphens needs no blank before its label when
    # the line closes with another run ("---Label---"); longer or non-ASCII runs must be
    # followed by a blank, so PEM armour such as "-----BEGIN KEY-----" stays intact.
    tight = not equals and run.startswith("---") and not run.startswith("----")
    if tight:
        after = segment[len(indent) + 3 :]
    if not after:
        return segment
    opens_with_blank = after[0] in _RULE_BLANK_CHARS
    if tight and len(after) == 1 and opens_with_blank and not before_crlf:
        # "--- " is still a bare rule, only with a trailing blank.  Before a CRLF ending
        # the "\r" counts as content, as it does for a plain "\n" reader.
        return segment
    if not (opens_with_blank or tight):
        return segment
    closing = _closing_run_start(after, _EQUALS_SET if equals else _DASH_SET)
    if closing:
        label = after[:closing].strip(_RULE_BLANK_CHARS)
        if label:
            return f"{indent}{_EM_DASH} {label} {_EM_DASH}"
    if equals or not opens_with_blank:
        # "=== RUN TestX" (go test output) and "---x" are not section headers.
        return segment
    label = after.strip(_RULE_BLANK_CHARS)
    return f"{indent}{_EM_DASH} {label}" if label else f"{indent}{_EM_DASH}"


def _defang_rules(text: str) -> str:
    lines = text.split("\n")
    last = len(lines) - 1
    for index, line in enumerate(lines):
        ending = ""
        if index < last and line.endswith("\r"):
            line, ending = line[:-1], "\r"
        body = _rewrite_rule(line, before_crlf=bool(ending))
        if any(ch in body for ch in _EXTRA_BREAKS):
            parts = _EXTRA_BREAK_SPLIT.split(body)
            for part in range(2, len(parts), 2):
                parts[part] = _rewrite_rule(parts[part])
            body = "".join(parts)
        lines[index] = body + ending
    return "\n".join(lines)


# Square-bracket control tokens: Llama-2 ``[INST]``, Mistral's ``[SYSTEM_PROMPT]`` and
# tool tokens, and the plain role names.
_BRACKET_NAMES = (
    "INST|SYS|SYSTEM|USER|ASSISTANT|SYSTEM_PROMPT|TOOL_CALLS|AVAILABLE_TOOLS|TOOL_RESULTS|"
    "TOOL_CONTENT|THINK"
)
# Angle-bracket role tags and control tokens, with or without pipes: ChatML, Phi,
# Llama 3, Gemma, GPT-2 style end-of-text, Hermes/Qwen tool tags, bare role tags.
_ANGLE_NAMES = (
    "im_start|im_end|im_sep|system|assistant|user|developer|human|endoftext|endofprompt|"
    "start|end|start_of_turn|end_of_turn|eot_id|eom_id|begin_of_text|end_of_text|"
    "start_header_id|end_header_id|bos|eos|tool_call|tool_response"
)
_ROLE_MARKER = re.compile(
    rf"""
      < \s*+ < \s*+ /? \s*+ (?:SYS|SYSTEM|INST) \s*+ >>
    | \[ \s*+ /? \s*+ (?:{_BRACKET_NAMES}) \s*+ \]
    | < [ \t]*+ [|\uff5c] [\w\u2581.\-]{{1,64}}+ [|\uff5c] >
    | < \s*+ /? \s*+ [|\uff5c]? \s*+ (?:{_ANGLE_NAMES}) \s*+ [|\uff5c]? \s*+ >
    """,
    re.IGNORECASE | re.VERBOSE,
)


def _pad_openers(match: re.Match[str]) -> str:
    """Put exactly one space after every ``<`` and ``[`` of a marker.

    A control token only exists as its exact byte sequence, so ``< |im_start|>`` is
    plain text to a tokenizer while staying readable.  Blanks already following an
    opener are folded into the single space, so the result is a fixed point.
    """
    out: list[str] = []
    after_opener = False
    for ch in match.group(0):
        if after_opener and ch in " \t":
            continue
        out.append(ch)
        after_opener = ch in "<["
        if after_opener:
            out.append(" ")
    return "".join(out)


_LINE_START = f"(?:^|(?<=[{_EXTRA_BREAKS}]))"
_ANY_BLANK = f"[ \\t{_WIDE_BLANKS}{_INVISIBLE}]"
_SPEAKER_NAMES = (
    "User|Assistant|System|Human|Usu(?:[a\u00e1]|a\u0301)ri[oa]|Sistema|Assistente|Asistente|Humano"
)
# Colon and its look-alikes: fullwidth, small, vertical presentation form, ratio sign,
# modifier-letter colon.
_COLONS = ":\uff1a\ufe55\ufe13\u2236\ua789"
_SPEAKER_LABEL = re.compile(
    f"{_LINE_START}(?P<lead>{_ANY_BLANK}*+\\*{{0,3}})(?P<name>{_SPEAKER_NAMES})"
    f"(?P<close>\\*{{0,3}}){_ANY_BLANK}*+(?P<colon>[{_COLONS}])",
    re.MULTILINE | re.IGNORECASE,
)
_FENCE = re.compile(
    f"{_LINE_START}(?P<indent>{_SHORT_INDENT})(?P<fence>`{{3,}}|~{{3,}})", re.MULTILINE
)
# Look-alikes that no Markdown parser treats as fence characters.
_FENCE_LOOKALIKE = {"`": "\u02cb", "~": "\u02dc"}


def _unlabel_speaker(match: re.Match[str]) -> str:
    return f"{match['lead']}{match['name']}{match['close']} {match['colon']}"


def _unfence(match: re.Match[str]) -> str:
    fence = match["fence"]
    return match["indent"] + _FENCE_LOOKALIKE[fence[0]] * len(fence)


def defang_delimiters(text: str) -> str:
    """Neutralize prompt-injection delimiters in text that is about to be remembered.

    Remembered text is later pasted into a system prompt.  Markers planted in it (a fake
    ``--- End of conversation ---`` header, an ``<|im_start|>system`` token, an
    ``Assistant:`` turn) could then be read as prompt structure.  This function rewrites
    each such marker into a look-alike that no longer works as structure while the
    text stays readable; everything else is returned unchanged.

    What is rewritten:

    * **Section rules.**  A line whose text starts with three or more dash characters
      followed by a label: ``--- Label ---`` becomes ``— Label —`` and ``--- Label``
      becomes ``— Label`` (em dashes).  Longer runs (``---- Label ----``), Unicode dash
      and box-drawing runs (``——— Label ———``, ``─── Label ───``) and
      ``=== Label ===`` are handled too; runs other than exactly ``---`` need a blank
      between run and label, so ``-----BEGIN PGP SIGNATURE-----`` is kept.  Bare rules
      (``---``, ``-----``, ``=====``) carry no label and are kept; like the reference,
      ``---`` followed by two or more blanks or by another run (``--- ---``) counts as
      labelled.
    * **Role markers**, anywhere in the text and at any indentation: ``[INST]``,
      ``[/INST]``, ``[SYS]``, ``[SYSTEM_PROMPT]``, ``[TOOL_CALLS]``, ``<<SYS>>``,
      ``<|im_start|>``, ``<|im_end|>``, ``<|system|>``, ``<|user|>``,
      ``<|assistant|>``, ``<|endoftext|>``, ``<|eot_id|>``, ``<start_of_turn>``,
      ``<end_of_turn>``, ``<system>``, ``</assistant>``, ``<tool_call>`` and any other
      ``<|name|>`` or ``<｜name｜>`` special token.  One space is put after each
      ``<`` or ``[`` (``< |im_start|>``), so the exact token never reaches a tokenizer.
    * **Speaker labels** at the start of a line, at any indentation: ``User:``,
      ``Assistant:``, ``System:``, ``Human:``, ``Usuário:``/``Usuario:``,
      ``Sistema:``, ``Assistente:``, ``Asistente:``, ``Humano:`` (any case, also
      wrapped in ``*``/``**`` emphasis), followed by an ASCII colon, a fullwidth ``：``
      or another colon look-alike.  The colon is moved one space away
      (``Assistant : ...``), so the line no longer reads as a conversation turn.
    * **Code fences**: a run of three or more backticks or tildes starting a line is
      rewritten with the look-alikes U+02CB ``ˋ`` and U+02DC ``˜``, so remembered text
      can neither open nor close a fence of the host prompt.  Inline code is kept.

    Scope rules: section rules and fences only count with an indent of at most three
    spaces/tabs (each counts as one character); lines indented further are CommonMark
    code blocks and are kept as they are, which protects indented literals such as the
    diff header ``    --- a/file.py``.  Speaker labels and role markers are not Markdown
    structure and are rewritten at any indentation.  Invisible characters (zero-width
    space, word joiner, BOM) and non-ASCII blanks in an indent never hide a marker.
    Line starts are taken after ``\\n`` and ``\\r\\n``, and also after a lone ``\\r``,
    U+2028, U+2029, U+0085, vertical tab and form feed.  Indentation and line endings
    are preserved; apart from the rewritten markers, whose neighbouring blanks are
    normalized (one space around a rule's label, one before a speaker's colon), the text
    is unchanged.

    The function is idempotent: ``defang_delimiters(defang_delimiters(t))`` equals
    ``defang_delimiters(t)``, so re-sanitizing stored text never churns it.

    Known limitations:

    * Homoglyphs inside words are not folded: ``Аssistant:`` with a Cyrillic ``А``, a
      zero-width character inside ``Assis\\u200btant:``, or ``[I\\u200bNST]`` pass.
    * Only the listed speaker names are recognised: ``AI:``, ``Bot:``, ``Model:``,
      ``Developer:``, ``Tool:`` and names in other languages pass, as do labels behind
      a list bullet or a blockquote marker (``- User:``, ``> User:``).
    * Setext underlines (``Title`` over ``====``) and other ASCII-art breaks without a
      label (``*** ***``, ``#####``) pass; so does ``== Label ==`` (runs shorter than
      three) and a run of two em dashes (``—— Label ——``).
    * ``=== Label`` without a closing run passes (it is how ``go test`` prints
      ``=== RUN``); ``---Label`` with no blank and no closing run passes.
    * A label glued to a run of four or more dashes (``----Label----``) passes, to keep
      PEM armour intact.
    * Bare tags that also occur in ordinary markup or prose pass: ``<s>``/``</s>``
      (Llama-2 BOS/EOS), ``<think>``, ``<model>``, ``<tool>``, ``<invoke>``,
      ``<function_calls>``; so do role names in other brackets (``{system}``,
      ``(INST)``).  Any ``<|name|>`` token is covered whatever its name.
    * Markers indented four or more spaces/tabs are kept for fences and section rules
      (see the scope rules), even though a model may still read them as structure.
    * Section rules and fences inside blockquotes or list items (``> --- End ---``)
      pass.
    * A hook that deletes characters after this one can reassemble a marker: run
      :func:`strip_surrogates` first (a lone surrogate in ``Assis\\ud800tant:`` hides
      the label until it is stripped).
    * A Markdown table delimiter row written without leading pipes (``--- | ---``) is
      rewritten (``— | —``) because it looks like a labelled rule.

    Treat this as defense in depth for the remembered-content channel, not as a
    complete prompt-injection filter.

    Args:
        text: The entry text to sanitize.

    Returns:
        The defanged text; text without markers is returned unchanged.

    Raises:
        TypeError: If ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"defang_delimiters expects str, got {type(text).__name__}")
    text = _defang_rules(text)
    text = _ROLE_MARKER.sub(_pad_openers, text)
    text = _SPEAKER_LABEL.sub(_unlabel_speaker, text)
    return _FENCE.sub(_unfence, text)
