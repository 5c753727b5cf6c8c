"""Bad input to the real `diffusion-infill` command: one line on stderr, exit status 2,
never a traceback; arguments and files are checked before torch is imported."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import torch

from diffusion_infill.cli.main import SAMPLE

AT_SAMPLE = f"{SAMPLE}:11:37"
HUB_ID = "google/diffusiongemma-26B-A4B-it"


@pytest.fixture(scope="module")
def binary_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("binary") / "image.py"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    return path


def run_cli(console_script: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([console_script, *args], capture_output=True, text=True, timeout=300, env=env)


def assert_one_line_error(done: subprocess.CompletedProcess, *expected: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stdout == ""
    for part in expected:
        assert part in done.stderr


@pytest.mark.parametrize("command", ["complete", "fix"])
def test_a_file_that_is_not_utf8_is_named(console_script, binary_file, command):
    target = f"{binary_file}:1:1" if command == "complete" else str(binary_file)
    assert_one_line_error(run_cli(console_script, command, target), str(binary_file), "not UTF-8")


def test_a_missing_file_is_named(console_script, tmp_path):
    missing = tmp_path / "missing.json"
    assert_one_line_error(run_cli(console_script, "fix", str(missing)), str(missing), "cannot read")


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--max-steps", "0"),
        ("--max-gap-tokens", "-3"),
        ("--entropy-bound", "-1"),
        ("--entropy-bound", "0"),
        ("--threads", "0"),
        ("--max-steps", "many"),
    ],
)
def test_numbers_out_of_range_name_the_option(console_script, option, value):
    assert_one_line_error(run_cli(console_script, "complete", AT_SAMPLE, option, value), option, repr(value))


def test_a_device_torch_does_not_have_is_named(console_script):
    device = f"cuda:{torch.cuda.device_count()}"  # one past the last GPU: none on a CPU-only build
    assert_one_line_error(run_cli(console_script, "complete", AT_SAMPLE, "--device", device), device, "CUDA")


@pytest.mark.skipif(torch.cuda.is_available(), reason="auto is CUDA here: int4 loads")
def test_int4_where_auto_is_the_cpu_is_one_line_once_torch_says_so(console_script):
    done = run_cli(console_script, "complete", AT_SAMPLE, "--quantize", "int4")
    assert_one_line_error(done, "int4 needs a CUDA GPU", "'cpu'", "int8")


@pytest.mark.skipif(torch.cuda.is_available(), reason="auto is CUDA here: int4 loads")
def test_bench_int4_without_cuda_is_one_line_before_the_run(console_script):
    assert_one_line_error(run_cli(console_script, "bench", "--quick", "--quantize", "int4"), "int4 needs a CUDA GPU")


# torchao not installed (`pip install diffusion-infill` without [quantize]): a None in sys.modules
# makes `import torchao` fail and importlib.util.find_spec answer None, as for a missing package
WITHOUT_TORCHAO = (
    "import sys\nsys.modules['torchao'] = None\n"
    "from diffusion_infill.cli.main import main\nsys.exit(main(sys.argv[1:]))"
)


@pytest.mark.parametrize("mode", ["int8", "int4"])
def test_quantize_without_torchao_is_one_line_naming_the_extra(mode):
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_TORCHAO, "complete", AT_SAMPLE, "--quantize", mode, "--device", "cuda"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert_one_line_error(done, f"--quantize {mode} needs torchao", "pip install 'diffusion-infill[quantize]'")


def test_an_unknown_dtype_is_named(console_script):
    assert_one_line_error(run_cli(console_script, "complete", AT_SAMPLE, "--dtype", "float99"), "float99")


def test_a_hub_id_missing_from_the_cache_says_where_it_looked_and_how_to_get_it(console_script, tmp_path):
    cache = tmp_path / "hf"
    env = {name: value for name, value in os.environ.items() if name != "HF_HUB_CACHE"} | {"HF_HOME": str(cache)}
    done = run_cli(console_script, "complete", AT_SAMPLE, "--model", HUB_ID, env=env)
    assert_one_line_error(done, HUB_ID, str(cache / "hub"), f"hf download {HUB_ID}")


PROBE = (
    "import sys\nfrom diffusion_infill.cli.main import main\n"
    "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
    "print('torch' in sys.modules, 'transformers' in sys.modules)"
)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["complete", "--help"],
        ["complete", AT_SAMPLE, "--max-steps", "0"],
        ["complete", f"{SAMPLE}:999:1"],
        ["fix", "missing.json"],
    ],
    ids=["help", "complete-help", "bad-number", "bad-line", "missing-file"],
)
def test_help_and_bad_arguments_answer_before_torch_is_imported(args):
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "False False", done.stderr


@pytest.mark.parametrize("value", ["-1", "many"])
def test_training_context_tokens_must_be_a_count(console_script, value):
    assert_one_line_error(run_cli(console_script, "train", "--context-tokens", value), "--context-tokens", repr(value))


def test_training_context_tokens_must_leave_room_for_the_window(console_script):
    done = run_cli(console_script, "train", "--max-prefix", "64", "--context-tokens", "64")

    assert_one_line_error(done, "--context-tokens (64) must be below --max-prefix (64)")


@pytest.mark.parametrize("value", ["2x100", "wide", "0x256"])
def test_a_training_shape_must_be_layers_by_a_multiple_of_64(console_script, value):
    assert_one_line_error(run_cli(console_script, "train", "--shape", value), "--shape", repr(value))


# Every case a new user met on a fresh clone: one line, exit 2, and only what the check needs imported
# (run in a subprocess that reports, after the command, which of the heavy modules were loaded).

HEAVY = ("torch", "transformers", "pygls")
REPORTING = (
    "import sys\nfrom diffusion_infill.cli.main import main\ntry:\n    code = main(sys.argv[1:])\n"
    "except SystemExit as stop:\n    code = stop.code\n"
    f"print(' '.join(name for name in {HEAVY!r} if name in sys.modules))\nsys.exit(code)"
)
BROKEN_JSON = str(SAMPLE.parent / "broken.json")


def run_reporting(*args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    """The command's result (its last stdout line removed) and the heavy modules it imported."""
    done = subprocess.run(
        [sys.executable, "-c", REPORTING, *args], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )
    *output, imported = done.stdout.split("\n")[:-1] or [""]
    return subprocess.CompletedProcess(
        done.args, done.returncode, "".join(f"{line}\n" for line in output), done.stderr
    ), set(imported.split())


