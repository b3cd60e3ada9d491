"""The confirmation prompt names the stream once."""

from __future__ import annotations

import argparse
import io

from console.commands._confirm import confirm_by_stream_name


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def prompt_for(monkeypatch, capsys, consequence: str) -> str:
    monkeypatch.setattr("sys.stdin", Terminal("clicks\n"))
    confirm_by_stream_name(argparse.Namespace(yes=False, stream="clicks"), change="x", consequence=consequence)
    return capsys.readouterr().err


def test_a_consequence_naming_the_stream_is_not_followed_by_it_again(monkeypatch, capsys):
    said = prompt_for(monkeypatch, capsys, "switch clicks from provisioned to on-demand")
    assert "This will switch clicks from provisioned to on-demand. Type" in said


def test_a_consequence_without_the_name_gets_it(monkeypatch, capsys):
    assert "This will split shardId-000000000001 on clicks. Type" in prompt_for(
        monkeypatch, capsys, "split shardId-000000000001"
    )
