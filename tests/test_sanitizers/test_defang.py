"""defang_delimiters, rule by rule."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsmemory.sanitizers import defang_delimiters as defang

EM = "\u2014"


# --- section rules -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("--- End of conversation ---", f"{EM} End of conversation {EM}"),
        ("---Label---", f"{EM} Label {EM}"),
        ("---\tLabel\t---", f"{EM} Label {EM}"),
        ("--- Label---", f"{EM} Label {EM}"),
        ("--- Label ---   ", f"{EM} Label {EM}"),
        ("--- x --- y ---", f"{EM} x --- y {EM}"),
    ],
)
def test_full_section_header(text: str, expected: str) -> None:
    assert defang(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("--- End of conversation", f"{EM} End of conversation"),
        ("--- a/file.py", f"{EM} a/file.py"),
        ("---\tLabel", f"{EM} Label"),
        ("--- Label\t", f"{EM} Label"),
        ("--- -x", f"{EM} -x"),
    ],
)
def test_half_section_header(text: str, expected: str) -> None:
    assert defang(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("---- Label ----", f"{EM} Label {EM}"),
        ("---------- Forwarded message ---------", f"{EM} Forwarded message {EM}"),
        ("---- Label", f"{EM} Label"),
        ("--- Label ------", f"{EM} Label {EM}"),
    ],
)
def test_dash_runs_longer_than_three(text: str, expected: str) -> None:
    assert defang(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "\u2014\u2014\u2014 Label \u2014\u2014\u2014",  # em dashes
        "\u2013\u2013\u2013 Label \u2013\u2013\u2013",  # en dashes
        "\u2500\u2500\u2500 Label \u2500\u2500\u2500",  # box drawing
        "\u2501\u2501\u2501\u2501 Label \u2501\u2501\u2501\u2501",
        "\uff0d\uff0d\uff0d Label \uff0d\uff0d\uff0d",  # fullwidth hyphen-minus
        "=== Label ===",
        "\u2550\u2550\u2550 Label \u2550\u2550\u2550",
    ],
)
def test_unicode_and_equals_runs(text: str) -> None:
    assert defang(text) == f"{EM} Label {EM}"


@pytest.mark.parametrize(
    "text",
    [
        "---",
        "--- ",
        "-----",
        "===",
        "\u2014\u2014\u2014",
        "- - -",
        "---x",
        "----Label----",
        "-----BEGIN PGP SIGNATURE-----",
        "=== RUN   TestFoo",
        "\u2014\u2014 two em dashes",
        "-- two hyphens --",
        "text --- in the middle ---",
    ],
)
def test_rules_without_a_label_or_not_at_line_start_are_kept(text: str) -> None:
    assert defang(text) == text


def test_yaml_front_matter_is_kept() -> None:
    text = "---\ntitle: x\n---\nbody"
    assert defang(text) == text


def test_rules_with_a_blank_only_tail_are_rewritten_like_the_reference() -> None:
    # The reference treats "--- ---" and "---" plus two blanks as labelled rules.
    assert defang("--- ---") == f"{EM} ---"
    assert defang("---  ") == EM


# --- indentation scope ----------------------------------------------------------------


@pytest.mark.parametrize("indent", ["", " ", "  ", "   ", "\t", "\t\t", "\t\t\t", " \t "])
def test_rules_and_fences_with_up_to_three_blanks_are_rewritten(indent: str) -> None:
    assert defang(f"{indent}--- X ---") == f"{indent}{EM} X {EM}"
    assert defang(f"{indent}--- X") == f"{indent}{EM} X"
    assert defang(f"{indent}```py") == f"{indent}\u02cb\u02cb\u02cbpy"
    assert defang(f"{indent}~~~") == f"{indent}\u02dc\u02dc\u02dc"


@pytest.mark.parametrize("indent", ["    ", "\t\t\t\t", "  \t\t", "        ", "     "])
def test_rules_and_fences_with_four_or_more_blanks_are_kept(indent: str) -> None:
    for text in (f"{indent}--- X ---", f"{indent}--- a/file.py", f"{indent}```", f"{indent}~~~"):
        assert defang(text) == text


@pytest.mark.parametrize("indent", ["", "   ", "    ", "\t\t\t\t\t", "          "])
def test_role_markers_and_speaker_labels_at_any_indentation(indent: str) -> None:
    assert defang(f"{indent}Assistant: x") == f"{indent}Assistant : x"
    assert defang(f"{indent}[INST] x") == f"{indent}[ INST] x"
    assert defang(f"{indent}<|im_start|>system") == f"{indent}< |im_start|>system"


def test_invisible_and_wide_blank_prefixes_do_not_hide_markers() -> None:
    assert defang("\u200b--- X ---") == f"\u200b{EM} X {EM}"
    assert defang("\ufeff```") == "\ufeff\u02cb\u02cb\u02cb"
    assert defang("\u00a0" * 6 + "--- X") == "\u00a0" * 6 + f"{EM} X"
    assert defang("\u200bAssistant: x") == "\u200bAssistant : x"
    assert defang("\u3000System: x") == "\u3000System : x"


def test_diff_headers_in_an_indented_block_survive() -> None:
    text = "Patch:\n\n    --- a/file.py\n    +++ b/file.py\n    @@ -1 +1 @@"
    assert defang(text) == text


# --- role markers ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[INST]", "[ INST]"),
        ("[/INST]", "[ /INST]"),
        ("[inst]", "[ inst]"),
        ("[SYS]", "[ SYS]"),
        ("[/SYS]", "[ /SYS]"),
        ("[SYSTEM]", "[ SYSTEM]"),
        ("[USER]", "[ USER]"),
        ("[ASSISTANT]", "[ ASSISTANT]"),
        ("[  INST]", "[ INST]"),
        ("[/ INST]", "[ / INST]"),
        ("<<SYS>>", "< < SYS>>"),
        ("<</SYS>>", "< < /SYS>>"),
        ("<< SYS >>", "< < SYS >>"),
    ],
)
def test_llama2_markers(text: str, expected: str) -> None:
    assert defang(text) == expected


@pytest.mark.parametrize(
    "name",
    ["im_start", "im_end", "system", "user", "assistant", "endoftext", "start", "end", "im_sep"],
)
def test_chatml_style_markers(name: str) -> None:
    assert defang(f"<|{name}|>") == f"< |{name}|>"
    assert defang(f"<{name}>") == f"< {name}>"
    assert defang(f"<|{name}>") == f"< |{name}>"
    assert defang(f"<| {name} |>") == f"< | {name} |>"


@pytest.mark.parametrize("name", ["system", "assistant", "user", "developer", "human"])
def test_xml_role_tags(name: str) -> None:
    assert defang(f"<{name}>x</{name}>") == f"< {name}>x< /{name}>"
    assert defang(f"<{name.upper()}>") == f"< {name.upper()}>"


def test_gemma_markers() -> None:
    text = "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n"
    expected = "< start_of_turn>user\nhi< end_of_turn>\n< start_of_turn>model\n"
    assert defang(text) == expected
    assert defang("<bos><eos>") == "< bos>< eos>"


@pytest.mark.parametrize(
    "token",
    [
        "<|eot_id|>",
        "<|begin_of_text|>",
        "<|start_header_id|>",
        "<|END_OF_TURN_TOKEN|>",
        "<|channel|>",
        "<|python_tag|>",
        "<\uff5cUser\uff5c>",
        "<\uff5cend\u2581of\u2581sentence\uff5c>",
    ],
)
def test_any_pipe_special_token(token: str) -> None:
    assert defang(token) == "< " + token[1:]


@pytest.mark.parametrize(
    "token", ["[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]"]
)
def test_mistral_markers(token: str) -> None:
    assert defang(token) == "[ " + token[1:]


def test_tool_call_tags() -> None:
    assert defang("<tool_call>{}</tool_call>") == "< tool_call>{}< /tool_call>"


def test_role_marker_spanning_a_line_break() -> None:
    assert defang("[\nINST]") == "[ \nINST]"
    assert defang("<\nsystem>") == "< \nsystem>"


@pytest.mark.parametrize(
    "text",
    ["a < b and c > d", "<div>", "[link](x)", "<|>", "f <| x |> g", "[instance]", "<s>", "<think>"],
)
def test_ordinary_brackets_are_kept(text: str) -> None:
    assert defang(text) == text


# --- speaker labels -------------------------------------------------------------------

SPEAKERS = [
    "User",
    "Assistant",
    "System",
    "Human",
    "Usu\u00e1rio",
    "Usuario",
    "Usu\u00e1ria",
    "Sistema",
    "Assistente",
    "Asistente",
    "Humano",
]


@pytest.mark.parametrize("name", SPEAKERS)
@pytest.mark.parametrize("colon", [":", "\uff1a"])
def test_speaker_labels(name: str, colon: str) -> None:
    assert defang(f"{name}{colon} do it") == f"{name} {colon} do it"
    assert defang(f"{name.upper()}{colon}x") == f"{name.upper()} {colon}x"
    assert defang(f"{name.lower()} \t {colon} x") == f"{name.lower()} {colon} x"
    assert defang(f"intro\n{name}{colon} x") == f"intro\n{name} {colon} x"


def test_speaker_label_with_decomposed_accent() -> None:
    assert defang("Usua\u0301rio: x") == "Usua\u0301rio : x"


@pytest.mark.parametrize("colon", ["\ufe55", "\ufe13", "\u2236", "\ua789"])
def test_speaker_label_with_colon_lookalikes(colon: str) -> None:
    assert defang(f"Assistant{colon} x") == f"Assistant {colon} x"


def test_speaker_label_in_emphasis() -> None:
    assert defang("**Assistant:** forged") == "**Assistant :** forged"
    assert defang("**User**: forged") == "**User** : forged"
    assert defang("*System*\uff1a x") == "*System* \uff1a x"


@pytest.mark.parametrize("sep", ["\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c"])
def test_speaker_labels_after_other_line_breaks(sep: str) -> None:
    assert defang(f"a{sep}Assistant: x") == f"a{sep}Assistant : x"


@pytest.mark.parametrize(
    "text",
    [
        "Username: alice",
        "The user: x",
        "Users: 3",
        "SuperUser: x",
        "Assistant manager: Bob",
        "System32: dir",
        "Humanity: x",
        "Assistant says hi",
    ],
)
def test_non_labels_are_kept(text: str) -> None:
    assert defang(text) == text


# --- fences ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("```", "\u02cb\u02cb\u02cb"),
        ("```python", "\u02cb\u02cb\u02cbpython"),
        ("````", "\u02cb\u02cb\u02cb\u02cb"),
        ("~~~", "\u02dc\u02dc\u02dc"),
        ("~~~~ md", "\u02dc\u02dc\u02dc\u02dc md"),
        ("x\n```\ny", "x\n\u02cb\u02cb\u02cb\ny"),
        ("x\r\n```\r\n", "x\r\n\u02cb\u02cb\u02cb\r\n"),
        ("x\r```", "x\r\u02cb\u02cb\u02cb"),
    ],
)
def test_fences(text: str, expected: str) -> None:
    assert defang(text) == expected


@pytest.mark.parametrize("text", ["``", "~~", "inline ``` fence", "a `b` c", "~~strike~~"])
def test_inline_code_is_kept(text: str) -> None:
    assert defang(text) == text


# --- whole texts ----------------------------------------------------------------------


def test_crlf_endings_are_preserved() -> None:
    text = "--- End ---\r\nAssistant: ok\r\n```\r\n"
    expected = f"{EM} End {EM}\r\nAssistant : ok\r\n\u02cb\u02cb\u02cb\r\n"
    assert defang(text) == expected


def test_plain_prose_is_returned_unchanged() -> None:
    text = "Prefers dark mode.\nTimezone: PST\n\n- item\n  - nested\n\n| a | b |\n|---|---|"
    assert defang(text) == text


def test_empty_text() -> None:
    assert defang("") == ""


def test_rejects_non_str() -> None:
    with pytest.raises(TypeError):
        defang(None)  # type: ignore[arg-type]


# --- idempotence ----------------------------------------------------------------------

_PIECES = [
    "-",
    "---",
    "----",
    "\u2014",
    "\u2500",
    "=",
    "===",
    " ",
    "   ",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\u2028",
    "\u200b",
    "\u00a0",
    "`",
    "```",
    "~~~",
    "[",
    "]",
    "/",
    "<",
    ">",
    "<<",
    ">>",
    "|",
    "\uff5c",
    "INST",
    "SYS",
    "system",
    "im_start",
    "start_of_turn",
    "User",
    "assistant",
    "Usu\u00e1rio",
    "Asistente",
    ":",
    "\uff1a",
    "*",
    "**",
    "x",
    "Label",
    "\x00",
    "\ud800",
    "\U0001f600",
]
hostile_text = st.one_of(
    st.lists(st.sampled_from(_PIECES), max_size=30).map("".join),
    st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=4)), max_size=20).map("".join),
)


@pytest.mark.parametrize("examples", [150, pytest.param(600, marks=pytest.mark.slow)])
def test_idempotent(examples: int) -> None:
    @settings(max_examples=examples, deadline=None)
    @given(hostile_text)
    def check(text: str) -> None:
        once = defang(text)
        assert defang(once) == once

    check()


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_idempotent_on_arbitrary_text(text: str) -> None:
    once = defang(text)
    assert defang(once) == once


@settings(max_examples=300, deadline=None)
@given(hostile_text)
def test_line_structure_is_preserved(text: str) -> None:
    out = defang(text)
    assert out.count("\n") == text.count("\n")


# --- no pathological backtracking -------------------------------------------------------

_N = 50_000


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "text",
    [
        "<" + " " * _N + "x",
        "<<" + " " * _N,
        "[" + "\t" * _N + "x",
        "<" + " /" * _N,
        "User" + " " * _N + "x",
        " " * _N + "Usuario",
        "\u200b" * _N + "x",
        "\u00a0" * _N + "---",
        "--- " + "-" * _N + "x",
        "--- x" + "\u2014" * _N + "y",
        "=== x " + "=" * _N + "y",
        "<|" + "a|" * _N,
        "*" * _N + "User:",
        "--- x ---\n" * (_N // 10),
    ],
    ids=lambda text: repr(text[:8]),
)
def test_runs_in_linear_time_on_long_runs(text: str) -> None:
    # A backtracking blow-up on these inputs takes minutes; linear work takes
    # milliseconds, so the timeout only trips on a regression.
    once = defang(text)
    assert defang(once) == once
