"""bench/llama_server.py builds llama.cpp's server once and smoke-tests it: a build that
crashes at its first decode on a CPU that reports AMX is rebuilt without AMX, and says
so; any other failure stops with the reason; the outcome is kept, so the smoke test runs
once per build. The compiler and the server are faked at their boundary
(``compile_server``, ``smoke_test``, ``cpu_flags``); the tiny model the real smoke test
runs is checked to be one llama.cpp's AMX kernels would take."""

import json

import gguf
import pytest

from bench import llama_server
from bench.llama_server import NATIVE, WITHOUT_AMX, EngineError, SmokeTest
from tests.tiny_gguf import write_tiny_gguf

AVX512 = {"sse4_2", "avx", "avx2", "bmi2", "fma", "f16c", "avx512f", "avx512cd", "avx512vl",
          "avx512dq", "avx512bw", "avx512_vnni", "avx512_bf16"}
AMX = {"amx_tile", "amx_int8", "amx_bf16"}
SEGFAULT = SmokeTest(-11, "llama_server: ... ggml_backend_amx_mul_mat")


class FakeBuild:
    """``compile_server`` and ``smoke_test`` with scripted outcomes: each compile writes
    a binary named after its variant; each smoke test pops the next outcome."""

    def __init__(self, monkeypatch, tmp_path, outcomes, flags):
        self.compiled: list[str] = []
        self.tested: list[str] = []
        self.outcomes = list(outcomes)

        def compile_server(work, variant, cpu, say):
            assert cpu == flags
            self.compiled.append(variant)
            built = tmp_path / f"built-{variant}-{len(self.compiled)}"
            built.write_text(variant)
            return built

        def smoke_test(binary):
            self.tested.append(binary.read_text())
            return self.outcomes.pop(0)

        monkeypatch.setattr(llama_server, "compile_server", compile_server)
        monkeypatch.setattr(llama_server, "smoke_test", smoke_test)
        monkeypatch.setattr(llama_server, "cpu_flags", lambda: set(flags))


def test_a_build_that_passes_its_smoke_test_is_kept_and_not_tested_again(
        monkeypatch, tmp_path, capsys):
    fake = FakeBuild(monkeypatch, tmp_path, [SmokeTest(None)], AVX512 | AMX)
    cache = tmp_path / "cache"
    binary = llama_server.ensure_built(cache)
    assert binary == llama_server.server_binary(cache) and binary.read_text() == NATIVE
    assert fake.compiled == [NATIVE] and fake.tested == [NATIVE]
    assert llama_server.build_variant(cache) == NATIVE
    assert llama_server.ensure_built(cache) == binary
    assert fake.compiled == [NATIVE] and fake.tested == [NATIVE]  # once per build
    assert "without AMX" not in capsys.readouterr().err


def test_a_crash_on_a_cpu_that_reports_amx_rebuilds_without_amx_and_says_so(
        monkeypatch, tmp_path, capsys):
    fake = FakeBuild(monkeypatch, tmp_path, [SEGFAULT, SmokeTest(None)], AVX512 | AMX)
    cache = tmp_path / "cache"
    binary = llama_server.ensure_built(cache)
    assert fake.compiled == [NATIVE, WITHOUT_AMX] and fake.tested == [NATIVE, WITHOUT_AMX]
    assert binary.read_text() == WITHOUT_AMX
    assert llama_server.build_variant(cache) == WITHOUT_AMX
    err = capsys.readouterr().err
    assert "crashed (SIGSEGV, exit -11)" in err
    assert "reports AMX (amx_tile, amx_int8, amx_bf16)" in err
    assert "rebuilding without AMX" in err and "passed its smoke test" in err
    record = json.loads(llama_server.check_record(binary).read_text())
    assert record["variant"] == WITHOUT_AMX and "-DGGML_AMX_INT8=OFF" in record["options"]
    # kept: the next run neither builds nor tests
    assert llama_server.ensure_built(cache) == binary and len(fake.tested) == 2


