"""`complete` and `fix` with `--engine openai`: the answer of a real `transformers serve`, and
one clear line (exit 2) when the server is missing or the options are incomplete."""

from __future__ import annotations

import json

from openai_servers import free_port

from diffusion_infill.cli.main import main
from diffusion_infill.engine.remote.client import RemoteEngine
from diffusion_infill.engine.remote.settings import RemoteSettings
from diffusion_infill.engine.requests import InfillRequest

SOURCE = "import os\n\n\ndef main():\n    path = os.path.abspath(\n"


def test_complete_answers_with_the_servers_completion(openai_server, tmp_path, capsys):
    source = tmp_path / "paths.py"
    source.write_text(SOURCE)
    assert (
        main(
            [
                "complete",
                f"{source}:5:28",
                "--json",
                "--engine",
                "openai",
                "--url",
                openai_server.url,
                "--model",
                openai_server.fim_model,
                "--invoked-timeout",
                "120",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    engine = RemoteEngine(RemoteSettings(openai_server.url, openai_server.fim_model, invoked_timeout=120))
    expected = list(engine.complete(InfillRequest(SOURCE[:-1], "\n", "python", invoked=True)))[-1].text
    engine.close()
    assert result["text"] == expected and expected and result["valid"] is True
    assert len(result["drafts"]) > 1  # streamed


def test_fix_regenerates_through_the_server(openai_server, tmp_path, capsys):
    source = tmp_path / "paths.py"
    source.write_text(SOURCE)
    code = main(
        [
            "fix",
            str(source),
            "--range",
            "5:5-5:15",
            "--kind",
            "regenerate",
            "--json",
            "--engine",
            "openai",
            "--url",
            openai_server.url,
            "--model",
            openai_server.chat_model,
            "--invoked-timeout",
            "120",
        ]
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    reason = result["reason"] or ""
    assert code in (0, 1) and "cannot regenerate" not in reason and "failed" not in reason  # the server answered


def test_nothing_listening_is_one_line_naming_the_url(tmp_path, capsys):
    source = tmp_path / "a.py"
    source.write_text("x = \n")
    url = f"http://127.0.0.1:{free_port()}/v1"
    assert main(["complete", f"{source}:1:5", "--engine", "openai", "--url", url, "--model", "m"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("diffusion-infill: cannot reach") and url in error and "\n" not in error


def test_the_openai_engine_needs_a_url_and_a_model(tmp_path, capsys):
    source = tmp_path / "a.py"
    source.write_text("x = \n")
    assert main(["complete", f"{source}:1:5", "--engine", "openai", "--model", "m"]) == 2
    assert "--url" in capsys.readouterr().err
    assert main(["serve", "--engine", "openai", "--url", "http://x/v1"]) == 2
    assert "--model" in capsys.readouterr().err


def test_a_url_without_the_openai_engine_is_one_line_not_a_local_answer(tmp_path, capsys):
    source = tmp_path / "a.py"
    source.write_text("x = \n")
    broken = tmp_path / "a.json"
    broken.write_text("[1, 2,")
    for command in (["complete", f"{source}:1:5"], ["fix", str(broken)], ["serve"]):
        assert main([*command, "--url", "http://gpu-box:8000/v1"]) == 2
        error = capsys.readouterr().err.strip()
        assert "--url needs --engine openai" in error and "\n" not in error


def test_a_server_error_during_complete_or_fix_is_one_line(tmp_path, capsys):
    """Issue 50: the probe passes, the completion's request is refused (a 500 with an error page)."""
    from openai_servers import FaultyServer, body, events

    from diffusion_infill.engine.remote.client import forget_servers

    def reply(handler) -> None:
        if handler.headers.get("X-data-parallel-rank"):  # the probe
            events(handler, ["1"])
        else:
            body(handler, 500, b"<html><h1>Internal Server Error</h1></html>", "text/html")

    server = FaultyServer(reply)
    source = tmp_path / "a.py"
    source.write_text("x = \n")
    options = ["--engine", "openai", "--url", server.url, "--model", "m", "--prompt-format", "fim"]
    forget_servers()
    assert main(["complete", f"{source}:1:5", *options]) == 2
    error = capsys.readouterr().err.strip()
    assert error == f"diffusion-infill: {server.url} answered 500: Internal Server Error"
    code = main(["fix", str(source), "--range", "1:1-1:4", "--kind", "regenerate", "--json", *options])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and code in (1, 2)
    server.close()
