"""Shell completion scripts for the ``fsmemory`` command, made from its argparse parser.

``fsmemory completion bash|zsh|fish`` prints one. The script knows the commands, each
command's options, the choices of options and positionals that have them, and which
options take a value; ``--store`` completes file names. It is generated from the parser,
so a new command or option completes without a change here. Part of the command line
(the Face layer).
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field

__all__ = ["SHELLS", "completion_script"]

SHELLS = ("bash", "zsh", "fish")

#: Options whose value is a path or URL: completed with file names.
_FILE_OPTIONS = frozenset({"--store"})


@dataclass
class _Command:
    """What completion needs of one parser: its options and their values."""

    name: str
    help: str = ""
    options: list[str] = field(default_factory=list)
    #: option string -> its choices (empty: a free value)
    valued: dict[str, list[str]] = field(default_factory=dict)
    #: choices of its positional arguments (``completion``'s shell)
    positional_choices: list[str] = field(default_factory=list)
    option_help: dict[str, str] = field(default_factory=dict)


def _describe(parser: argparse.ArgumentParser, name: str, help_: str) -> _Command:
    command = _Command(name, help_)
    for action in parser._actions:  # argparse has no public way to list them
        if isinstance(action, argparse._SubParsersAction):
            continue
        choices = [str(c) for c in action.choices] if action.choices else []
        if not action.option_strings:
            command.positional_choices += choices
            continue
        for option in action.option_strings:
            command.options.append(option)
            command.option_help[option] = _first_sentence(action.help)
            if action.nargs != 0:
                command.valued[option] = choices
    return command


def _commands(parser: argparse.ArgumentParser) -> tuple[_Command, list[_Command]]:
    top = _describe(parser, "", "")
    commands = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: str(a.help or "") for a in action._choices_actions}
            for name, sub in action.choices.items():
                commands.append(_describe(sub, name, _first_sentence(helps.get(name, ""))))
    return top, commands


def _first_sentence(text: str | None) -> str:
    if not text or text == argparse.SUPPRESS:
        return ""
    text = " ".join(text.split())
    text = re.split(r"\s\(|;\s|:\s|\.\s", text, maxsplit=1)[0].rstrip(".")
    return text if len(text) <= 70 else text[:67] + "..."


def _words(items: list[str]) -> str:
    return " ".join(items)


@dataclass
class _Cases:
    """What the bash and zsh scripts branch on, as ``case`` patterns and word lists."""

    top_valued: str  # the top-level options that take a value: ``--store|-o|...``
    choices: list[tuple[str, str]]  # ``command:option`` -> its choices
    files: str  # options completed with file names
    free: str  # options whose value has nothing to complete
    top_words: str  # what may follow ``fsmemory``
    command_words: list[tuple[str, str]]  # command -> its options and choices


def _cases(top: _Command, commands: list[_Command]) -> _Cases:
    everyone = [top, *commands]
    valued = sorted({o for c in everyone for o in c.valued})
    return _Cases(
        top_valued="|".join(top.valued) or "--",
        choices=[
            (f"{c.name}:{option}", _words(choices))
            for c in everyone
            for option, choices in c.valued.items()
            if choices
        ],
        files="|".join(sorted(_FILE_OPTIONS)),
        free="|".join(o for o in valued if o not in _FILE_OPTIONS),
        top_words=_words([*top.options, *(c.name for c in commands)]),
        command_words=[(c.name, _words([*c.options, *c.positional_choices])) for c in commands],
    )


@dataclass(frozen=True)
class _Dialect:
    """How bash or zsh spells the steps both scripts take: find the command among the
    words before the cursor (stepping over the values of top-level options), then
    complete an option's choices, a file name, nothing, or the command's words.

    ``{words}`` in ``choose`` and ``offer`` stands for the words offered.
    """

    indent: str  # one level of indentation
    loop: str  # the ``for`` over the words before the cursor
    word: str  # the word at ``i``
    skip: str  # step over an option's value
    choose: str  # offer an option's choices
    files: str  # offer file names
    free: str  # offer nothing (a free value)
    offer: str  # offer what may follow ``fsmemory``, or a command's options and choices
    other: str  # the last branch on an unknown command ("" for none)


#: Each field of :class:`_Dialect` as bash and as zsh spell it.
_SPELLINGS: dict[str, tuple[str, str]] = {
    "indent": ("    ", "  "),
    "loop": ("for ((i = 1; i < COMP_CWORD; i++)); do", "for (( i = 2; i < CURRENT; i++ )); do"),
    "word": ("${COMP_WORDS[i]}", "${words[i]}"),
    "skip": ("((i++))", "(( i++ ))"),
    "choose": (
        'COMPREPLY=($(compgen -W "{words}" -- "$cur")); return 0',
        "compadd -- {words}; return",
    ),
    "files": ('COMPREPLY=($(compgen -f -- "$cur")); return 0', "_files; return"),
    "free": ("return 0", "return"),
    "offer": ('words="{words}"', "compadd -- {words}"),
    "other": ("*) return 0", ""),
}
_BASH, _ZSH = (_Dialect(**{k: both[i] for k, both in _SPELLINGS.items()}) for i in (0, 1))


def _dispatch(cases: _Cases, shell: _Dialect) -> str:
    """The body both scripts share, in ``shell``'s words (see :class:`_Dialect`)."""
    one, two, three = shell.indent, shell.indent * 2, shell.indent * 3
    lines = [
        one + shell.loop,
        f'{two}case "{shell.word}" in',
        f"{three}{cases.top_valued}) {shell.skip} ;;",
        f"{three}-*) ;;",
        f'{three}*) cmd="{shell.word}"; break ;;',
        f"{two}esac",
        f"{one}done",
        f'{one}case "$cmd:$prev" in',
        *(f'{two}"{key}") {shell.choose.format(words=words)} ;;' for key, words in cases.choices),
        f"{one}esac",
        f'{one}case "$prev" in',
        f"{two}{cases.files}) {shell.files} ;;",
        f"{two}{cases.free}) {shell.free} ;;",
        f"{one}esac",
        f'{one}case "$cmd" in',
        f'{two}"") {shell.offer.format(words=cases.top_words)} ;;',
        *(
            f"{two}{name}) {shell.offer.format(words=words)} ;;"
            for name, words in cases.command_words
        ),
        *([f"{two}{shell.other} ;;"] if shell.other else []),
        f"{one}esac",
    ]
    return "\n".join(lines)


