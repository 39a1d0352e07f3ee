"""Embedders: one contract for each, the OpenAI-compatible provider's faults, a store that knows its
embedder, passage vectors, and keyed ingest that embeds only what changed."""
from __future__ import annotations

import json
import math
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from halomem.bench.harness import ephemeral_kernel
from halomem.embed import EmbedderOptions, get_embedder
from halomem.errors import ConfigError, EmbedderUnavailableError
from halomem.index import Scope
from halomem.drivers.view import build_scoped_view
from halomem.types import Namespace
from tests.embedding_faults import FaultyEmbeddings

HOSTILE = ["<script>alert(1)</script>", "'; DROP TABLE memories; --", "\u202eevil\u202c", "🦜🦜 émoji ünïcode 漢字",
           "\x00\x01\x1b[31m", "   ", "[UNK] [CLS] [SEP] [PAD]", "a" * 5000]
LONG = "word " * 13107 + "x"  # 65,536 characters


def _norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


def _contract(embedder) -> None:  # noqa: ANN001
    texts = ["The build server runs nightly.", "Maria leads the payments team.", "", *HOSTILE, LONG]
    vectors = embedder.embed(texts)
    assert len(vectors) == len(texts)
    for text, v in zip(texts, vectors):
        assert len(v) == embedder.dim, text[:20]
        assert all(math.isfinite(x) for x in v)
        assert _norm(v) == pytest.approx(1.0, abs=1e-3) or (_norm(v) == 0.0 and not text.strip())
    one_by_one = [embedder.embed([t])[0] for t in texts]  # batching changes nothing
    again = embedder.embed(texts)  # same text, same vector
    for a, b, c in zip(vectors, one_by_one, again):
        assert max(abs(x - y) for x, y in zip(a, b)) < 1e-3
        assert max(abs(x - y) for x, y in zip(a, c)) < 1e-3
    assert embedder.embed([]) == []


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


@pytest.mark.parametrize("spec", ["hash", "static"])
def test_local_embedders_keep_the_contract(spec: str) -> None:
    _contract(get_embedder(spec))


def test_the_default_embedder_understands_paraphrases() -> None:
    embedder = get_embedder()
    assert embedder.name == "onnx:minilm-l6-v2" and embedder.dim == 384
    memory, paraphrase, unrelated = embedder.embed(["The build server runs nightly at two in the morning.",
                                                    "when do we compile the software?",
                                                    "Maria's favourite fruit is the mango."])
    assert _cos(memory, paraphrase) > _cos(unrelated, paraphrase) + 0.1


def test_static_vectors_are_model2vec_s_own() -> None:
    """The table is read without model2vec at run time; its vectors are model2vec's StaticModel.encode."""
    from model2vec import StaticModel

    from halomem.embed.static import model_dir

    ours = get_embedder("static")
    theirs = StaticModel.from_pretrained(str(model_dir("minilm-l6-v2-static")))
    texts = ["The build server runs nightly.", "", *HOSTILE[:5], LONG]
    for a, b in zip(ours.embed(texts), theirs.encode(texts).tolist()):
        assert max(abs(x - y) for x, y in zip(a, b)) < 1e-3


def test_static_vectors_match_model2vec_with_weights_and_a_quantized_vocabulary(tmp_path: Path) -> None:
    """A model2vec model with per-token weights and a token-to-row mapping: the numpy path (batches)
    and the plain-Python path (a CLI's query, numpy never imported) both give model2vec's vectors."""
    import numpy as np
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    from halomem.embed.static import model_dir

    shipped = model_dir("minilm-l6-v2-static")
    tokenizer = Tokenizer.from_file(str(shipped / "tokenizer.json"))
    rng = np.random.default_rng(5)
    size = tokenizer.get_vocab_size()
    vectors = rng.normal(size=(500, 32)).astype(np.float32)
    theirs = StaticModel(vectors, tokenizer, normalize=True, weights=rng.uniform(0.1, 2.0, size).astype(np.float32),
                         token_mapping=rng.integers(0, 500, size))
    theirs.save_pretrained(str(tmp_path))
    texts = ["The build server runs nightly.", "Maria leads the payments team", "zebra"]
    expected = theirs.encode(texts).tolist()
    ours = get_embedder(f"static:{tmp_path}").embed(texts)
    plain = json.loads(subprocess.run(
        [sys.executable, "-c", "import json, sys; from halomem.embed import get_embedder; "
         f"v = get_embedder('static:{tmp_path}').embed({texts!r}); assert 'numpy' not in sys.modules; "
         "print(json.dumps(v))"], check=True, capture_output=True, text=True).stdout)
    for a, b, c in zip(ours, plain, expected, strict=True):
        assert max(abs(x - z) for x, z in zip(a, c)) < 1e-4 and max(abs(y - z) for y, z in zip(b, c)) < 1e-4


