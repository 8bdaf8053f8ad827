"""``fedq completion bash|zsh``: shell completion written from the parser itself, so it offers exactly
the commands, options and choices ``fedq`` takes (zsh runs the bash function through bashcompinit)."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Iterator

_BASH = """\
# fedq completion for bash; in ~/.bashrc: source <(fedq completion bash)
declare -A _fedq_words=(
{words}
)
declare -A _fedq_choices=(
{choices}
)
_fedq() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" path=fedq i
    for ((i = 1; i < COMP_CWORD; i++)); do
        local next="$path ${{COMP_WORDS[i]}}"
        [[ -n "${{_fedq_words[$next]+set}}" ]] && path="$next"
    done
    if [[ -n "${{_fedq_choices[$path $prev]+set}}" ]]; then
        COMPREPLY=($(compgen -W "${{_fedq_choices[$path $prev]}}" -- "$cur"))
    elif [[ "$cur" == -* || -n "${{_fedq_words[$path]}}" && "${{_fedq_words[$path]}}" != -* ]]; then
        COMPREPLY=($(compgen -W "${{_fedq_words[$path]}}" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}}
complete -o default -F _fedq fedq
"""
_ZSH = """\
# fedq completion for zsh; in ~/.zshrc: source <(fedq completion zsh)
autoload -U +X bashcompinit && bashcompinit
"""


def _walk(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, list[str], dict[str, list[str]]]]:
    """Each command path with its subcommands and options, and the choices of those that have some."""
    words: list[str] = []
    choices: dict[str, list[str]] = {}
    children: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            children += list(action.choices.items())
            words += list(action.choices)
        elif action.option_strings and action.help != argparse.SUPPRESS:
            words += [flag for flag in action.option_strings if flag.startswith("--")]
            if action.choices is not None:
                for flag in action.option_strings:
                    choices[flag] = [str(choice) for choice in action.choices]
    yield path, words, choices
    for name, child in children:
        yield from _walk(child, f"{path} {name}")


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    words, choices = [], []
    for path, offered, by_flag in _walk(parser, "fedq"):
        words.append(f"    [{shlex.quote(path)}]={shlex.quote(' '.join(offered))}")
        choices += [f"    [{shlex.quote(f'{path} {flag}')}]={shlex.quote(' '.join(c))}" for flag, c in by_flag.items()]
    bash = _BASH.format(words="\n".join(words), choices="\n".join(choices))
    return bash if shell == "bash" else _ZSH + bash


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser], root: argparse.ArgumentParser) -> None:
    parser = sub.add_parser(
        "completion",
        help="print shell completion for bash or zsh",
        epilog="e.g. source <(fedq completion bash)   # in ~/.bashrc (or zsh, in ~/.zshrc)",
    )
    parser.add_argument("shell", choices=["bash", "zsh"], help="the shell to complete in, e.g. bash")

    def run(args: argparse.Namespace) -> int:
        sys.stdout.write(script(root, args.shell))
        return 0

    parser.set_defaults(func=run)
