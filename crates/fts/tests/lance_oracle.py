"""Oracle for memwal-fts: LanceDB's own embedded engine (the official Python client).

Reads the case file the Rust test `lance_oracle.rs` writes (rows, index parameters, rows added
after the index build, deleted ids, queries in the wire JSON with our answers), builds the same
table and FTS indexes with lancedb, runs every query and compares ids and scores (1e-3 relative)
with ours. Ties may come in any order; the scores must not. With `"compare_scores": false` only the
matching rows are compared: LanceDB scores rows added after the build with statistics over the
index plus those rows, and the indexed rows with the index's alone, deleted rows counted in both
(measured on lancedb 0.40); we use one set of live statistics for all. LanceDB also misses added
rows on fuzzy matches; there ours must be a superset. Exit 1 with the differences.
Usage: python lance_oracle.py CASES.json
"""

import json
import sys
import tempfile

import lancedb
import pyarrow as pa
from lancedb.query import (
    BooleanQuery,
    BoostQuery,
    FullTextOperator,
    MatchQuery,
    MultiMatchQuery,
    Occur,
    PhraseQuery,
)


def to_query(q):
    (kind, body), = q.items()
    if kind == "match":
        return MatchQuery(
            body["terms"],
            body["column"],
            boost=body.get("boost", 1.0),
            fuzziness=body.get("fuzziness", 0),
            max_expansions=body.get("max_expansions", 50),
            operator=FullTextOperator(body.get("operator", "Or").upper()),
            prefix_length=body.get("prefix_length", 0),
        )
    if kind == "phrase":
        return PhraseQuery(body["terms"], body["column"], slop=body.get("slop", 0))
    if kind == "boost":
        return BoostQuery(to_query(body["positive"]), to_query(body["negative"]),
                          negative_boost=body.get("negative_boost", 0.5))
    if kind == "multi_match":
        return MultiMatchQuery(body["query"], body["columns"], boosts=body.get("boost"))
    if kind == "boolean":
        clauses = [(Occur.SHOULD, to_query(x)) for x in body.get("should", [])]
        clauses += [(Occur.MUST, to_query(x)) for x in body.get("must", [])]
        clauses += [(Occur.MUST_NOT, to_query(x)) for x in body.get("must_not", [])]
        return BooleanQuery(clauses)
    raise ValueError(kind)


def table(rows):
    return pa.table({
        "id": pa.array([r["id"] for r in rows], pa.uint64()),
        "a": pa.array([r["a"] for r in rows], pa.string()),
        "b": pa.array([r["b"] for r in rows], pa.string()),
    })


def main():
    cases = json.load(open(sys.argv[1]))
    db = lancedb.connect(tempfile.mkdtemp())
    t = db.create_table("t", table(cases["rows"]))
    for col in ("a", "b"):
        t.create_fts_index(col, use_tantivy=False, **cases["params"])
    if cases["added"]:
        t.add(table(cases["added"]))
    if cases["deleted"]:
        t.delete("id IN (%s)" % ",".join(str(i) for i in cases["deleted"]))
    failures = []
    for case in cases["queries"]:
        got = (t.search(to_query(case["query"]), query_type="fts")
               .select(["id"]).limit(100000).to_arrow().to_pylist())
        theirs = {r["id"]: r["_score"] for r in got}
        ours = {i: s for i, s in case["ours"]}
        bad = sorted(set(theirs) ^ set(ours))
        if not cases.get("compare_scores", True):
            # LanceDB's flat search over rows added after the build does no fuzzy matching: there
            # we must find at least what it finds (and do find more).
            first_added = min((r["id"] for r in cases["added"]), default=None)
            bad = [i for i in bad if first_added is None or i < first_added or i in theirs]
        for i in (set(theirs) & set(ours)) if cases.get("compare_scores", True) else ():
            if abs(theirs[i] - ours[i]) > 1e-3 * max(abs(theirs[i]), 1e-6):
                bad.append(i)
        if bad:
            failures.append({"query": case["query"], "rows": sorted(bad)[:10],
                             "ours": {i: ours.get(i) for i in sorted(bad)[:5]},
                             "lance": {i: theirs.get(i) for i in sorted(bad)[:5]}})
    for f in failures:
        print(json.dumps(f))
    print(f"{len(cases['queries']) - len(failures)} of {len(cases['queries'])} queries equal LanceDB's")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