def test_a_damaged_or_missing_static_model_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        get_embedder("static:nope")
    (tmp_path / "model.safetensors").write_bytes(b"\x00garbage")
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ConfigError, match="cannot load static embedder model"):
        get_embedder(f"static:{tmp_path}")
    with pytest.raises(ConfigError, match="unknown embedder"):
        get_embedder("word2vec")


# --- the OpenAI-compatible provider against faults --------------------------------------------------------

def _remote(server: FaultyEmbeddings, **options) -> object:  # noqa: ANN003
    return get_embedder("openai:fault-model", EmbedderOptions(url=server.url, **options))


def test_remote_keeps_the_contract_and_batches_with_concurrency(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("TEAM_EMBED_KEY", "sk-test-secret")
    with FaultyEmbeddings() as server:
        embedder = _remote(server, api_key_env="TEAM_EMBED_KEY", batch=4, concurrency=3)
        assert embedder.dim == 256 and embedder.name == "openai:fault-model"  # probed once
        _contract(embedder)
        texts = [f"text {i}" for i in range(10)]
        before = len(server.requests)
        for a, b in zip(embedder.embed(texts), get_embedder("hash").embed(texts), strict=True):  # in order
            assert max(abs(x - y) for x, y in zip(a, b)) < 1e-6
        sizes = [len(r["input"]) for _, r in server.requests[before:]]
        assert sorted(sizes) == [2, 4, 4]
        assert {r["auth"] for _, r in server.requests} == {"Bearer sk-test-secret"}
        assert {r["path"] for _, r in server.requests} == {"/v1/embeddings"}
        assert all(t != "" for _, r in server.requests for t in r["input"])  # OpenAI refuses empty strings


def test_remote_honours_retry_after() -> None:
    with FaultyEmbeddings() as server:
        embedder = _remote(server, dim=256, retries=2)
        server.script = ["429"]
        server.retry_after = "2"
        start = time.monotonic()
        assert len(embedder.embed(["hello"])[0]) == 256
        assert len(server.requests) == 2
        assert server.requests[1][0] - server.requests[0][0] >= 1.9
        assert time.monotonic() - start < 10


def test_remote_faults_are_one_clear_error(monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("TEAM_EMBED_KEY", "sk-never-shown")
    with FaultyEmbeddings() as server:
        embedder = _remote(server, dim=256, retries=1, api_key_env="TEAM_EMBED_KEY", timeout_s=0.5)
        server.script = ["500", "500"]
        with pytest.raises(EmbedderUnavailableError, match="HTTP 500 after 1 retries") as e500:
            embedder.embed(["x"])
        assert len(server.requests) == 2  # the first try and one retry
        server.script = ["wrongdim"]
        with pytest.raises(ConfigError, match="answered 259-d vectors .* expected 256-d"):
            embedder.embed(["x"])
        server.script = ["slow", "slow"]
        with pytest.raises(EmbedderUnavailableError, match="unreachable"):
            embedder.embed(["x"])
        for exc in (e500,):
            assert "sk-never-shown" not in str(exc.value)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    refused = get_embedder("openai:m", EmbedderOptions(url=f"http://127.0.0.1:{closed}/v1", dim=8, retries=0))
    with pytest.raises(EmbedderUnavailableError, match="unreachable"):
        refused.embed(["x"])
    with pytest.raises(ConfigError, match="needs the service's base URL"):
        get_embedder("openai:m")
    with pytest.raises(ConfigError, match="needs a model"):
        get_embedder("openai", EmbedderOptions(url="http://127.0.0.1:9/v1"))


def test_cli_says_when_the_embedding_service_is_down(cli_env: dict, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    run = own_store_cli(cli_env, tmp_path, HALOMEM_EMBEDDER="openai:nomic-embed-text",
                        HALOMEM_EMBEDDER_URL=f"http://127.0.0.1:{closed}/v1", HALOMEM_EMBEDDER_RETRIES="0")
    done = run("search", "--ns", "acme", "q")
    assert done.returncode == 16, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("halomem: embedder unavailable: embedding service http://127.0.0.1:") and "unreachable" in line


# --- a store knows its embedder --------------------------------------------------------------------------

def own_store_cli(cli_env: dict, home: Path, **settings: str):  # noqa: ANN201
    """`halomem ...` on a store of its own (an embedded server in ``home``), with these HALOMEM_* settings."""
    env = {**cli_env, "HALOMEM_HOME": str(home), **settings}
    env.pop("HALOMEM_DATABASE_URL", None)

    def run(*args: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "halomem.cli.main", *args], env={**env, **extra},
                              capture_output=True, text=True, timeout=120)

    return run


def test_a_store_keeps_its_embedder_and_refuses_another(cli_env: dict, tmp_path: Path) -> None:
    run = own_store_cli(cli_env, tmp_path)
    try:
        assert run("remember", "--ns", "acme", "The build server runs nightly at two in the morning.").returncode == 0
        found = run("search", "--ns", "acme", "--json", "when do we compile the software?")
        assert found.returncode == 0, found.stderr
        assert "build server" in json.loads(found.stdout)["hits"][0]["content"]
        info = run("init", "--json")
        assert json.loads(info.stdout)["embedder"] == "onnx:minilm-l6-v2"  # the default, named by init
        refused = run("search", "--ns", "acme", "q", HALOMEM_EMBEDDER="hash")
        assert refused.returncode == 8
        [line] = refused.stderr.strip().splitlines()
        assert "onnx:minilm-l6-v2/384-d" in line and "hash/256-d" in line and "reembed" in line
        assert run("search", "--ns", "acme", "q").returncode == 0  # unset again: the store's own
    finally:
        run("db", "stop")


# --- passages -------------------------------------------------------------------------------------------

LONG_MEMORY = "\n\n".join(
    [f"Quarterly planning notes, part {i}: the team reviewed roadmap items, hiring plans, office logistics "
     f"and the travel budget for the conference season, with no decisions recorded yet." for i in range(34)]
    + ["Finally, the production database password rotation is owned by Priya from the security team."])


@pytest.fixture(scope="module")
def static_kernel():  # noqa: ANN201
    with ephemeral_kernel("static") as kernel:
        yield kernel


def _vector_lane(kernel, ns: str, query: str, k: int = 5):  # noqa: ANN001, ANN202
    with kernel.index.reader() as reader:
        view = build_scoped_view(reader, Scope(Namespace(ns)), kernel.embedder)
        return view.vector_search(view.embed([query])[0], k)


def test_a_fact_at_the_end_of_a_long_memory_is_found_by_the_vector_lane(static_kernel) -> None:  # noqa: ANN001
    kernel = static_kernel
    assert len(LONG_MEMORY) > 6000
    long_id = kernel.remember("acme/eng", LONG_MEMORY).id
    [sibling] = kernel.ingest_texts("acme/sales", [LONG_MEMORY])  # a sibling's copy: never a hit for acme/eng
    decoys = kernel.ingest_texts("acme/eng", [f"Team lunch menu {i}: pasta, salad and soup on Thursday." for i in range(40)])
    question = "who is responsible for changing the credentials of the prod DB?"
    hits = _vector_lane(kernel, "acme/eng", question)
    assert hits[0].ref == long_id
    assert sibling not in {h.ref for h in hits}
    [whole] = kernel.embedder.embed([LONG_MEMORY])
    assert hits[0].score > _cos(whole, kernel.embedder.embed([question])[0]) + 0.05  # the passage, not the mean
    with kernel.engine.connect() as conn:
        count = conn.exec_driver_sql("SELECT count(*) FROM passages WHERE memory_id = %s", (long_id,)).scalar()
    assert count >= 8
    kernel.erase("acme/eng", long_id)
    with kernel.engine.connect() as conn:
        left = conn.exec_driver_sql("SELECT count(*) FROM passages WHERE memory_id = %s", (long_id,)).scalar()
    assert left == 0
    assert long_id not in {h.ref for h in _vector_lane(kernel, "acme/eng", question)}
    assert decoys


def test_keyed_ingest_embeds_only_what_changed(static_kernel, tmp_path: Path) -> None:  # noqa: ANN001
    kernel = static_kernel
    texts = {f"doc-{i}": f"Document {i} says the office plant number {i} needs water." for i in range(50)}
    texts["doc-long"] = LONG_MEMORY
    path = tmp_path / "docs.jsonl"

    def write() -> None:
        path.write_text("".join(json.dumps({"key": k, "content": v}) + "\n" for k, v in texts.items()))

    embedded: list[str] = []
    original = kernel.embedder

    class Counting:
        def __getattr__(self, name: str):  # noqa: ANN204
            return getattr(original, name)

        def embed(self, batch):  # noqa: ANN001, ANN202
            embedded.extend(batch)
            return original.embed(batch)

    write()
    kernel.embedders.current = Counting()
    try:
        first = kernel.ingest("acme/docs", path)
        assert first.written == 51 and len(embedded) > 51  # the long one's passages too
        embedded.clear()
        again = kernel.ingest("acme/docs", path)
        assert len(again.unchanged) == 51 and embedded == []
        texts["doc-7"] = "Document 7 now says the plant was moved to the lobby."
        write()
        changed = kernel.ingest("acme/docs", path)
        assert len(changed.superseded) == 1 and embedded == [texts["doc-7"]]
    finally:
        kernel.embedders.current = original


# --- a real OpenAI-compatible server: infinity-emb serving the packaged MiniLM --------------------------

@pytest.fixture(scope="module")
def infinity():  # noqa: ANN201
    from tests.infinity_server import InfinityServer

    server = InfinityServer()
    yield server
    server.close()


def test_a_real_openai_compatible_server_keeps_the_contract(infinity) -> None:  # noqa: ANN001
    from tests.infinity_server import MODEL_NAME

    embedder = get_embedder(f"openai:{MODEL_NAME}", EmbedderOptions(url=infinity.url, batch=8, concurrency=2))
    assert embedder.dim == 384
    _contract(embedder)
    memory, paraphrase, unrelated = embedder.embed(["The build server runs nightly at two in the morning.",
                                                    "when do we compile the software?",
                                                    "Maria's favourite fruit is the mango."])
    assert _cos(memory, paraphrase) > _cos(unrelated, paraphrase) + 0.1


def test_a_store_on_the_team_s_embedding_service(infinity, cli_env: dict, tmp_path: Path) -> None:  # noqa: ANN001
    """The whole path over the real service: a store made with it, searched by meaning, long memories
    embedded per passage through it, and the store refusing to open with another embedder."""
    from tests.infinity_server import MODEL_NAME

    run = own_store_cli(cli_env, tmp_path, HALOMEM_EMBEDDER=f"openai:{MODEL_NAME}", HALOMEM_EMBEDDER_URL=infinity.url)
    try:
        assert run("remember", "--ns", "acme", "The build server runs nightly at two in the morning.").returncode == 0
        assert run("remember", "--ns", "acme", LONG_MEMORY).returncode == 0
        assert run("remember", "--ns", "acme", "Maria's favourite fruit is the mango.").returncode == 0
        found = run("search", "--ns", "acme", "--json", "when do we compile the software?")
        assert found.returncode == 0, found.stderr
        assert "build server" in json.loads(found.stdout)["hits"][0]["content"]
        info = json.loads(run("init", "--json").stdout)
        assert (info["embedder"], info["dim"]) == (f"openai:{MODEL_NAME}", 384)
        refused = run("search", "--ns", "acme", "q", HALOMEM_EMBEDDER="static")
        assert refused.returncode == 8 and f"openai:{MODEL_NAME}/384-d" in refused.stderr
    finally:
        run("db", "stop")


def test_a_server_whose_embedding_service_fails_answers_503(cli_env: dict, tmp_path: Path) -> None:
    """A search or a write while the team's embedding service is down: 503 embedder-unavailable,
    one line, nothing written; the server itself stays up and answers again once the service does."""
    import httpx2

    from tests.serving import bearer, start_server

    with FaultyEmbeddings() as service:
        run = own_store_cli(cli_env, tmp_path, HALOMEM_EMBEDDER="openai:fault-model", HALOMEM_EMBEDDER_URL=service.url,
                            HALOMEM_EMBEDDER_RETRIES="0", HALOMEM_EMBEDDER_DIM="256")
        token = run("token", "create", "--ns", "acme", "--name", "agent", "--scope", "read,write", "--json")
        assert token.returncode == 0, token.stderr
        env = {**cli_env, "HALOMEM_HOME": str(tmp_path), "HALOMEM_EMBEDDER_URL": service.url,
               "HALOMEM_EMBEDDER_RETRIES": "0", "HALOMEM_EMBEDDER_DIM": "256"}
        env.pop("HALOMEM_DATABASE_URL", None)
        server = start_server(env, "--rate-limit", "0")
        try:
            with httpx2.Client(base_url=server.url, headers=bearer(json.loads(token.stdout)["token"])) as http:
                assert http.post("/v1/memories", json={"content": "The build server runs nightly."}).status_code == 201
                service.script = ["500"] * 2  # one request each: the search, the write
                for method, path, body in (("POST", "/v1/search", {"query": "build"}),
                                           ("POST", "/v1/memories", {"content": "Never stored."})):
                    answer = http.request(method, path, json=body)
                    assert answer.status_code == 503, answer.text
                    problem = answer.json()
                    assert problem["kind"] == "embedder-unavailable" and problem["exit_code"] == 16
                    assert "HTTP 500" in problem["detail"] and "\n" not in problem["detail"]
                found = http.post("/v1/search", json={"query": "build"})
                assert found.status_code == 200 and len(found.json()["hits"]) == 1  # "Never stored." was not
        finally:
            server.stop()
            run("db", "stop")


# --- an embedding service is untrusted input ------------------------------------------------------------

def _one_bad_answer(mode: str, key: str, error: type) -> str:
    """The message of the ``error`` one ``mode`` answer raises (the key in the environment); the
    next, good answer is taken."""
    with pytest.MonkeyPatch.context() as patch, FaultyEmbeddings() as server:
        patch.setenv("TEAM_EMBED_KEY", key)
        embedder = _remote(server, dim=256, retries=0, api_key_env="TEAM_EMBED_KEY")
        server.script = [mode]
        with pytest.raises(error) as caught:
            embedder.embed(["the build server runs nightly"])
        assert embedder.embed(["fine again"])[0]
        return str(caught.value)


@pytest.mark.parametrize("mode", [m for m in FaultyEmbeddings.MALFORMED if not m.startswith("echo")])
def test_a_malformed_answer_is_embedder_unavailable_and_never_reaches_sql(mode: str) -> None:
    message = _one_bad_answer(mode, "sk-leak-canary-123", EmbedderUnavailableError)
    assert "\n" not in message and "sk-leak-canary-123" not in message
    assert "nothing was stored" in message or "not a list of embeddings" in message


@pytest.mark.parametrize("mode", ["echo401", "echo400"])
def test_an_error_body_echoing_the_key_is_never_copied(mode: str) -> None:
    message = _one_bad_answer(mode, "sk-leak-canary-456", ConfigError)
    assert f"HTTP {mode[4:]}" in message
    assert "sk-leak-canary-456" not in message and "bad request" not in message


def test_malformed_answers_through_the_server_and_the_cli(cli_env: dict, tmp_path: Path) -> None:
    """Every malformed answer: 503 embedder-unavailable (never 500 or driver-error) for a search and
    a write, nothing stored, the key in no answer, no log line and no stored row; the CLI exits 16."""
    import httpx2

    from tests.serving import bearer, start_server

    key = "sk-leak-canary-789"
    with FaultyEmbeddings() as service:
        settings = dict(HALOMEM_EMBEDDER="openai:fault-model", HALOMEM_EMBEDDER_URL=service.url,
                        HALOMEM_EMBEDDER_RETRIES="0", HALOMEM_EMBEDDER_DIM="256",
                        HALOMEM_EMBEDDER_API_KEY_ENV="TEAM_EMBED_KEY", TEAM_EMBED_KEY=key)
        run = own_store_cli(cli_env, tmp_path, **settings)
        token = run("token", "create", "--ns", "acme", "--name", "agent", "--scope", "read,write", "--json")
        assert token.returncode == 0, token.stderr
        env = {**cli_env, "HALOMEM_HOME": str(tmp_path), **settings}
        env.pop("HALOMEM_DATABASE_URL", None)
        server = start_server(env, "--rate-limit", "0")
        try:
            with httpx2.Client(base_url=server.url, headers=bearer(json.loads(token.stdout)["token"])) as http:
                assert http.post("/v1/memories", json={"content": "The build server runs nightly."}).status_code == 201
                for mode in FaultyEmbeddings.MALFORMED:
                    for method, path, body in (("POST", "/v1/search", {"query": "build"}),
                                               ("POST", "/v1/memories", {"content": f"Never stored {mode}."})):
                        service.script = [mode]
                        answer = http.request(method, path, json=body)
                        # a refused key or model is the server's configuration (exit 8), not the caller's fault
                        kind, status = (("configuration-error", 500) if mode.startswith("echo")
                                        else ("embedder-unavailable", 503))
                        assert (answer.status_code, answer.json()["kind"]) == (status, kind), (mode, path, answer.text)
                        assert answer.headers["content-type"].startswith("application/problem+json")
                        assert key not in answer.text and "bad request" not in answer.text, (mode, answer.text)
                listed = http.get("/v1/memories").json()
                assert [m["content"] for m in listed["memories"]] == ["The build server runs nightly."]
            service.script = ["nan"]
            done = run("remember", "--ns", "acme", "Never stored either.")
            assert done.returncode == 16 and key not in done.stderr, done.stderr
            assert len(done.stderr.strip().splitlines()) == 1
            dump = run("audit", "tail", "-n", "50", "--json")
            assert key not in dump.stdout and key not in server.log()
        finally:
            server.stop()
            run("db", "stop")
