"""Workload I for tantivy (PyPI `tantivy`, pinned by bench.mjs): the same corpus and queries as the
other engines (written by fts.mjs), an index with positions and the `en_stem` tokenizer, top-10
queries run one at a time, each answer's ids read from the stored documents (as the other engines
return the id column). Prints one JSON line: build_s, build_docs_per_s and p50 / p99 / q/s per
query set. Usage: python tantivy_bench.py DOCS.txt QUERIES.json INDEX_DIR
"""
import json
import os
import sys
import time

import tantivy


def build(docs_file, index_dir):
    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("id", stored=True, indexed=False)
    sb.add_text_field("text", stored=False, tokenizer_name="en_stem", index_option="position")
    os.makedirs(index_dir, exist_ok=True)
    index = tantivy.Index(sb.build(), path=index_dir)
    with open(docs_file) as f:
        docs = f.read().split("\n")[:-1]
    t0 = time.perf_counter()
    writer = index.writer(heap_size=512_000_000)
    for i, text in enumerate(docs):
        writer.add_document(tantivy.Document(id=i, text=text))
    writer.commit()
    writer.wait_merging_threads()
    secs = time.perf_counter() - t0
    index.reload()
    return index, len(docs), secs


def query_text(kind, q):
    if kind == "and3":
        return " ".join("+" + w for w in q.split())
    if kind == "phrase":
        return '"%s"' % q
    return q


def run(index, queries):
    searcher = index.searcher()
    out = {}
    for kind, texts in queries.items():
        def one(q):
            query = index.parse_query(query_text(kind, q), ["text"])
            hits = searcher.search(query, 10).hits
            return [searcher.doc(addr)["id"][0] for _, addr in hits]
        for q in texts[:10]:
            one(q)
        lat = []
        answered = 0
        t0 = time.perf_counter()
        for q in texts:
            s = time.perf_counter()
            answered += 1 if one(q) else 0
            lat.append((time.perf_counter() - s) * 1000)
        secs = time.perf_counter() - t0
        lat.sort()
        pick = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
        out[kind] = {"p50_ms": pick(0.5), "p99_ms": pick(0.99), "qps": len(texts) / secs,
                     "answered": answered / len(texts)}
    return out


def main():
    docs_file, query_file, index_dir = sys.argv[1:4]
    index, n, secs = build(docs_file, index_dir)
    with open(query_file) as f:
        queries = json.load(f)
    result = {"build_s": secs, "build_docs_per_s": n / secs, "version": tantivy.__version__}
    result.update(run(index, queries))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