def _bash(cases: _Cases) -> str:
    return f"""\
# bash completion for fsmemory; load it with: source <(fsmemory completion bash)
_fsmemory() {{
    local cur prev cmd words i
    COMPREPLY=()
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    cmd=""
{_dispatch(cases, _BASH)}
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F _fsmemory fsmemory
"""


def _zsh(cases: _Cases) -> str:
    return f"""\
#compdef fsmemory
# zsh completion for fsmemory; load it with: source <(fsmemory completion zsh)
# (after compinit), or save it as _fsmemory in a folder of $fpath.
_fsmemory() {{
  local cmd="" prev="${{words[CURRENT-1]}}" i
{_dispatch(cases, _ZSH)}
}}
if [[ "${{zsh_eval_context[-1]}}" == loadautofunc ]]; then
  _fsmemory "$@"
else
  compdef _fsmemory fsmemory
fi
"""


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_option(option: str) -> str:
    if option.startswith("--"):
        return f"-l {option[2:]}"
    return f"-s {option[1:]}" if len(option) == 2 else f"-o {option[1:]}"


def _fish(top: _Command, commands: list[_Command]) -> str:
    lines = [
        "# fish completion for fsmemory; save it with:",
        "#   fsmemory completion fish > ~/.config/fish/completions/fsmemory.fish",
        "complete -c fsmemory -f",
    ]
    names = _words([c.name for c in commands])
    for command in [top, *commands]:
        if command.name:
            condition = f"__fish_seen_subcommand_from {command.name}"
            lines.append(
                f"complete -c fsmemory -n '__fish_use_subcommand' -a {command.name} "
                f"-d {_fish_quote(command.help)}"
            )
            if command.positional_choices:
                lines.append(
                    f"complete -c fsmemory -n '{condition}' "
                    f"-a {_fish_quote(_words(command.positional_choices))}"
                )
        else:
            condition = f"not __fish_seen_subcommand_from {names}"
        for option in command.options:
            parts = [f"complete -c fsmemory -n '{condition}' {_fish_option(option)}"]
            if option in _FILE_OPTIONS:
                parts.append("-r -F")
            elif option in command.valued:
                parts.append("-x")  # a value, never a file name
                if command.valued[option]:
                    parts.append(f"-a {_fish_quote(_words(command.valued[option]))}")
            if command.option_help.get(option):
                parts.append(f"-d {_fish_quote(command.option_help[option])}")
            lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of ``parser`` (the ``fsmemory`` command's) for ``shell``.

    Args:
        parser: the command's parser, with its subcommands.
        shell: ``bash``, ``zsh`` or ``fish``.

    Raises:
        ValueError: another shell.
    """
    top, commands = _commands(parser)
    if shell == "bash":
        return _bash(_cases(top, commands))
    if shell == "zsh":
        return _zsh(_cases(top, commands))
    if shell == "fish":
        return _fish(top, commands)
    raise ValueError(f"no completion for shell {shell!r}: choose one of {', '.join(SHELLS)}")
