//! What a local commit must sync, and syncing several files at once.
//!
//! A commit's files must be durable, with their names, before the manifest
//! that names them is. POSIX asks for an fsync of each file and of each
//! folder that gained an entry. On ext4 (with or without a journal), ext3
//! and XFS an fsync or fdatasync of a newly created file also makes its
//! folder entry durable: with a journal, committing the file's transaction
//! commits every earlier one, its creation included; without one, ext4
//! syncs the parents of a new entry itself (`ext4_sync_parent`). There the
//! folder syncs are redundant and [`file_sync_keeps_entry`] says so; on any
//! other file system (or when the mount cannot be read) folders are synced.
//! [`sync_files`] fdatasyncs a commit's files on threads of their own, so
//! the disk sees one wait instead of one per file.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// File systems whose fsync of a new file makes its folder entry durable.
const ENTRY_WITH_FILE: [&str; 3] = ["ext4", "ext3", "xfs"];

/// Whether an fsync of a file created under `dir` also makes its folder
/// entry durable (see the module's doc), read from `/proc/self/mountinfo`.
pub fn file_sync_keeps_entry(dir: &Path) -> bool {
    let Ok(dir) = dir.canonicalize() else {
        return false;
    };
    let Ok(table) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    mount_type(&table, &dir).is_some_and(|t| ENTRY_WITH_FILE.contains(&t.as_str()))
}

/// The file system type of the mount holding `path` in a mountinfo table:
/// the one with the longest mount point that contains it (the last listed
/// wins a tie, as a later mount hides an earlier one).
fn mount_type(table: &str, path: &Path) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in table.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        let (Some(point), Some(fs_type)) = (fields.get(4), fields.get(sep + 1)) else {
            continue;
        };
        let point = PathBuf::from(unescape(point));
        if !path.starts_with(&point) {
            continue;
        }
        let depth = point.components().count();
        if best.as_ref().is_none_or(|(d, _)| depth >= *d) {
            best = Some((depth, (*fs_type).to_string()));
        }
    }
    best.map(|(_, t)| t)
}

/// A mountinfo field with its octal escapes (`\040` for a space) decoded.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            std::str::from_utf8(d)
                .ok()
                .and_then(|d| u8::from_str_radix(d, 8).ok())
        });
        match (bytes[i], octal) {
            (b'\\', Some(b)) => {
                out.push(b);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// fdatasyncs `paths`, each on a thread of its own beyond the first, and
/// returns the first failure (naming its file through `shown`).
pub fn sync_files(paths: &[PathBuf], shown: &(dyn Fn(&Path) -> String + Sync)) -> Result<()> {
    let sync = |p: &PathBuf| -> Result<()> {
        let f = File::open(p).map_err(|e| Error::io(shown(p), e))?;
        f.sync_data().map_err(|e| Error::io(shown(p), e))
    };
    let Some((first, rest)) = paths.split_first() else {
        return Ok(());
    };
    std::thread::scope(|s| {
        let others: Vec<_> = rest.iter().map(|p| s.spawn(move || sync(p))).collect();
        let mut out = sync(first);
        for h in others {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(Error::internal("a file sync thread panicked")));
            out = out.and(r);
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
28 27 0:25 / /mnt/my\\040disk rw - xfs /dev/vdb rw
29 27 0:26 / /mnt/my\\040disk/tmp rw - tmpfs tmpfs rw
30 27 0:27 / /srv rw - btrfs /dev/vdc rw
31 27 0:28 / /srv rw - ext4 /dev/vdd rw
";

    #[test]
    fn the_deepest_mount_holding_a_path_names_its_type() {
        let t = |p: &str| mount_type(TABLE, Path::new(p));
        assert_eq!(t("/home/x").as_deref(), Some("ext4"));
        assert_eq!(t("/mnt/my disk/db").as_deref(), Some("xfs"));
        assert_eq!(t("/mnt/my disk/tmp/db").as_deref(), Some("tmpfs"));
        assert_eq!(t("/mnt/my diskette").as_deref(), Some("ext4"));
        assert_eq!(
            t("/srv/db").as_deref(),
            Some("ext4"),
            "the later mount hides the earlier"
        );
        assert_eq!(mount_type("garbage\n\n1 2", Path::new("/")), None);
    }

    #[test]
    fn files_are_synced_together_and_a_missing_one_is_named() {
        let dir = tempfile::tempdir().expect("tmp");
        let paths: Vec<PathBuf> = (0..3).map(|i| dir.path().join(format!("f{i}"))).collect();
        for p in &paths {
            std::fs::write(p, b"x").expect("write");
        }
        let shown = |p: &Path| p.display().to_string();
        sync_files(&paths, &shown).expect("sync");
        sync_files(&[], &shown).expect("nothing to sync");
        let mut with_missing = paths.clone();
        with_missing.push(dir.path().join("gone"));
        let e = sync_files(&with_missing, &shown).expect_err("missing");
        assert!(e.to_string().contains("gone"), "{e}");
    }
}
