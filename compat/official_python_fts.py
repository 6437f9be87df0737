"""Full-text and hybrid search through the official Python client (lancedb 0.40), twice: against
memwal-server and against the client's own embedded engine (`lancedb.connect(tmpdir)`), on the same
rows and the same FTS index settings.

Run by __test__/official-python.test.ts with the server's URL and a JSON file of rows
(`{id, text, vector}`) and queries; prints one JSON object `{version, cases: {name: {served,
embedded}}}` (each answer a list of `[id, score]`, best first) that the test compares. Every table
is fully indexed when a case runs, except the `fast_*` cases (rows added after the build, which
`fast_search` leaves out on both). Any failure is an exception (non-zero exit).
Usage: python official_python_fts.py URL CASE.json
"""
import json
import sys
import tempfile

import lancedb
import pyarrow as pa
from lancedb.query import BooleanQuery, FullTextOperator, MatchQuery, Occur, PhraseQuery


def arrow(rows, dim):
    schema = pa.schema([
        pa.field("id", pa.int64()),
        pa.field("text", pa.string()),
        pa.field("vector", pa.list_(pa.float32(), dim)),
    ])
    return pa.Table.from_pylist(rows, schema=schema)


def pairs(t, score):
    d = t.to_pydict()
    return [[int(i), float(s)] for i, s in zip(d["id"], d[score])]


def fts_cases(t, q):
    """name -> answer of the full-text cases, on a fully indexed table."""
    out = {}
    run = lambda b, n=10: pairs(b.select(["id"]).limit(n).to_arrow(), "_score")
    out["match"] = run(t.search(q["terms"], query_type="fts"))
    out["match_and"] = run(t.search(MatchQuery(q["and"], "text", operator=FullTextOperator.AND),
                                    query_type="fts"), 20)
    out["match_fuzzy"] = run(t.search(MatchQuery(q["fuzzy"], "text", fuzziness=1), query_type="fts"))
    out["phrase"] = run(t.search(PhraseQuery(q["phrase"], "text"), query_type="fts"))
    out["phrase_slop"] = run(t.search(PhraseQuery(q["phrase"], "text", slop=2), query_type="fts"))
    out["quoted"] = run(t.search('"%s"' % q["phrase"], query_type="fts"))
    # The full-text half of hybrid_phrase (its ties, if any, would make the fused ranks arbitrary).
    out["phrase_of_hybrid"] = run(t.search(PhraseQuery(q["hybrid_phrase"], "text"), query_type="fts"))
    out["boolean"] = run(t.search(BooleanQuery([
        (Occur.MUST, MatchQuery(q["must"], "text")),
        (Occur.SHOULD, MatchQuery(q["should"], "text")),
        (Occur.MUST_NOT, MatchQuery(q["must_not"], "text")),
    ]), query_type="fts"), 20)
    out["where"] = run(t.search(q["terms"], query_type="fts").where("id % 3 = 0"))
    out["postfilter"] = run(t.search(q["terms"], query_type="fts").where("id % 3 = 0", prefilter=False))
    out["offset"] = pairs(t.search(q["terms"], query_type="fts").select(["id"]).limit(5).offset(3)
                          .to_arrow(), "_score")
    return out


def hybrid_cases(t, q):
    """name -> answer of the hybrid cases (default reranker: RRF, k = 60)."""
    out = {}
    h = lambda: t.search(query_type="hybrid").vector(q["vector"]).text(q["terms"])
    score = "_relevance_score"
    out["hybrid"] = pairs(h().select(["id"]).limit(10).to_arrow(), score)
    out["hybrid_where"] = pairs(h().where("id % 2 = 0").select(["id"]).limit(8).to_arrow(), score)
    out["hybrid_phrase"] = pairs(t.search(query_type="hybrid").vector(q["vector"])
                                 .text(PhraseQuery(q["hybrid_phrase"], "text")).select(["id"])
                                 .limit(10).to_arrow(), score)
    return out


def fast_cases(t, q):
    """After rows are added that the index does not cover: fast_search answers the indexed alone."""
    run = lambda b: pairs(b.select(["id"]).limit(10).to_arrow(), "_score")
    return {
        "fast_match": run(t.search(q["terms"], query_type="fts").fast_search()),
        "fast_where": run(t.search(q["terms"], query_type="fts").where("id % 2 = 1").fast_search()),
    }


def main():
    url, case_file = sys.argv[1], sys.argv[2]
    with open(case_file) as f:
        case = json.load(f)
    dim = len(case["rows"][0]["vector"])
    q = case["queries"]
    served = lancedb.connect("db://test", api_key="k", region="us-east-1", host_override=url)
    embedded = lancedb.connect(tempfile.mkdtemp())
    answers = {}
    for name, db in (("served", served), ("embedded", embedded)):
        t = db.create_table("pyfts", arrow(case["rows"], dim))
        if name == "served":
            t.create_fts_index("text", with_position=True)
        else:
            t.create_fts_index("text", use_tantivy=False, with_position=True)
        got = fts_cases(t, q)
        got.update(hybrid_cases(t, q))
        t.add(arrow(case["added"], dim))
        got.update(fast_cases(t, q))
        answers[name] = got
    cases = {k: {"served": answers["served"][k], "embedded": answers["embedded"][k]}
             for k in answers["embedded"]}
    print(json.dumps({"version": lancedb.__version__, "cases": cases}))


if __name__ == "__main__":
    main()
