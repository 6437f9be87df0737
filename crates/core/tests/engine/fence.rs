//! Epoch fences between two writers of one table (two databases on the
//! same folder or bucket, as two servers): once the newer writer's claim is
//! committed, every kind of commit of the older one is refused with
//! `Fenced` and changes nothing; a claim of an epoch already claimed is
//! refused too. Writers that never claimed are not fenced.

use memwal_core::table::compact::CompactOptions;
use memwal_core::{AddMode, Error};

use crate::support::{checked, dump, open_db, people};

const KEY: &str = "test.epoch";

#[test]
fn a_newer_claim_fences_every_commit_of_the_older_writer() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().to_str().expect("path");
    let (db_a, db_b) = (open_db(path).expect("a"), open_db(path).expect("b"));
    let a = db_a
        .create_table_sync("t", people(&[(1, 10), (2, 20)]), Default::default())
        .expect("create");
    a.claim_epoch_sync(KEY, 1).expect("a claims 1");
    a.add_sync(people(&[(3, 30)]), AddMode::Append)
        .expect("a writes under its claim");
    let b = db_b.open_table_sync("t").expect("b opens");
    // An epoch already claimed cannot be claimed again.
    assert!(matches!(
        b.claim_epoch_sync(KEY, 1),
        Err(Error::Fenced { .. })
    ));
    b.claim_epoch_sync(KEY, 2).expect("b claims 2");
    let before = dump(&b);

    let mut p = memwal_core::MergeInsertParams::new(vec!["id".into()]);
    p.when_matched_update_all = true;
    p.when_not_matched_insert_all = true;
    let refused: Vec<(&str, memwal_core::Result<()>)> = vec![
        (
            "add",
            a.add_sync(people(&[(4, 40)]), AddMode::Append).map(|_| ()),
        ),
        (
            "merge",
            a.merge_insert_sync(&checked(&p), people(&[(1, 99)]))
                .map(|_| ()),
        ),
        ("delete", a.delete_sync("id > 0").map(|_| ())),
        (
            "update",
            a.update_sync(None, &[("age".into(), "0".into())])
                .map(|_| ()),
        ),
        (
            "overwrite",
            a.add_sync(people(&[(9, 9)]), AddMode::Overwrite)
                .map(|_| ()),
        ),
        (
            "compact",
            a.compact_sync(&CompactOptions::default()).map(|_| ()),
        ),
        ("restore", a.restore_sync(Some(1)).map(|_| ())),
        ("claim", a.claim_epoch_sync(KEY, 2).map(|_| ())),
    ];
    for (what, r) in refused {
        match r {
            Err(Error::Fenced { message, .. }) => {
                assert!(
                    message.contains("taken the table over"),
                    "{what}: {message}"
                )
            }
            other => panic!("{what} by the older writer: {other:?}"),
        }
    }
    assert_eq!(dump(&b), before, "a refused commit changed nothing");
    // The newer writer goes on; so does a handle that never claimed.
    b.add_sync(people(&[(5, 50)]), AddMode::Append)
        .expect("b writes");
    let c = open_db(path).expect("c").open_table_sync("t").expect("c");
    c.delete_sync("id = 5")
        .expect("an unclaimed writer is not fenced");
    assert_eq!(dump(&b), before);
}