def assert_answered_before(reported: tuple[subprocess.CompletedProcess, set[str]], *expected: str) -> None:
    """One line, exit 2, and nothing heavy imported."""
    done, imported = reported
    assert_one_line_error(done, *expected)
    assert not imported, f"imported {imported} before answering"


@pytest.fixture
def busy_port():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


@pytest.fixture
def notes(tmp_path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("buy milk\n")
    return path


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["serve", "--tcp", "99999"], ["99999", "out of range"]),
        (
            ["serve", "--tcp", "192.0.2.1:0", "--allow-remote"],
            ["192.0.2.1", "cannot listen"],
        ),  # TEST-NET-1: no machine has it
        (["serve", "--tcp", "no-such-host.invalid:0", "--allow-remote"], ["no-such-host.invalid", "cannot listen"]),
        (["serve", "--tcp", "http://x"], ["[HOST:]PORT"]),
        (["serve", "--tcp", "0.0.0.0:0"], ["--tcp 0.0.0.0", "no authentication", "--allow-remote"]),
        (["serve", "--tcp", "[::]:0"], ["--tcp ::", "no authentication", "--allow-remote"]),
        (["complete", AT_SAMPLE, "--model", "/nonexistent/model"], ["/nonexistent/model", "no such directory"]),
        (
            ["complete", AT_SAMPLE, "--model", str(SAMPLE.parent)],
            ["not a checkpoint directory", "config.json", "tokenizer"],
        ),
        (["serve", "--model", "/nonexistent/model"], ["/nonexistent/model", "no such directory"]),
        (["serve", "--tcp", "0", "--model", str(SAMPLE.parent)], ["not a checkpoint directory", "config.json"]),
        (["complete", AT_SAMPLE, "--device", "tpu"], ["--device", "'tpu'", "cuda:N"]),
        (["serve", "--device", "tpu"], ["--device", "'tpu'", "cuda:N"]),
        (["serve", "--dtype", "int8"], ["--dtype", "'int8'", "--quantize int8 or int4"]),
        (["serve", "--quantize", "int2"], ["--quantize", "'int2'", "'none', 'int8', 'int4'"]),
        (["serve", "--quantize", "int4", "--device", "cpu"], ["int4 needs a CUDA GPU", "'cpu'", "int8"]),
        (["serve", "--max-steps", "0"], ["--max-steps", "'0'"]),
        (["complete", AT_SAMPLE, "--dtype", "int8"], ["--dtype", "'int8'", "--quantize int8 or int4"]),
        (["complete", AT_SAMPLE, "--quantize", "int4", "--device", "cpu"], ["int4 needs a CUDA GPU", "int8"]),
        (["fix", BROKEN_JSON, "--range", "garbage"], ["--range", "'garbage'"]),
        (["fix", BROKEN_JSON, "--range", "0:0-0:0"], ["line 0 is out of range"]),
        (["fix", BROKEN_JSON, "--model", "/nonexistent/model"], ["/nonexistent/model", "no such directory"]),
        (["fix", BROKEN_JSON, "--model", "--no-model"], ["--no-model and --model"]),
        (["complete", AT_SAMPLE, "--timeout", "-1"], ["--timeout", "'-1'"]),
        (["serve", "--invoked-timeout", "0"], ["--invoked-timeout", "'0'"]),
        (["complete", AT_SAMPLE, "--min-confidence", "1.5"], ["--min-confidence", "'1.5'"]),
        (["complete", AT_SAMPLE, "-v"], ["unrecognized arguments: -v", "-v goes before the command"]),
        (["serve", "--stdio", "--tcp", "0"], ["not allowed with argument --stdio"]),
    ],
    ids=" ".join,
)
def test_bad_arguments_answer_in_one_line_before_torch_is_imported(args, expected):
    assert_answered_before(run_reporting(*args), *expected)