def test_a_binary_cached_before_smoke_tests_is_tested_once_and_rebuilt_if_it_crashes(
        monkeypatch, tmp_path, capsys):
    cache = tmp_path / "cache"
    old = llama_server.server_binary(cache)
    old.parent.mkdir(parents=True)
    old.write_text("old native build")
    fake = FakeBuild(monkeypatch, tmp_path, [SEGFAULT, SmokeTest(None)], AVX512 | AMX)
    assert llama_server.ensure_built(cache).read_text() == WITHOUT_AMX
    assert fake.tested == ["old native build", WITHOUT_AMX]
    assert fake.compiled == [WITHOUT_AMX]
    assert "rebuilding without AMX" in capsys.readouterr().err


def test_a_crash_without_amx_stops_with_the_reason_and_keeps_nothing(monkeypatch, tmp_path):
    fake = FakeBuild(monkeypatch, tmp_path, [SmokeTest(-11, "the server's log")], AVX512)
    cache = tmp_path / "cache"
    with pytest.raises(EngineError) as failure:
        llama_server.ensure_built(cache)
    message = str(failure.value)
    assert "crashed (SIGSEGV, exit -11)" in message and "reports no AMX" in message
    assert "the server's log" in message and "--model-url" in message
    assert fake.compiled == [NATIVE]
    assert not llama_server.server_binary(cache).exists()
    assert llama_server.build_variant(cache) is None


def test_a_server_that_exits_or_does_not_answer_is_not_rebuilt(monkeypatch, tmp_path):
    for outcome, said in [(SmokeTest(1, "error loading model"), "exited with 1"),
                          (SmokeTest(None, "", "no answer to a 4-token completion: timed out"),
                           "no answer to a 4-token completion")]:
        fake = FakeBuild(monkeypatch, tmp_path, [outcome], AVX512 | AMX)
        with pytest.raises(EngineError, match=said):
            llama_server.ensure_built(tmp_path / "cache")
        assert fake.compiled == [NATIVE]


def test_the_build_without_amx_crashing_too_is_an_error(monkeypatch, tmp_path):
    FakeBuild(monkeypatch, tmp_path, [SEGFAULT, SEGFAULT], AVX512 | AMX)
    with pytest.raises(EngineError, match="built without AMX still fails its smoke test"):
        llama_server.ensure_built(tmp_path / "cache")
    assert llama_server.build_variant(tmp_path / "cache") is None


def test_the_build_options_leave_amx_out_and_name_the_cpus_other_sets():
    assert llama_server.cmake_options(NATIVE, AVX512 | AMX) == ["-DGGML_NATIVE=ON"]
    options = llama_server.cmake_options(WITHOUT_AMX, AVX512 | AMX)
    assert options[0] == "-DGGML_NATIVE=OFF"  # GGML_AMX_* count only without -march=native
    for name in ("AMX_TILE", "AMX_INT8", "AMX_BF16"):
        assert f"-DGGML_{name}=OFF" in options
    for name in ("AVX2", "AVX512", "AVX512_VNNI", "AVX512_BF16"):
        assert f"-DGGML_{name}=ON" in options
    assert "-DGGML_AVX_VNNI=OFF" in options and "-DGGML_AVX512_VBMI=OFF" in options
    # one AVX-512 subset missing: no AVX-512 at all (ggml's option needs all five)
    assert "-DGGML_AVX512=OFF" in llama_server.cmake_options(WITHOUT_AMX, AVX512 - {"avx512bw"})


def test_the_smoke_tests_model_has_matrices_the_amx_kernels_take(tmp_path):
    # llama.cpp's AMX kernels take Q8_0 (among others) matrices whose rows and columns
    # are multiples of 32 (ggml/src/ggml-cpu/amx/amx.cpp, supports_op)
    reader = gguf.GGUFReader(write_tiny_gguf(tmp_path / "q8.gguf", quantized=True))
    layers = [t for t in reader.tensors if t.name.startswith("blk.") and len(t.shape) == 2]
    assert len(layers) == 14
    for tensor in layers:
        assert tensor.tensor_type == gguf.GGMLQuantizationType.Q8_0, tensor.name
        assert all(int(n) % 32 == 0 for n in tensor.shape), (tensor.name, tensor.shape)


def test_how_a_process_ended_is_said_in_words():
    assert llama_server.how_it_ended(-11) == "crashed (SIGSEGV, exit -11)"
    assert llama_server.how_it_ended(1) == "exited with 1"
    assert SmokeTest(None).passed and not SmokeTest(-6).passed and SmokeTest(-6).crashed
