"""The official Python client (lancedb 0.40) against memwal-server.

Run by __test__/official-python.test.ts with the server's URL and a JSON file
of rows; prints one JSON object of answers that the test compares with our
own local search of the same rows. Any failure is an exception (non-zero exit).
"""
import json
import sys

import lancedb
import pyarrow as pa


def rows_of(t):
    d = t.to_pydict()
    n = t.num_rows
    qi = d.get("query_index", [-1] * n)
    return [[int(d["id"][i]), float(d["_distance"][i]), int(qi[i])] for i in range(n)]


def main():
    url, rows_file = sys.argv[1], sys.argv[2]
    with open(rows_file) as f:
        data = json.load(f)
    dim = len(data[0]["vector"])
    schema = pa.schema([
        pa.field("id", pa.int64()),
        pa.field("kind", pa.string()),
        pa.field("vector", pa.list_(pa.float32(), dim)),
    ])
    db = lancedb.connect("db://test", api_key="k", region="us-east-1", host_override=url)
    tbl = db.create_table("py", pa.Table.from_pylist(data, schema=schema))
    q = data[5]["vector"]
    out = {"version": lancedb.__version__, "count": tbl.count_rows()}
    for dt in ["l2", "cosine", "dot"]:
        out[dt] = rows_of(tbl.search(q).distance_type(dt).limit(8).to_arrow())
    out["where"] = rows_of(tbl.search(q).where("kind = 'b'").limit(5).to_arrow())
    out["postfilter"] = rows_of(
        tbl.search(q).where("kind = 'b'", prefilter=False).limit(9).to_arrow())
    t = tbl.search(q).with_row_id(True).select(["id"]).limit(3).to_arrow()
    out["row_id_columns"] = t.column_names
    out["multi"] = rows_of(tbl.search([data[1]["vector"], data[2]["vector"]]).limit(3).to_arrow())
    fresh = {"id": 500, "kind": "a", "vector": [9.0] * dim}
    (tbl.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
        .execute(pa.Table.from_pylist([fresh], schema=schema)))
    out["fresh"] = rows_of(tbl.search(fresh["vector"]).limit(1).to_arrow())
    out["count_after"] = tbl.count_rows()
    try:
        tbl.search([1.0, 2.0, 3.0]).to_arrow()
        out["bad_dimension"] = None
    except Exception as e:  # the error text must name the dimension
        out["bad_dimension"] = str(e)
    # list_tables() pages through GET /v1/namespace/$/table/list.
    db.create_table("py2", pa.Table.from_pylist(data[:1], schema=schema))
    first = db.list_tables(limit=1)
    rest = db.list_tables(page_token=first.page_token, limit=10)
    out["list_tables"] = [list(db.list_tables().tables), list(first.tables), list(rest.tables), rest.page_token]
    db.drop_table("py2")
    # Queries: SQL projections, struct fields, order_by, take, plans; tags; the LSM calls.
    from lancedb.query import ColumnOrdering

    qt = db.create_table("pyq", pa.table({
        "id": [1, 2, 3],
        "v": [3, 1, 2],
        "st": pa.array([{"a": 1}, {"a": 2}, {"a": 2}], pa.struct([("a", pa.int64())])),
    }))
    proj = qt.search().where("st.a = 2").select({"twice": "id * 2"}).to_list()
    ordered = qt.search().order_by([ColumnOrdering(column_name="v", ascending=False)]).select(["id"]).to_list()
    with_ids = qt.search().with_row_id(True).to_list()
    out["queries"] = [
        sorted(r["twice"] for r in proj),
        [r["id"] for r in ordered],
        sorted(r["id"] for r in qt.take_offsets([0, 2]).to_list()),
        sorted(r["id"] for r in qt.take_row_ids([with_ids[1]["_rowid"]]).to_list()),
        "filter: id > 1" in qt.search().where("id > 1").explain_plan(verbose=True),
    ]
    qt.tags.create("first", 1)
    out["tags"] = [qt.tags.get_version("first"), sorted(qt.tags.list().keys())]
    qt.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().use_lsm(True).execute(
        pa.table({"id": [4], "v": [4], "st": pa.array([{"a": 4}], pa.struct([("a", pa.int64())]))})
    )
    stats = qt.get_lsm_stats()
    qt.flush_lsm()
    out["lsm"] = [stats is not None, qt.count_rows()]
    db.drop_table("pyq")
    # Namespaces: create, list, describe, a table inside, its listing, drop with the table.
    # A server whose tables are on an object store refuses them: the refusal is the answer then.
    try:
        db.create_namespace(["pyns"], properties={"owner": "py"})
    except Exception as e:  # noqa: BLE001 - the caller checks the text
        out["namespaces"] = f"refused: {e}"
    else:
        db.create_table("inner", [{"id": 1}, {"id": 2}], namespace_path=["pyns"])
        out["namespaces"] = [
            list(db.list_namespaces().namespaces),
            dict(db.describe_namespace(["pyns"]).properties or {}),
            list(db.list_tables(namespace_path=["pyns"]).tables),
            db.open_table("inner", namespace_path=["pyns"]).count_rows(),
        ]
        db.drop_namespace(["pyns"], behavior="cascade")
        out["namespaces_after_drop"] = list(db.list_namespaces().namespaces)
    # Indexes: create (IVF_PQ, IVF_FLAT, IVF_HNSW_SQ, IVF_RQ), list, stats, search through them, wait, drop.
    from datetime import timedelta
    from lancedb.index import Bitmap, BTree, HnswSq, IvfFlat, IvfPq, IvfRq, LabelList
    tbl.create_index("vector", config=IvfPq(num_partitions=4, num_sub_vectors=3, num_bits=4))
    out["indices"] = [[i.name, str(i.index_type), list(i.columns)] for i in tbl.list_indices()]
    st = tbl.index_stats("vector_idx")
    out["index_stats"] = [st.num_indexed_rows, st.num_unindexed_rows, str(st.index_type), st.distance_type]
    out["index_search"] = rows_of(tbl.search(q).nprobes(4).refine_factor(200).limit(8).to_arrow())
    tbl.create_index("vector", config=IvfFlat(num_partitions=4, distance_type="cosine"), name="vf")
    out["indices_after_replace"] = [[i.name, str(i.index_type)] for i in tbl.list_indices()]
    out["index_search_cosine"] = rows_of(tbl.search(q).nprobes(4).limit(8).to_arrow())
    tbl.wait_for_index(["vf"], timeout=timedelta(seconds=30))
    refused = []
    tbl.create_index("vector", config=HnswSq(m=8, ef_construction=64), name="vh")
    out["index_hnsw"] = [[i.name, str(i.index_type)] for i in tbl.list_indices()]
    out["index_search_hnsw"] = rows_of(tbl.search(q).ef(200).limit(8).to_arrow())
    tbl.create_index("vector", config=IvfRq(num_partitions=4, num_bits=2), name="vr")
    st = tbl.index_stats("vr")
    out["index_rq"] = [[i.name, str(i.index_type)] for i in tbl.list_indices()] + [[st.num_indexed_rows, str(st.index_type)]]
    out["index_search_rq"] = rows_of(tbl.search(q).nprobes(4).refine_factor(200).limit(8).to_arrow())
    # A BTREE on a scalar column (the deprecated create_scalar_index sends the same), then filters through it.
    tbl.create_scalar_index("kind")
    tbl.create_index("id", config=BTree(), name="id_bt")
    out["btree"] = sorted([i.name, str(i.index_type)] for i in tbl.list_indices())
    out["btree_stats"] = [tbl.index_stats("id_bt").num_indexed_rows, str(tbl.index_stats("id_bt").index_type)]
    out["btree_filters"] = [
        tbl.count_rows("id < 10"),
        tbl.count_rows("kind = 'b'"),
        sorted(tbl.search().where("id IN (3, 5, 119, 7000)").select(["id"]).to_arrow().column("id").to_pylist()),
        sorted(tbl.search().where("kind = 'a' AND id BETWEEN 10 AND 20").select(["id"]).to_arrow().column("id").to_pylist()),
    ]
    tbl.drop_index("id_bt")
    tbl.drop_index("kind_idx")
    # BITMAP: built, listed as the client spells it, and filters through it answer as ours do.
    tbl.create_index("kind", config=Bitmap(), name="kind_bm")
    out["bitmap"] = sorted([i.name, str(i.index_type)] for i in tbl.list_indices() if i.name == "kind_bm")
    out["bitmap_filters"] = [tbl.count_rows("kind = 'b'"), tbl.count_rows("kind IN ('a', 'c') AND id < 50")]
    tbl.drop_index("kind_bm")
    for column, cfg in [("id", LabelList())]:
        try:
            tbl.create_index(column, config=cfg)
            refused.append(None)
        except Exception as e:  # the error must name what is not supported
            refused.append(str(e))
    out["index_refused"] = refused
    tbl.drop_index("vr")
    # stats() and restore(): the counts as the client reads them; a restore of the first version.
    st = tbl.stats()
    out["stats"] = [st["num_rows"], st["num_indices"], st["fragment_stats"]["num_fragments"], st["total_bytes"] > 0]
    first_version = tbl.list_versions()[0]["version"]
    tbl.restore(first_version)
    out["restored"] = [tbl.count_rows(), tbl.count_rows("id = 500")]
    out["indices_after_drop"] = list(tbl.list_indices())
    # Schema evolution and rename: add (SQL), alter (rename, type), drop; the table under its new name.
    tbl.add_columns({"twice": "CAST(id * 2 AS BIGINT)"})
    tbl.alter_columns({"path": "twice", "rename": "double", "data_type": pa.int32()})
    tbl.drop_columns(["double"])
    tbl.add_columns({"plus": "id + 1"})
    db.rename_table("py", "py2")
    moved = db.open_table("py2")
    out["evolved"] = [moved.schema.names, str(moved.schema.field("plus").type), moved.count_rows("plus = 11")]
    db.drop_table("py2")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