def test_a_port_in_use_is_one_line_before_torch_is_imported(busy_port):
    assert_answered_before(run_reporting("serve", "--tcp", str(busy_port)), str(busy_port), "Address already in use")


def test_a_file_whose_kind_cannot_be_told_is_one_line_before_torch_is_imported(notes):
    assert_answered_before(run_reporting("fix", str(notes)), "notes.txt", "--kind")


def test_a_one_line_file_says_line_not_lines(tmp_path):
    source = tmp_path / "one.py"
    source.write_text("x = 1")
    assert_answered_before(run_reporting("complete", f"{source}:3:1"), "has 1 line;")


@pytest.mark.parametrize("command", [["complete", AT_SAMPLE], ["serve"]], ids=["complete", "serve"])
def test_a_gpu_torch_does_not_see_is_asked_of_torch_alone(command):
    device = f"cuda:{torch.cuda.device_count()}"  # one past the last GPU: none on a CPU-only build
    done, imported = run_reporting(*command, "--device", device)
    assert_one_line_error(done, device)
    assert imported == {"torch"}  # asked of torch, before transformers loads


@pytest.mark.parametrize("flags", [["--no-model"], []], ids=["--no-model", "default"])
def test_fix_without_a_model_never_imports_the_model_stack(tmp_path, flags):
    broken = tmp_path / "broken.json"
    broken.write_text('{"a": 1, // why\n "b": [1, 2,]\n')
    done, imported = run_reporting("fix", str(broken), *flags, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["fixed"] is True
    assert imported == set()


def test_version_is_one_line_before_anything_heavy_is_imported():
    done, imported = run_reporting("--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"diffusion-infill {version('diffusion-infill')}\n", "")
    assert not imported


# `import matplotlib` then fails as it does where matplotlib is not installed
WITHOUT_MATPLOTLIB = "import sys\nsys.modules['matplotlib'] = None\n"


def test_bench_out_without_matplotlib_is_one_line_before_the_run():
    code = WITHOUT_MATPLOTLIB + REPORTING
    done = subprocess.run(
        [sys.executable, "-c", code, "bench", "--quick", "--out", "unused"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and done.stdout.split() == [], done.stderr  # nothing heavy imported
    assert_one_line_error(subprocess.CompletedProcess(done.args, 2, "", done.stderr), "matplotlib", "--out")


@pytest.mark.parametrize("command", ["serve", "complete", "fix"])
def test_a_command_imports_neither_the_benchmark_nor_posix_only_modules(command):
    probe = (
        "import sys\nfrom diffusion_infill.cli.main import main\ntry:\n    main(sys.argv[1:])\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(name for name in sys.modules if name.startswith('diffusion_infill.bench') "
        "or name == 'resource'))"
    )
    done = subprocess.run([sys.executable, "-c", probe, command, "--help"], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stderr
