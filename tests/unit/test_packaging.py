"""The wheel serve.py builds for the page's worker ships the retriever's data files."""

import io
import zipfile

import serve
from py_agent.retrieval.embeddings import TABLE


def test_the_worker_wheel_ships_the_word_vector_table():
    name, data = serve.build_wheel_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as wheel:
        shipped = wheel.read("py_agent/retrieval/data/glove50.bin")
        record = wheel.read(next(n for n in wheel.namelist() if n.endswith("/RECORD"))).decode()
    assert shipped == TABLE.read_bytes()
    assert "py_agent/retrieval/data/glove50.bin," in record
