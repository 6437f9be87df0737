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
/// entry durable (see the module's doc): the type of the file system whose
/// device holds `dir`, read from `/proc/self/mountinfo`.
pub fn file_sync_keeps_entry(dir: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(dir) else {
        return false;
    };
    let Ok(table) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let (major, minor) = dev_numbers(std::os::unix::fs::MetadataExt::dev(&meta));
    mount_type(&table, major, minor).is_some_and(|t| ENTRY_WITH_FILE.contains(&t.as_str()))
}

/// The major and minor numbers of a Linux `st_dev` (glibc's encoding).
pub fn dev_numbers(dev: u64) -> (u64, u64) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & 0xffff_f000);
    let minor = (dev & 0xff) | ((dev >> 12) & 0xffff_ff00);
    (major, minor)
}

/// The file system type mounted from device `major:minor` in a mountinfo
/// table (every mount of one device is the same file system; a device no
/// line names, such as a btrfs subvolume's, has none).
fn mount_type(table: &str, major: u64, minor: u64) -> Option<String> {
    let want = format!("{major}:{minor}");
    table.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(' ').collect();
        let sep = fields.iter().position(|f| *f == "-")?;
        (fields.get(2) == Some(&want.as_str()))
            .then(|| fields.get(sep + 1).map(|t| (*t).to_string()))
            .flatten()
    })
}

/// Most files [`sync_files`] syncs at once.
const SYNC_THREADS: usize = 8;

/// fdatasyncs `paths`, up to [`SYNC_THREADS`] at once (each on a thread of
/// its own beyond the first; inline when a thread cannot be had), and
/// returns the first failure (naming its file through `shown`).
pub fn sync_files(paths: &[PathBuf], shown: &(dyn Fn(&Path) -> String + Sync)) -> Result<()> {
    let sync = |p: &PathBuf| -> Result<()> {
        let f = File::open(p).map_err(|e| Error::io(shown(p), e))?;
        f.sync_data().map_err(|e| Error::io(shown(p), e))
    };
    let mut out = Ok(());
    for group in paths.chunks(SYNC_THREADS) {
        let Some((first, rest)) = group.split_first() else {
            continue;
        };
        let r = std::thread::scope(|s| {
            let others: Vec<_> = rest
                .iter()
                .map(|p| {
                    std::thread::Builder::new()
                        .name("memwal-sync".into())
                        .spawn_scoped(s, move || sync(p))
                        .map_err(|_| p)
                })
                .collect();
            let mut r = sync(first);
            for h in others {
                let done = match h {
                    Ok(h) => h
                        .join()
                        .unwrap_or_else(|_| Err(Error::internal("a file sync thread panicked"))),
                    Err(p) => sync(p),
                };
                r = r.and(done);
            }
            r
        });
        out = out.and(r);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
28 27 254:16 / /mnt/my\\040disk rw - xfs /dev/vdb rw
29 27 0:26 / /mnt/my\\040disk/tmp rw - tmpfs tmpfs rw
30 27 254:0 /srv /srv rw - ext4 /dev/vda rw
";

    #[test]
    fn a_device_names_its_file_system_type() {
        assert_eq!(mount_type(TABLE, 254, 0).as_deref(), Some("ext4"));
        assert_eq!(mount_type(TABLE, 254, 16).as_deref(), Some("xfs"));
        assert_eq!(mount_type(TABLE, 0, 26).as_deref(), Some("tmpfs"));
        assert_eq!(mount_type(TABLE, 0, 99), None, "a device no line names");
        assert_eq!(mount_type("garbage\n\n1 2 3:4", 3, 4), None);
        // glibc's st_dev encoding: 254:0, and a large minor.
        assert_eq!(dev_numbers(0xfe00), (254, 0));
        let dev = 0x34 | (259 << 8) | (0x1200 << 12);
        assert_eq!(dev_numbers(dev), (259, 0x1234));
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
